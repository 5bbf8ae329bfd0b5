"""The tiny architecture of the unit tests (vocabulary 64, hidden 16, 3 layers), in a module
that imports nothing: the backend tests' subprocesses read it without TensorFlow."""

TINY = dict(
    vocabulary_size=64,
    embedding_dim=8,
    hidden_dim=16,
    intermediate_dim=32,
    num_layers=3,
    num_heads=2,
    max_sequence_length=32,
)

# A tiny architecture over the 30,000-piece SentencePiece model of tests/data (the preprocessor
# tests tokenize real text with it).
TINY_30K = dict(
    vocabulary_size=30000,
    embedding_dim=16,
    hidden_dim=32,
    intermediate_dim=64,
    num_layers=2,
    num_heads=2,
    max_sequence_length=32,
)
