"""`AlbertQuestionAnswerer`: extractive question answering (SQuAD v1.1 and v2.0) on an ALBERT."""

import keras
from keras import ops

from keras_albert.layers.answer_class_head import AnswerClassHead
from keras_albert.layers.logits import logits_dense
from keras_albert.models.backbone import AlbertBackbone
from keras_albert.models.task import AlbertTask
from keras_albert.validation import require_one_of, require_positive_int, require_rate

ANSWERABILITY = ("null_span", "answer_class")

# Padding (null span) and non-context positions (answer class) never start or end an answer.
_MASKED = -1e9


@keras.saving.register_keras_serializable(package="keras_albert")
class AlbertQuestionAnswerer(AlbertTask):
    """ALBERT for span question answering over `[CLS] question [SEP] context [SEP]`.

    `answerability="null_span"` (default; BERT's and Hugging Face's `AlbertForQuestionAnswering`
    design, the original's SQuAD v1 head): sequence output → dense(2) → `start_logits`,
    `end_logits`, float32 (batch, seq), padding masked to -1e9. "No answer" is the [CLS] span.

    `answerability="answer_class"`: the original ALBERT SQuAD v2.0 head (`AnswerClassHead`):
    start log-probs; end log-probs conditioned on a start (the gold start given as the optional
    input `start_positions` in training, the top `num_start_candidates` starts × top
    `num_end_candidates` ends at inference); `cls_logits`, an answerability logit from the
    start-probability-weighted hidden state and [CLS]. Only [CLS] and context positions (segment
    1 before the final [SEP]) may start or end a span, as the original's `p_mask`.

    `training_loss()` gives `compile` arguments: for null span (start CE + end CE) / 2; for
    answer class (start NLL + end NLL) / 2 + 0.5 × sigmoid CE of `cls_logits` against
    `is_impossible`. `training_targets(arrays)` splits
    `tasks.question_answering.features.feature_arrays` into (x, y); with a preprocessor
    (`AlbertQuestionAnswererPreprocessor`, whose labels are named as those arrays), `fit` and
    `evaluate` take questions, contexts and SQuAD's answers, split the same way (`preprocess`).

    Args:
        backbone: an `AlbertBackbone`.
        answerability: "null_span" or "answer_class".
        num_start_candidates: int, starts kept at inference by the answer-class head (5).
        num_end_candidates: int, ends kept per start (5).
        dropout: float, dropout in the answer-class head's answerability branch (0.1).
        initializer_range: float, stddev of the truncated-normal kernel initializer.

    Example:
    >>> import numpy as np
    >>> from keras_albert import AlbertBackbone, AlbertQuestionAnswerer
    >>> backbone = AlbertBackbone(vocabulary_size=64, embedding_dim=8, hidden_dim=16,
    ...                           intermediate_dim=32, num_layers=2, num_heads=2)
    >>> model = AlbertQuestionAnswerer(backbone)
    >>> ids = np.array([[2, 10, 3, 11, 12, 3, 0]])
    >>> outputs = model({"token_ids": ids, "segment_ids": np.array([[0, 0, 0, 1, 1, 1, 0]]),
    ...                  "padding_mask": (ids != 0).astype("int32")})
    >>> tuple(outputs["start_logits"].shape)
    (1, 7)

    Reference: Lan et al., 2020, arXiv:1909.11942 (SQuAD, Section 4.8 and Appendix A.3);
    google-research/albert `run_squad_v1.py`, `run_squad_v2.py`, `squad_utils.py`.
    """

    def __init__(
        self,
        backbone,
        answerability="null_span",
        num_start_candidates=5,
        num_end_candidates=5,
        dropout=0.1,
        initializer_range=0.02,
        **kwargs,
    ):
        if not isinstance(backbone, AlbertBackbone):
            raise ValueError(f"`backbone` must be an AlbertBackbone. Received: {backbone!r}")
        require_one_of("answerability", answerability, ANSWERABILITY)
        require_positive_int("num_start_candidates", num_start_candidates)
        require_positive_int("num_end_candidates", num_end_candidates)
        require_rate("dropout", dropout)
        self.backbone = backbone
        inputs = dict(backbone.input)
        sequence = backbone(inputs)["sequence_output"]  # (batch, seq, H)
        if answerability == "null_span":
            self.span_dense = logits_dense(2, initializer_range, name="span_logits")
            logits = self.span_dense(sequence)  # (batch, seq, 2), float32
            padding = ops.logical_not(ops.cast(inputs["padding_mask"], "bool"))
            outputs = {
                "start_logits": ops.where(padding, _MASKED, logits[..., 0]),
                "end_logits": ops.where(padding, _MASKED, logits[..., 1]),
            }
        else:
            self.answer_class_head = AnswerClassHead(
                backbone.albert_config.hidden_dim,
                num_start_candidates=num_start_candidates,
                num_end_candidates=num_end_candidates,
                dropout=dropout,
                initializer_range=initializer_range,
                dtype=backbone.dtype_policy,
                name="answer_class_head",
            )
            inputs["start_positions"] = keras.Input(
                shape=(), dtype="int32", name="start_positions", optional=True
            )
            outputs = self.answer_class_head(
                sequence, inputs["segment_ids"], inputs["padding_mask"], inputs["start_positions"]
            )
        kwargs.setdefault("name", "albert_question_answerer")
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        self.answerability = answerability
        self.num_start_candidates = num_start_candidates
        self.num_end_candidates = num_end_candidates
        self.dropout = dropout
        self.initializer_range = initializer_range

    def __call__(self, inputs, *args, **kwargs):
        # `start_positions` is optional: inference inputs need not carry it.
        if (
            isinstance(inputs, dict)
            and "start_positions" in self.input
            and ("start_positions" not in inputs)
        ):
            inputs = {**inputs, "start_positions": None}
        return super().__call__(inputs, *args, **kwargs)

    def task_config(self):
        return {
            "answerability": self.answerability,
            "num_start_candidates": self.num_start_candidates,
            "num_end_candidates": self.num_end_candidates,
            "dropout": self.dropout,
            "initializer_range": self.initializer_range,
        }

    def training_loss(self) -> dict:
        """`loss` and `loss_weights` for `compile`, keyed by output name."""
        if self.answerability == "null_span":
            cross_entropy = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
            return {
                "loss": {"start_logits": cross_entropy, "end_logits": cross_entropy},
                "loss_weights": {"start_logits": 0.5, "end_logits": 0.5},
            }
        # Log-probs are their own logits (log_softmax is idempotent): this is the NLL.
        negative_log_likelihood = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        return {
            "loss": {
                "start_log_probs": negative_log_likelihood,
                "end_log_probs": negative_log_likelihood,
                "cls_logits": keras.losses.BinaryCrossentropy(from_logits=True),
            },
            "loss_weights": {"start_log_probs": 0.5, "end_log_probs": 0.5, "cls_logits": 0.5},
        }

    def training_targets(self, arrays: dict) -> tuple[dict, dict]:
        """(x, y) for `fit` from `token_ids`, `segment_ids`, `padding_mask`, `start_positions`,
        `end_positions`, `is_impossible` (as `tasks.question_answering.features.feature_arrays`
        makes)."""
        x = {name: arrays[name] for name in ("token_ids", "segment_ids", "padding_mask")}
        if self.answerability == "null_span":
            return x, {
                "start_logits": arrays["start_positions"],
                "end_logits": arrays["end_positions"],
            }
        x["start_positions"] = arrays["start_positions"]
        y = {
            "start_log_probs": arrays["start_positions"],
            "end_log_probs": arrays["end_positions"],
            # 0 or 1, of any dtype: the loss reads its labels as floats (Keras casts `y_true`),
            # and the preprocessor's tensors in `tf.data` are not NumPy's to cast.
            "cls_logits": arrays["is_impossible"],
        }
        return x, y

    def preprocess(self, x, y=None, sample_weight=None):
        # The preprocessor labels as `feature_arrays` does; the head's own (x, y) from them.
        x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(
            self.preprocessor(x, y, sample_weight)
        )
        if y is not None:
            x, y = self.training_targets({**x, **y})
        return keras.utils.pack_x_y_sample_weight(x, y, sample_weight)
