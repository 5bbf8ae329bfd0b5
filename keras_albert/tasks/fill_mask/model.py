"""`AlbertMaskedLM`: the backbone with the masked-LM head alone (fill-mask)."""

import keras

from keras_albert.layers import MaskedLMHead
from keras_albert.models.backbone import AlbertBackbone
from keras_albert.models.pretrainer import AlbertPretrainer, build_masked_lm_head
from keras_albert.models.task import AlbertTask


@keras.saving.register_keras_serializable(package="keras_albert")
class AlbertMaskedLM(AlbertTask):
    """ALBERT with its masked-LM head, as HF `AlbertForMaskedLM` and keras-hub `AlbertMaskedLM`.

    The head is `AlbertPretrainer`'s (`MaskedLMHead`, its output projection tied to the token
    embedding table); there is no sentence-order head. Inputs: the backbone's `token_ids`,
    `segment_ids`, `padding_mask`, plus `mask_positions` `(batch, num_masked)` int32. Output:
    `mlm_logits` `(batch, num_masked, vocabulary_size)`, float32 under every policy.

    `from_pretrainer(pretrainer)` (or `masked_lm_from`) gives the masked LM of a pretrainer
    without copying: the same backbone and head objects, so their weights are the pretrainer's.

    Args:
        backbone: an `AlbertBackbone`.
        masked_lm_head: a `MaskedLMHead` tied to `backbone.token_embedding` to use instead of a
            new one (how `from_pretrainer` shares the pretrainer's). Not serialized: a model
            loaded from its config builds its own head, which the saved weights then fill.

    Example:
    >>> import numpy as np
    >>> from keras_albert import AlbertBackbone, AlbertMaskedLM
    >>> backbone = AlbertBackbone(vocabulary_size=64, embedding_dim=8, hidden_dim=16,
    ...                           intermediate_dim=32, num_layers=2, num_heads=2)
    >>> model = AlbertMaskedLM(backbone)
    >>> ids = np.array([[2, 10, 4, 3, 0]])
    >>> tuple(model({"token_ids": ids, "segment_ids": np.zeros_like(ids),
    ...              "padding_mask": (ids != 0).astype("int32"),
    ...              "mask_positions": np.array([[2]])}).shape)
    (1, 1, 64)

    Reference: Lan et al., 2020, "ALBERT", arXiv:1909.11942; the head is BERT's masked LM
    (Devlin et al., 2019, arXiv:1810.04805).
    """

    OUTPUT_NAME = "mlm_logits"

    def __init__(self, backbone, masked_lm_head=None, **kwargs):
        if not isinstance(backbone, AlbertBackbone):
            raise ValueError(f"`backbone` must be an AlbertBackbone. Received: {backbone!r}")
        if masked_lm_head is None:
            masked_lm_head = build_masked_lm_head(backbone)
        elif not (
            isinstance(masked_lm_head, MaskedLMHead)
            and masked_lm_head.token_embedding is backbone.token_embedding
        ):
            raise ValueError(
                "`masked_lm_head` must be a MaskedLMHead tied to `backbone.token_embedding`. "
                f"Received: masked_lm_head={masked_lm_head!r}"
            )
        self.backbone = backbone
        self.masked_lm_head = masked_lm_head

        inputs = dict(backbone.input)
        inputs["mask_positions"] = keras.Input(shape=(None,), dtype="int32", name="mask_positions")
        sequence = backbone(
            {name: inputs[name] for name in ("token_ids", "segment_ids", "padding_mask")}
        )["sequence_output"]
        outputs = masked_lm_head(sequence, inputs["mask_positions"])  # (batch, num_masked, V)
        kwargs.setdefault("name", "albert_masked_lm")
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)

    @classmethod
    def from_pretrainer(cls, pretrainer: AlbertPretrainer, **kwargs) -> "AlbertMaskedLM":
        """The masked LM of `pretrainer`: its backbone and MLM head, shared (not copied)."""
        if not isinstance(pretrainer, AlbertPretrainer):
            raise ValueError(
                "`pretrainer` must be an AlbertPretrainer. "
                f"Received: pretrainer={type(pretrainer).__name__}"
            )
        return cls(pretrainer.backbone, masked_lm_head=pretrainer.masked_lm_head, **kwargs)


def masked_lm_from(model) -> AlbertMaskedLM:
    """`model` if it is an `AlbertMaskedLM`; the masked LM of an `AlbertPretrainer` (sharing its
    weights: `AlbertMaskedLM.from_pretrainer`). Any checkpoint `load_checkpoint(...,
    model="pretrainer")` reads (ours, Hugging Face `AlbertForMaskedLM`/`AlbertForPreTraining`,
    TF1 `cls/predictions`, keras-hub `AlbertMaskedLM`) becomes a masked LM so."""
    if isinstance(model, AlbertMaskedLM):
        return model
    if isinstance(model, AlbertPretrainer):
        return AlbertMaskedLM.from_pretrainer(model)
    raise TypeError(
        "`model` must be an AlbertMaskedLM or an AlbertPretrainer (whose masked-LM head it "
        f"uses). Received: model={type(model).__name__}"
    )
