"""`AlbertMultipleChoice`: one score per choice from the pooled [CLS] output (RACE)."""

import keras

from keras_albert.layers.dropout import ReplicaDropout
from keras_albert.layers.logits import logits_dense
from keras_albert.models.backbone import AlbertBackbone
from keras_albert.models.task import AlbertTask
from keras_albert.validation import require_rate

BACKBONE_INPUTS = ("token_ids", "segment_ids", "padding_mask")
ABSENT_LOGIT = -1e9  # the logit of an absent choice (all padding)


@keras.saving.register_keras_serializable(package="keras_albert")
class FoldChoices(keras.layers.Layer):
    """`(batch, num_choices, seq)` → `(batch × num_choices, seq)`."""

    def call(self, inputs):
        return keras.ops.reshape(inputs, (-1, keras.ops.shape(inputs)[-1]))

    def compute_output_shape(self, input_shape):
        return (None, input_shape[-1])


@keras.saving.register_keras_serializable(package="keras_albert")
class UnfoldChoices(keras.layers.Layer):
    """Scores `(batch × num_choices, 1)` → float32 logits `(batch, num_choices)`.

    A choice whose `padding_mask` row is all zeros is absent (a question with fewer options
    than the batch's widest) and gets `ABSENT_LOGIT`: never predicted, no loss.
    """

    def call(self, scores, padding_mask):
        shape = keras.ops.shape(padding_mask)
        logits = keras.ops.reshape(keras.ops.cast(scores, "float32"), (shape[0], shape[1]))
        present = keras.ops.max(padding_mask, axis=-1) > 0
        return keras.ops.where(present, logits, ABSENT_LOGIT)

    def compute_output_shape(self, scores_shape, padding_mask_shape):
        return tuple(padding_mask_shape[:2])


@keras.saving.register_keras_serializable(package="keras_albert")
class AlbertMultipleChoice(AlbertTask):
    """ALBERT for multiple choice, as the original `run_race` and HF `AlbertForMultipleChoice`.

    Inputs are the backbone's three inputs with a choice axis, `(batch, num_choices, seq)`;
    they are folded to `(batch × num_choices, seq)`, run through the backbone, and the pooled
    output → dropout → dense(1) gives one score per choice. Output: float32 logits
    `(batch, num_choices)` (softmax over the choices gives the probabilities). The number of
    choices is not fixed by the model; a choice whose `padding_mask` is all zeros is absent
    and scores `ABSENT_LOGIT` (-1e9), so questions with fewer options share a batch.

    Args:
        backbone: an `AlbertBackbone` (pretrained or converted).
        dropout: float, dropout on the pooled output (0.1 in the original fine-tuning).
        initializer_range: float, stddev of the truncated-normal kernel initializer.

    Example:
    >>> import numpy as np
    >>> from keras_albert import AlbertBackbone, AlbertMultipleChoice
    >>> backbone = AlbertBackbone(vocabulary_size=64, embedding_dim=8, hidden_dim=16,
    ...                           intermediate_dim=32, num_layers=2, num_heads=2)
    >>> model = AlbertMultipleChoice(backbone)
    >>> ids = np.array([[[2, 10, 3, 11, 3], [2, 10, 3, 12, 3]]])
    >>> tuple(model({"token_ids": ids, "segment_ids": np.zeros_like(ids),
    ...              "padding_mask": np.ones_like(ids)}).shape)
    (1, 2)

    Reference: Lan et al., 2020, "ALBERT: A Lite BERT for Self-supervised Learning of Language
    Representations", arXiv:1909.11942 (its RACE results); Lai et al., 2017, "RACE:
    Large-scale ReAding Comprehension Dataset From Examinations", arXiv:1704.04683.
    """

    def __init__(self, backbone, dropout=0.1, initializer_range=0.02, **kwargs):
        if not isinstance(backbone, AlbertBackbone):
            raise ValueError(f"`backbone` must be an AlbertBackbone. Received: {backbone!r}")
        require_rate("dropout", dropout)
        self.backbone = backbone
        self.output_dropout = ReplicaDropout(
            dropout, dtype=backbone.dtype_policy, name="output_dropout"
        )
        self.output_dense = logits_dense(1, initializer_range, name="logits")
        inputs = {
            name: keras.Input(shape=(None, None), dtype="int32", name=name)
            for name in BACKBONE_INPUTS
        }
        fold = FoldChoices(name="fold_choices")
        folded = {name: fold(value) for name, value in inputs.items()}
        pooled = backbone(folded)["pooled_output"]  # (batch × num_choices, hidden)
        scores = self.output_dense(self.output_dropout(pooled))  # (batch × num_choices, 1)
        outputs = UnfoldChoices(name="unfold_choices")(scores, inputs["padding_mask"])
        kwargs.setdefault("name", "albert_multiple_choice")
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        self.dropout = dropout
        self.initializer_range = initializer_range

    def task_config(self):
        return {"dropout": self.dropout, "initializer_range": self.initializer_range}
