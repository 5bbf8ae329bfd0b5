"""Text embedding's defaults, written once: the model and the sentence-transformers files read
them from here (imports nothing)."""

# How token vectors become one vector: the mean over the real tokens (sentence-transformers'
# default `Pooling`); "cls" and "max" are the others it has.
POOLING = "mean"
POOLING_MODES = ("mean", "cls", "max")
# Unit-length embeddings (sentence-transformers' `Normalize` module): off, as its default.
NORMALIZE = False

