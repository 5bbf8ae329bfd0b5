"""`AlbertTokenClassifier`: one label per token from the sequence output (NER)."""

import keras

from keras_albert.layers.dropout import ReplicaDropout
from keras_albert.layers.logits import logits_dense
from keras_albert.models.backbone import AlbertBackbone
from keras_albert.models.task import AlbertTask
from keras_albert.validation import require_positive_int, require_rate


@keras.saving.register_keras_serializable(package="keras_albert")
class AlbertTokenClassifier(AlbertTask):
    """ALBERT for token classification (named entities), as HF `AlbertForTokenClassification`.

    sequence output → dropout → dense(num_classes) at every position. Output: float32 logits
    `(batch, seq, num_classes)`. Which positions count (the first piece of each word) is the
    data's business: labels of the others are ignored by the loss (see
    `tasks.token_classification.features`).

    Args:
        backbone: an `AlbertBackbone` (pretrained or converted).
        num_classes: int, number of tags (e.g. the BIO tags of the entity types plus "O").
        dropout: float, dropout on the sequence output (0.1 as HF's default).
        initializer_range: float, stddev of the truncated-normal kernel initializer.
        labels: optional tag names, one per output in order (e.g. `["O", "B-person", ...]`);
            kept in the config so that a saved model says what its outputs mean.

    Example:
    >>> import numpy as np
    >>> from keras_albert import AlbertBackbone, AlbertTokenClassifier
    >>> backbone = AlbertBackbone(vocabulary_size=64, embedding_dim=8, hidden_dim=16,
    ...                           intermediate_dim=32, num_layers=2, num_heads=2)
    >>> model = AlbertTokenClassifier(backbone, num_classes=5)
    >>> ids = np.array([[2, 10, 11, 3, 0]])
    >>> tuple(model({"token_ids": ids, "segment_ids": np.zeros_like(ids),
    ...              "padding_mask": (ids != 0).astype("int32")}).shape)
    (1, 5, 5)

    Reference: Lan et al., 2020, "ALBERT", arXiv:1909.11942; the head is BERT's for CoNLL-2003
    NER (Devlin et al., 2019, arXiv:1810.04805, section 5.3).
    """

    def __init__(
        self, backbone, num_classes=None, dropout=0.1, initializer_range=0.02, labels=None, **kwargs
    ):
        if "num_labels" in kwargs:  # the name of `num_classes` in configs saved before
            num_classes = kwargs.pop("num_labels")
        if not isinstance(backbone, AlbertBackbone):
            raise ValueError(f"`backbone` must be an AlbertBackbone. Received: {backbone!r}")
        require_positive_int("num_classes", num_classes)
        require_rate("dropout", dropout)
        if labels is not None:
            labels = list(labels)
            if len(labels) != num_classes or not all(isinstance(x, str) for x in labels):
                raise ValueError(
                    f"`labels` must be {num_classes} strings, one per output. Received: "
                    f"labels={labels!r}"
                )
            if len(set(labels)) != len(labels):
                raise ValueError(f"`labels` must be distinct. Received: labels={labels!r}")
        self.backbone = backbone
        self.output_dropout = ReplicaDropout(
            dropout, dtype=backbone.dtype_policy, name="output_dropout"
        )
        self.output_dense = logits_dense(num_classes, initializer_range, name="logits")
        inputs = dict(backbone.input)
        sequence = backbone(inputs)["sequence_output"]
        outputs = self.output_dense(self.output_dropout(sequence))  # float32
        kwargs.setdefault("name", "albert_token_classifier")
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        self.num_classes = num_classes
        self.dropout = dropout
        self.initializer_range = initializer_range
        self.labels = labels

    def task_config(self):
        return {
            "num_classes": self.num_classes,
            "dropout": self.dropout,
            "initializer_range": self.initializer_range,
            "labels": self.labels,
        }
