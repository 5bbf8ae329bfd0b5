"""SQuAD's defaults, written once: the fine-tuning options, the driver, the serving module and
the export tool all read them from here (imports nothing).

The original `run_squad_v1.py` / `run_squad_v2.py` flags and README recipe.
"""

# Packed window length (`--max_seq_length`).
SEQUENCE_LENGTH = 384
# Context tokens between the starts of successive windows (`--doc_stride`).
DOC_STRIDE = 128
# Question tokens kept (`--max_query_length`).
MAX_QUERY_LENGTH = 64
# Starts and ends considered per window when decoding (`--n_best_size`).
N_BEST_SIZE = 20
# The longest answer span, in tokens (`--max_answer_length`).
MAX_ANSWER_LENGTH = 30
# SQuAD v2.0: a question is answered "" when its null odds exceed this. One value for the
# evaluation, the choice of `best.keras` and the export: 0 is "null score above the best
# span's" (null span) or "answerability logit above 0" (answer class).
NULL_SCORE_THRESHOLD = 0.0
# The v2.0 answerability head: "null_span" (BERT / Hugging Face) or "answer_class" (the
# original `run_squad_v2.py`).
ANSWERABILITY = "null_span"
# The original README: learning rate 5e-5, batch 48, 2 epochs (counting questions), 10% warmup.
RECIPE = {"learning_rate": 5e-5, "batch_size": 48, "epochs": 2, "warmup_ratio": 0.1}
