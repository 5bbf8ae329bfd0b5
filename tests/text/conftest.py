"""Fixtures for the text tests.

The tokenizers are module-scoped, not session-scoped: a test that seeds TensorFlow
(`keras.utils.set_random_seed`, as the training drivers do) clears TensorFlow's kernel cache,
which drops a SentencePiece resource made before it; a session-wide tokenizer would then fail
in whichever module happens to run next (the order differs under pytest-xdist).
"""

import pytest

from tests.text.text_data import ALBERT_MODEL, HuggingFaceReference


@pytest.fixture(scope="module")
def albert_tokenizer():
    from keras_albert.text.tokenizer import AlbertTokenizer

    return AlbertTokenizer(ALBERT_MODEL)


@pytest.fixture(scope="module")
def albert_tokenizer_hf_quotes():
    """The tokenizer with Hugging Face's extra quote normalization, for parity with it."""
    from keras_albert.text.tokenizer import AlbertTokenizer

    return AlbertTokenizer(ALBERT_MODEL, normalize_quotes=True)


@pytest.fixture(scope="session")
def hf_reference():
    return HuggingFaceReference(ALBERT_MODEL)
