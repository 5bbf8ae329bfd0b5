"""`AlbertPretrainer`: the backbone with its two pretraining heads, masked LM and SOP."""

import keras

from keras_albert.layers import MaskedLMHead, SentenceOrderHead
from keras_albert.models.backbone import AlbertBackbone
from keras_albert.models.task import AlbertTask


@keras.saving.register_keras_serializable(package="keras_albert")
class AlbertPretrainer(AlbertTask):
    """ALBERT with the masked-LM head (tied to the token table) and the sentence-order head.

    Inputs: the backbone's `token_ids`, `segment_ids`, `padding_mask`, plus
    `mask_positions` `(batch, num_masked)` int32, the positions whose tokens are predicted.
    Outputs: `mlm_logits` `(batch, num_masked, vocabulary_size)` and `sop_logits`
    `(batch, 2)` (class 1 = the segments were swapped), both float32.

    Args:
        backbone: an `AlbertBackbone`.

    Example:
    >>> import numpy as np
    >>> from keras_albert import AlbertBackbone, AlbertPretrainer
    >>> backbone = AlbertBackbone(vocabulary_size=64, embedding_dim=8, hidden_dim=16,
    ...                           intermediate_dim=32, num_layers=2, num_heads=2)
    >>> pretrainer = AlbertPretrainer(backbone)
    >>> ids = np.array([[2, 10, 4, 3, 0]])
    >>> out = pretrainer({"token_ids": ids, "segment_ids": np.zeros_like(ids),
    ...                   "padding_mask": (ids != 0).astype("int32"),
    ...                   "mask_positions": np.array([[2]])})
    >>> tuple(out["mlm_logits"].shape), tuple(out["sop_logits"].shape)
    ((1, 1, 64), (1, 2))
    """

    def __init__(self, backbone, **kwargs):
        if not isinstance(backbone, AlbertBackbone):
            raise ValueError(f"`backbone` must be an AlbertBackbone. Received: {backbone!r}")
        self.backbone = backbone
        self.masked_lm_head = build_masked_lm_head(backbone)
        self.sentence_order_head = SentenceOrderHead(
            initializer_range=backbone.albert_config.initializer_range,
            dtype=backbone.dtype_policy,
            name="sentence_order_head",
        )

        inputs = dict(backbone.input)
        inputs["mask_positions"] = keras.Input(shape=(None,), dtype="int32", name="mask_positions")
        backbone_outputs = backbone(
            {name: inputs[name] for name in ("token_ids", "segment_ids", "padding_mask")}
        )
        outputs = {
            "mlm_logits": self.masked_lm_head(
                backbone_outputs["sequence_output"], inputs["mask_positions"]
            ),
            "sop_logits": self.sentence_order_head(backbone_outputs["pooled_output"]),
        }
        kwargs.setdefault("name", "albert_pretrainer")
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)


def build_masked_lm_head(backbone: AlbertBackbone) -> MaskedLMHead:
    """A new masked-LM head for `backbone`, tied to its token table (the pretrainer's and
    `AlbertMaskedLM`'s)."""
    config = backbone.albert_config
    return MaskedLMHead(
        backbone.token_embedding,
        embedding_dim=config.embedding_dim,
        activation=config.activation,
        layer_norm_epsilon=config.layer_norm_epsilon,
        initializer_range=config.initializer_range,
        dtype=backbone.dtype_policy,
        name="masked_lm_head",
    )
