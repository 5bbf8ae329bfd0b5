"""Text embedding's defaults, written once: the model, the sentence-transformers files, the
fine-tuning options and the serving module read them from here (imports nothing)."""

# How token vectors become one vector: the mean over the real tokens (sentence-transformers'
# default `Pooling`); "cls" and "max" are the others it has.
POOLING = "mean"
POOLING_MODES = ("mean", "cls", "max")
# Unit-length embeddings (sentence-transformers' `Normalize` module): off, as its default.
NORMALIZE = False

# Fine-tuning on sentence pairs (sentence-transformers' defaults): MultipleNegativesRankingLoss
# multiplies the cosine similarities by 20 before the softmax over the batch.
SIMILARITY_SCALE = 20.0
# Sentence-transformers' training examples: 1 epoch at 2e-5, batch 16, 10% warmup.
RECIPE = {"learning_rate": 2e-5, "batch_size": 16, "epochs": 1, "warmup_ratio": 0.1}
SEQUENCE_LENGTH = 128
