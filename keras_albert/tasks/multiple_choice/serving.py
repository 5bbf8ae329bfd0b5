"""The multiple-choice (RACE) SavedModel: article, question and options in, the chosen option out.

Signatures of `MultipleChoiceServingModule` (an `AlbertMultipleChoice`):

- `serving_default`: `article`, `question` (`tf.string [batch]`) and `options`
  (`tf.string [batch, num_choices]`, `num_choices` fixed at export, 4 by default) →
  `probabilities` (`float32 [batch, num_choices]`), `answer_index` (`int32 [batch]`) and
  `answer` (`string [batch]`, the letter "A", "B", ...). An empty option string is an absent
  choice (RACE+ has questions with 2 or 3 options): it gets probability 0 and is never chosen;
  a question whose options are all empty gets equal probabilities and `answer_index` 0. A
  request whose `options` do not have `num_choices` columns fails with an error that says so.
- `serve_token_ids`: `token_ids`, `segment_ids`, `padding_mask` (`int32 [batch, choices,
  seq]`) → `logits`, `probabilities`, `answer_index`.

Formatting and packing are `keras_albert.tasks.multiple_choice.features`'s, in the graph
(`encode_choices`: `choice_texts_graph`, `pack_choices`), the ops of the training datasets and
of `AlbertMultipleChoicePreprocessor`; the batch is padded to its longest packed choice.
"""

from __future__ import annotations

import tensorflow as tf

from keras_albert.serving.saved_model import SERVE_TOKEN_IDS, SERVING_DEFAULT
from keras_albert.serving.task_serving import (
    TaskServingModule,
    concrete,
    same_batch_size,
    string_spec,
    token_specs,
)
from keras_albert.tasks.multiple_choice import defaults as race_defaults
from keras_albert.tasks.multiple_choice.features import encode_choices
from keras_albert.tasks.multiple_choice.model import AlbertMultipleChoice
from keras_albert.validation import require_int

WARMUP_EXAMPLE = (
    "Tom went to the market on Monday and bought three apples.",
    "What did Tom buy?",
    ("apples", "pears", "bread", "milk"),
)


class MultipleChoiceServingModule(TaskServingModule):
    """Serving endpoints of an `AlbertMultipleChoice` (see the module docstring).

    Args:
        model: an `AlbertMultipleChoice`.
        tokenizer: its `AlbertTokenizer`.
        max_sequence_length: packed length of each choice; default the model's limit.
        num_choices: options per question in a request (RACE's 4).
        max_qa_length: the most tokens of the question + option segment (`race_utils`).

    The defaults are RACE's (`keras_albert.tasks.multiple_choice.defaults`).
    """

    task = "multiple_choice"

    def __init__(
        self,
        model,
        tokenizer,
        max_sequence_length=None,
        num_choices=race_defaults.NUM_CHOICES,
        max_qa_length=race_defaults.MAX_QA_LENGTH,
    ):
        if not isinstance(model, AlbertMultipleChoice):
            raise TypeError(
                f"`model` must be an AlbertMultipleChoice. Received: model={type(model).__name__}"
            )
        super().__init__(model, tokenizer, max_sequence_length)
        require_int("num_choices", num_choices, 2)
        if num_choices > 26:
            raise ValueError(
                f"`num_choices` must be at most 26. Received: num_choices={num_choices}"
            )
        require_int("max_qa_length", max_qa_length, 1)
        if self.max_sequence_length < 5:
            raise ValueError(
                "`max_sequence_length` must be at least 5 for a multiple-choice model. "
                f"Received: max_sequence_length={self.max_sequence_length}"
            )
        self.num_choices = num_choices
        self.max_qa_length = max_qa_length
        self.letters = tuple(chr(ord("A") + index) for index in range(num_choices))
        self._finish()

    def _build_endpoints(self) -> dict:
        def serve_text(article, question, options):
            inputs = same_batch_size(
                SERVING_DEFAULT, article=article, question=question, options=options
            )
            return self.outputs(self.pack(**inputs))

        def serve_token_ids(token_ids, segment_ids, padding_mask):
            return self.token_outputs(
                self.checked_token_inputs(token_ids, segment_ids, padding_mask)
            )

        return {
            SERVING_DEFAULT: concrete(
                serve_text,
                article=string_spec(None),
                question=string_spec(None),
                options=string_spec(None, None),
            ),
            SERVE_TOKEN_IDS: concrete(serve_token_ids, **token_specs(3)),
        }

    def pack(self, article, question, options) -> dict:
        """`(batch, num_choices, seq)` packed choices, padded to the longest."""
        check = tf.debugging.assert_equal(
            tf.shape(options)[1],
            self.num_choices,
            message=f"serving_default: `options` must have num_choices={self.num_choices} "
            "columns per question (an empty string marks an absent option)",
        )
        with tf.control_dependencies([check]):
            options = tf.identity(options)
        packed = encode_choices(
            self.tokenizer,
            self.tokenizer.packer(self.max_sequence_length),
            article,
            question,
            options,
            tf.not_equal(options, ""),
            self.max_qa_length,
        )
        longest = tf.maximum(tf.reduce_max(tf.reduce_sum(packed["padding_mask"], axis=-1)), 2)
        return {name: value[:, :, :longest] for name, value in packed.items()}

    def outputs(self, inputs: dict) -> dict:
        logits = tf.cast(self.call_model(inputs), tf.float32)
        index = tf.argmax(logits, axis=-1, output_type=tf.int32)
        return {
            "logits": logits,
            "probabilities": tf.nn.softmax(logits, axis=-1),
            "answer_index": index,
            "answer": tf.gather(tf.constant(self.letters), index),
        }

    @property
    def token_input_shape(self) -> tuple:
        # (batch, choices, seq), every dimension fixed: the model folds the choices into the
        # batch, and TFLite has no builtin for the attention mask with both dimensions dynamic.
        return (1, self.num_choices, self.max_sequence_length)

    def token_outputs(self, inputs: dict) -> dict:
        outputs = self.outputs(inputs)
        return {name: outputs[name] for name in ("logits", "probabilities", "answer_index")}

    def warmup_inputs(self) -> list[tuple[str, dict]]:
        article, question, options = WARMUP_EXAMPLE
        options = list(options) + [""] * (self.num_choices - len(options))
        long_article = " ".join(["word"] * self.max_sequence_length)
        rows = [(article, question, options[: self.num_choices]), ("", "", [""] * self.num_choices)]
        rows.append((long_article, question + " _", options[: self.num_choices]))
        result = []
        for batch_size in (1, 2, 4, 8):
            batch = [rows[i % len(rows)] for i in range(batch_size)]
            inputs = {
                "article": tf.constant([row[0] for row in batch]).numpy(),
                "question": tf.constant([row[1] for row in batch]).numpy(),
                "options": tf.constant([row[2] for row in batch]).numpy(),
            }
            result.append((SERVING_DEFAULT, inputs))
            packed = self.pack(*(tf.constant(value) for value in inputs.values()))
            result.append((SERVE_TOKEN_IDS, {k: v.numpy() for k, v in packed.items()}))
        return result
