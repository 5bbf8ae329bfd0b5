"""`AlbertTextEmbedderPreprocessor`: raw texts to a text embedder's inputs, one text a row."""

import keras

from keras_albert.text.preprocessing import TokenizerPreprocessor


@keras.saving.register_keras_serializable(package="keras_albert")
class AlbertTextEmbedderPreprocessor(TokenizerPreprocessor):
    """Texts to `token_ids`, `segment_ids` and `padding_mask`: `[CLS] text [SEP]`, truncated
    and padded to `sequence_length`, each text on its own (an embedder encodes the two texts of
    a pair separately, never as one sequence as a classifier does).

    Called as `preprocessor(x, y=None, sample_weight=None)`, where `x` is a `(batch,)` string
    tensor; labels and weights pass through. An `AlbertTextEmbedder` that carries one
    (`preprocessor=`, or `from_preset`) takes such `x` in `predict`.

    Args:
        tokenizer: the `AlbertTokenizer` the model was trained with.
        sequence_length: the packed length.

    Example:
    >>> import tensorflow as tf
    >>> from keras_albert import AlbertTextEmbedderPreprocessor, AlbertTokenizer
    >>> tokenizer = AlbertTokenizer("tests/data/30k-clean.model")
    >>> preprocessor = AlbertTextEmbedderPreprocessor(tokenizer, sequence_length=8)
    >>> preprocessor(tf.constant(["a fine film"]))["token_ids"].numpy().tolist()
    [[2, 21, 1123, 171, 3, 0, 0, 0]]
    """
