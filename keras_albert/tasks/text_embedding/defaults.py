"""Text embedding's defaults, written once: the model and the sentence-transformers files read
them from here (imports nothing)."""

# How token vectors become one vector: the mean over the real tokens (sentence-transformers'
# default `Pooling`); "cls" and "max" are the others it has.
POOLING = "mean"
POOLING_MODES = ("mean", "cls", "max")
# Unit-length embeddings (sentence-transformers' `Normalize` module): off, as its default.
NORMALIZE = False

# Fine-tuning. Each text is packed alone (`[CLS] text [SEP]`): STS-B's longest train text is
# 71 pieces of the 30k-clean vocabulary with both, so 128 cuts none of them.
SEQUENCE_LENGTH = 128
# In-batch negatives' softmax scale (sentence-transformers' `MultipleNegativesRankingLoss`).
MNRL_SCALE = 20.0
# What a score is divided by to lie in 0..1, the cosine loss's target: STS-B's scores are 0-5;
# a file of sentence pairs gives its own (`max_score`), else its scores are taken as 0..1.
STSB_MAX_SCORE = 5.0
MAX_SCORE = 1.0
# The recipe of scored pairs (cosine loss): sentence-transformers' STS-B example
# (training_stsbenchmark.py: batch 16, 4 epochs, 10% warmup), at BERT's usual peak rate 2e-5.
# Pairs without scores (in-batch negatives): one pass at batch 32, more negatives a step.
RECIPES = {
    "cosine": {"learning_rate": 2e-5, "batch_size": 16, "epochs": 4, "warmup_ratio": 0.1},
    "multiple_negatives_ranking": {
        "learning_rate": 2e-5,
        "batch_size": 32,
        "epochs": 1,
        "warmup_ratio": 0.1,
    },
}
