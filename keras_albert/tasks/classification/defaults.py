"""GLUE's defaults, written once: the fine-tuning options and the driver read them from here
(imports nothing).

google-research/albert `run_glue.sh` (commit 557c37b): `run_task <task> <warmup> <lr>
<train_step> <save> <batch>`, with `--max_seq_length=512`.
"""

SEQUENCE_LENGTH = 512
RECIPES = {
    "SST-2": {"learning_rate": 1e-5, "batch_size": 32, "train_steps": 20935, "warmup_steps": 1256},
    "MNLI": {"learning_rate": 3e-5, "batch_size": 128, "train_steps": 10000, "warmup_steps": 1000},
    "CoLA": {"learning_rate": 1e-5, "batch_size": 16, "train_steps": 5336, "warmup_steps": 320},
    "QNLI": {"learning_rate": 1e-5, "batch_size": 32, "train_steps": 33112, "warmup_steps": 1986},
    "QQP": {"learning_rate": 5e-5, "batch_size": 128, "train_steps": 14000, "warmup_steps": 1000},
    "RTE": {"learning_rate": 3e-5, "batch_size": 32, "train_steps": 800, "warmup_steps": 200},
    "STS-B": {"learning_rate": 2e-5, "batch_size": 16, "train_steps": 3598, "warmup_steps": 214},
    "MRPC": {"learning_rate": 2e-5, "batch_size": 32, "train_steps": 800, "warmup_steps": 200},
}
# Not in run_glue.sh (the generic task, and any GLUE name without a line above): BERT's usual
# 3 epochs at 2e-5, batch 32, 10% warmup.
GENERIC_RECIPE = {"learning_rate": 2e-5, "batch_size": 32, "epochs": 3, "warmup_ratio": 0.1}
