"""`AlbertClassifier`: a classification or regression head on the pooled [CLS] output."""

import keras

from keras_albert.layers.dropout import ReplicaDropout
from keras_albert.layers.logits import logits_dense
from keras_albert.models.backbone import AlbertBackbone
from keras_albert.models.task import AlbertTask
from keras_albert.validation import require_positive_int, require_rate


@keras.saving.register_keras_serializable(package="keras_albert")
class AlbertClassifier(AlbertTask):
    """ALBERT for sentence (pair) classification or regression, as the original `run_classifier`.

    pooled output → dropout → dense(num_classes). With `num_classes=1` the single output is a
    regression score (STS-B). Outputs are float32 logits `(batch, num_classes)`.

    Args:
        backbone: an `AlbertBackbone` (pretrained or converted).
        num_classes: int, number of classes; 1 for regression.
        dropout: float, dropout on the pooled output (0.1 in the original fine-tuning).
        initializer_range: float, stddev of the truncated-normal kernel initializer.

    Example:
    >>> import numpy as np
    >>> from keras_albert import AlbertBackbone, AlbertClassifier
    >>> backbone = AlbertBackbone(vocabulary_size=64, embedding_dim=8, hidden_dim=16,
    ...                           intermediate_dim=32, num_layers=2, num_heads=2)
    >>> classifier = AlbertClassifier(backbone, num_classes=3)
    >>> ids = np.array([[2, 10, 3, 0]])
    >>> tuple(classifier({"token_ids": ids, "segment_ids": np.zeros_like(ids),
    ...                   "padding_mask": (ids != 0).astype("int32")}).shape)
    (1, 3)
    """

    def __init__(self, backbone, num_classes, dropout=0.1, initializer_range=0.02, **kwargs):
        if not isinstance(backbone, AlbertBackbone):
            raise ValueError(f"`backbone` must be an AlbertBackbone. Received: {backbone!r}")
        require_positive_int("num_classes", num_classes)
        require_rate("dropout", dropout)
        self.backbone = backbone
        self.output_dropout = ReplicaDropout(
            dropout, dtype=backbone.dtype_policy, name="output_dropout"
        )
        self.output_dense = logits_dense(num_classes, initializer_range, name="logits")
        inputs = dict(backbone.input)
        pooled = backbone(inputs)["pooled_output"]
        outputs = self.output_dense(self.output_dropout(pooled))  # float32
        kwargs.setdefault("name", "albert_classifier")
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        self.num_classes = num_classes
        self.dropout = dropout
        self.initializer_range = initializer_range

    def task_config(self):
        return {
            "num_classes": self.num_classes,
            "dropout": self.dropout,
            "initializer_range": self.initializer_range,
        }
