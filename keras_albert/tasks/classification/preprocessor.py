"""`AlbertClassifierPreprocessor`: raw sentences (or sentence pairs) to a classifier's inputs."""

import keras

from keras_albert.text.preprocessing import TokenizerPreprocessor


@keras.saving.register_keras_serializable(package="keras_albert")
class AlbertClassifierPreprocessor(TokenizerPreprocessor):
    """Sentences, or pairs of sentences, to `token_ids`, `segment_ids` and `padding_mask`:
    `[CLS] A [SEP]` or `[CLS] A [SEP] B [SEP]`, truncated as the original ALBERT does (the
    longer segment first) and padded to `sequence_length`, with the same tokenizer and packer
    as the string-in SavedModel (`keras_albert.tasks.classification.serving`).

    Called as `preprocessor(x, y=None, sample_weight=None)`, where `x` is a `(batch,)` string
    tensor or a tuple of two (the pairs); labels and weights pass through. An `AlbertClassifier`
    that carries one (`preprocessor=`) takes such `x` in `fit`, `predict` and `evaluate`.

    Args:
        tokenizer: the `AlbertTokenizer` the model was trained with.
        sequence_length: the packed length.

    Example:
    >>> import tensorflow as tf
    >>> from keras_albert import AlbertClassifierPreprocessor, AlbertTokenizer
    >>> tokenizer = AlbertTokenizer("tests/data/30k-clean.model")
    >>> preprocessor = AlbertClassifierPreprocessor(tokenizer, sequence_length=8)
    >>> preprocessor(tf.constant(["a fine film"]))["token_ids"].numpy().tolist()
    [[2, 21, 1123, 171, 3, 0, 0, 0]]
    """

    MAX_SEGMENTS = 2
