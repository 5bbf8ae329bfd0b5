"""`AlbertTokenClassifierPreprocessor`: sentences of words (and their labels) to a token
classifier's inputs (and its labels per piece)."""

from __future__ import annotations

import keras

from keras_albert.lazy import require_tensorflow
from keras_albert.text.preprocessing import TokenizerPreprocessor


@keras.saving.register_keras_serializable(package="keras_albert")
class AlbertTokenClassifierPreprocessor(TokenizerPreprocessor):
    """Sentences of words to `token_ids`, `segment_ids` and `padding_mask`, and their labels
    per word to labels per piece, with the alignment of the task's data and of its SavedModel
    (`keras_albert.tasks.token_classification.features.encode_words`, `piece_labels`): each word
    tokenized on its own and `[CLS] pieces [SEP]` packed to `sequence_length`; a word's first
    piece carries its label, every other position -100 (`IGNORE_LABEL`, which the loss of
    `TokenClassificationTask.objective` skips). A word whose first piece falls past
    `sequence_length - 2` is cut, as in fine-tuning.

    Called as `preprocessor(x, y=None, sample_weight=None)` in `tf.data`:
    - `x`: the words, a ragged `(batch, None)` string tensor (`fit` and `predict` take a list
      of word lists); or a `(batch,)` string tensor of texts (a list of strings), split into
      words as the SavedModel splits them (`keras_albert.text.offsets.words_with_offsets`:
      the whitespace split for SentencePiece);
    - `y`: the label ids of the words, ragged `(batch, None)` (a list of lists of indices in
      the model's `labels`), one per word (another count is an error); `sample_weight` passes
      through.
    `predict` gives the logits of every piece, `(batch, sequence_length, num_classes)`; a word's
    are at its first piece, as the SavedModel reads them.

    Needs TensorFlow (the graph path only; on JAX or PyTorch with TensorFlow installed it runs
    in `tf.data`).

    Args:
        tokenizer: the `AlbertTokenizer` the model was trained with.
        sequence_length: the packed length.

    Example:
    >>> import tensorflow as tf
    >>> from keras_albert import AlbertTokenClassifierPreprocessor, AlbertTokenizer
    >>> tokenizer = AlbertTokenizer("tests/data/30k-clean.model")
    >>> preprocessor = AlbertTokenClassifierPreprocessor(tokenizer, sequence_length=8)
    >>> x, y = preprocessor(tf.ragged.constant([["Jane", "Austen"]]), tf.ragged.constant([[1, 2]]))
    >>> y.numpy().tolist()
    [[-100, 1, 2, -100, -100, -100, -100, -100]]
    """

    def call(self, x, y=None, sample_weight=None):
        tf = require_tensorflow(type(self).__name__)
        from keras_albert.tasks.token_classification.features import encode_words, piece_labels
        from keras_albert.text.offsets import words_with_offsets_graph

        if not isinstance(x, tf.RaggedTensor):
            x = tf.convert_to_tensor(x)
            if x.shape.rank != 1:
                raise ValueError(
                    "`x` must be a ragged (batch, None) string tensor of words, or a (batch,) "
                    f"string tensor of texts. Received: x of shape {x.shape}"
                )
            x = words_with_offsets_graph(self.tokenizer, x)["words"]
        inputs = encode_words(self.tokenizer, x, self.sequence_length)
        positions = inputs.pop("word_positions")  # (batch, None)
        if y is not None:
            if not isinstance(y, tf.RaggedTensor):
                y = tf.RaggedTensor.from_tensor(tf.convert_to_tensor(y))
            check = tf.debugging.assert_equal(
                y.row_lengths(),
                positions.row_lengths(),
                message="`y` must hold one label per word of `x`",
            )
            with tf.control_dependencies([check]):
                y = piece_labels(positions, y, self.sequence_length)
        return keras.utils.pack_x_y_sample_weight(inputs, y, sample_weight)
