"""`AlbertMultipleChoicePreprocessor`: an article, a question and its options to a
multiple-choice model's `(batch, num_choices, sequence_length)` inputs."""

import keras
import tensorflow as tf

from keras_albert.tasks.multiple_choice import defaults
from keras_albert.tasks.multiple_choice.features import encode_choices
from keras_albert.text.preprocessing import TokenizerPreprocessor, named_columns
from keras_albert.validation import require_int

INPUTS = ("article", "question", "options")


@keras.saving.register_keras_serializable(package="keras_albert")
class AlbertMultipleChoicePreprocessor(TokenizerPreprocessor):
    """Questions over an article, each with its options, to `token_ids`, `segment_ids` and
    `padding_mask` of shape `(batch, num_choices, sequence_length)`: one row
    `[CLS] article [SEP] choice [SEP]` per option, the choice being the question with the
    option in its blank (`_`), or the question and the option, as `race_utils` formats RACE;
    the choice keeps its last `max_qa_length` tokens (at most half the room) and the article
    what is left, padded to `sequence_length`.

    The features are `keras_albert.tasks.multiple_choice.features.encode_choices`', the graph
    ops of the fine-tuning datasets and of the string-in SavedModel.

    Called as `preprocessor(x, y=None, sample_weight=None)`: `x` is `(article, question,
    options)` or a dict of them keyed so (the SavedModel's names), `article` and `question`
    `(batch,)` strings, `options` `(batch, num_choices)` strings (or a ragged tensor of them).
    An empty option is an absent choice (a question with fewer options than the batch's
    widest): its row is all padding, which `AlbertMultipleChoice` scores -1e9 (never chosen,
    no loss). `y`, the index of the right option per question, and weights pass through.
    `fit` and `evaluate` take options of any widths (lists of different lengths become a
    ragged tensor); `predict` concatenates its batches, so give every question the same
    number of columns there (padded with "", as the SavedModel's requests are).

    Args:
        tokenizer: the `AlbertTokenizer` the model was trained with.
        sequence_length: the packed length of each choice.
        max_qa_length: the most tokens of the question + option segment (RACE's 128).

    Example:
    >>> import tensorflow as tf
    >>> from keras_albert import AlbertMultipleChoicePreprocessor, AlbertTokenizer
    >>> tokenizer = AlbertTokenizer("tests/data/30k-clean.model")
    >>> preprocessor = AlbertMultipleChoicePreprocessor(tokenizer, sequence_length=8)
    >>> x = (tf.constant(["tom ate"]), tf.constant(["what?"]), tf.constant([["a", "b", ""]]))
    >>> tuple(preprocessor(x)["token_ids"].shape)
    (1, 3, 8)
    """

    def __init__(
        self,
        tokenizer=None,
        sequence_length=defaults.SEQUENCE_LENGTH,
        max_qa_length=defaults.MAX_QA_LENGTH,
        **kwargs,
    ):
        require_int("sequence_length", sequence_length, minimum=5)
        require_int("max_qa_length", max_qa_length, minimum=1)
        super().__init__(tokenizer, sequence_length, **kwargs)
        self.max_qa_length = max_qa_length

    def call(self, x, y=None, sample_weight=None):
        article, question, options = named_columns("x", x, INPUTS)
        if isinstance(options, tf.RaggedTensor):
            options = options.to_tensor(default_value="")
        options = tf.convert_to_tensor(options)
        if options.shape.rank != 2:
            raise ValueError(
                "`options` must be a (batch, num_choices) string tensor: the options of each "
                f"question. Received: options of shape {options.shape}"
            )
        inputs = encode_choices(
            self.tokenizer,
            self._packer,
            tf.convert_to_tensor(article),
            tf.convert_to_tensor(question),
            options,
            tf.not_equal(options, ""),
            self.max_qa_length,
        )
        for value in inputs.values():
            value.set_shape([None, None, self.sequence_length])
        return keras.utils.pack_x_y_sample_weight(inputs, y, sample_weight)

    def serving_options(self) -> dict:
        """The string-in SavedModel's options that make its features this preprocessor's
        (`keras_albert.export.modules.serving_module` reads them)."""
        return {"max_sequence_length": self.sequence_length, "max_qa_length": self.max_qa_length}

    def get_config(self):
        return {**super().get_config(), "max_qa_length": self.max_qa_length}
