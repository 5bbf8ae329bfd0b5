"""`AlbertQuestionAnswererPreprocessor`: (question, context) strings, and for training the
answer, to a question answerer's inputs and labels."""

import keras
import tensorflow as tf

from keras_albert.tasks.question_answering import defaults
from keras_albert.tasks.question_answering.windows import (
    answer_positions,
    offsets_sentencepiece,
    question_windows,
)
from keras_albert.text.preprocessing import TokenizerPreprocessor, named_columns
from keras_albert.validation import require_int

INPUTS = ("question", "context")
ANSWER = ("answer_start", "answer_text")


@keras.saving.register_keras_serializable(package="keras_albert")
class AlbertQuestionAnswererPreprocessor(TokenizerPreprocessor):
    """Questions and contexts to `token_ids`, `segment_ids` and `padding_mask`, one row per
    question: `[CLS] question [SEP] context [SEP]`, the question cut to `max_query_length`
    tokens and the context to what is left of `sequence_length`, padded to `sequence_length`.

    The row is the first window of the string-in SavedModel's
    (`keras_albert.tasks.question_answering.windows.question_windows`, the same graph ops):
    `predict` gives one row of logits per question, as Keras's `predict` must, so the context is
    truncated as keras-hub's packers truncate. The SavedModel answers from every window of a
    long context (`doc_stride` tokens apart) and decodes the best span; the fine-tuning driver
    trains on every window too. A context longer than one window is therefore read to its
    first window only here: an answer past it is labeled "no answer" ([CLS]), as the windows
    of `features.squad_features` that do not hold the answer are.

    Called as `preprocessor(x, y=None, sample_weight=None)`: `x` is a pair `(question,
    context)` of `(batch,)` string tensors, or a dict of them keyed `question` and `context`
    (the SavedModel's names). `y`, for `fit` and `evaluate`, is the answer as SQuAD gives it:
    a dict of `answer_start` (`(batch,)` ints, the answer's first character in its context, as
    Python `str` indices) and `answer_text` (`(batch,)` strings, the context's text there; ""
    for a question without an answer). The labels it returns are `start_positions`,
    `end_positions` (token positions, 0 = [CLS]) and `is_impossible` (1 where the row does not
    hold the whole answer), as `features.feature_arrays` names them; an `AlbertQuestionAnswerer`
    that carries the preprocessor maps them to its head's outputs
    (`AlbertQuestionAnswerer.training_targets`). Weights pass through.

    Args:
        tokenizer: the `AlbertTokenizer` the model was trained with (WordPiece, or
            SentencePiece with `normalize_quotes=False`: the graph follows its character
            offsets).
        sequence_length: the packed length.
        max_query_length: question tokens kept; default SQuAD's 64, or half of
            `sequence_length` when that is less.

    Example:
    >>> import tensorflow as tf
    >>> from keras_albert import AlbertQuestionAnswererPreprocessor, AlbertTokenizer
    >>> tokenizer = AlbertTokenizer("tests/data/30k-clean.model")
    >>> preprocessor = AlbertQuestionAnswererPreprocessor(tokenizer, sequence_length=10)
    >>> x = (tf.constant(["who?"]), tf.constant(["jane wrote it"]))
    >>> preprocessor(x)["token_ids"].numpy().tolist()
    [[2, 72, 60, 3, 3175, 738, 32, 3, 0, 0]]
    """

    def __init__(
        self,
        tokenizer=None,
        sequence_length=defaults.SEQUENCE_LENGTH,
        max_query_length=None,
        **kwargs,
    ):
        super().__init__(tokenizer, sequence_length, **kwargs)
        if max_query_length is None:
            max_query_length = min(defaults.MAX_QUERY_LENGTH, sequence_length // 2)
        require_int("max_query_length", max_query_length, minimum=1)
        if sequence_length < max_query_length + 4:
            raise ValueError(
                "`sequence_length` must leave room for [CLS], the question, two [SEP] and one "
                f"context token: at least max_query_length + 4 = {max_query_length + 4}. "
                f"Received: sequence_length={sequence_length}"
            )
        self.max_query_length = max_query_length

    def _set_tokenizer(self, tokenizer):
        super()._set_tokenizer(tokenizer)
        # A tokenizer whose offsets the graph cannot follow is refused here, not at `fit`.
        self._offsets = None if tokenizer is None else offsets_sentencepiece(tokenizer)

    def call(self, x, y=None, sample_weight=None):
        question, context = named_columns("x", x, INPUTS)
        windows = question_windows(
            self.tokenizer,
            self._offsets,
            tf.convert_to_tensor(question),
            tf.convert_to_tensor(context),
            sequence_length=self.sequence_length,
            doc_stride=self.sequence_length,  # one window: the stride is never taken
            max_query_length=self.max_query_length,
            max_windows=1,
            pad=True,
        )
        inputs = windows["inputs"]
        for value in inputs.values():
            value.set_shape([None, self.sequence_length])
        if y is not None:
            answer_start, answer_text = named_columns("y", y, ANSWER, pair=False)
            y = answer_positions(
                windows, tf.convert_to_tensor(answer_start), tf.convert_to_tensor(answer_text)
            )
        return keras.utils.pack_x_y_sample_weight(inputs, y, sample_weight)

    def serving_options(self) -> dict:
        """The string-in SavedModel's options that make its windows this preprocessor's
        (`keras_albert.export.modules.serving_module` reads them)."""
        return {
            "max_sequence_length": self.sequence_length,
            "max_query_length": self.max_query_length,
        }

    def get_config(self):
        return {**super().get_config(), "max_query_length": self.max_query_length}
