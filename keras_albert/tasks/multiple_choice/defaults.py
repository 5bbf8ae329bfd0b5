"""RACE's defaults, written once: the fine-tuning options, the driver, the serving module and
the export tool all read them from here (imports nothing).

The original `run_race.py` flags and README recipe.
"""

# Packed length of each (article, question + option) row (`--max_seq_length`).
SEQUENCE_LENGTH = 512
# Tokens of question + option kept, their last ones (`--max_qa_length`).
MAX_QA_LENGTH = 128
# Options per question in a served request (RACE's A-D).
NUM_CHOICES = 4
# The original README: learning rate 1e-5, batch 32, 12,000 steps, 1,000 warmup.
RECIPE = {"learning_rate": 1e-5, "batch_size": 32, "train_steps": 12000, "warmup_steps": 1000}
