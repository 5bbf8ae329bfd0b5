"""`AlbertTextEmbedder`: one vector per text, the backbone's token vectors pooled over the
padding mask (sentence-transformers' `Transformer` → `Pooling` → optional `Normalize`)."""

import keras

from keras_albert.models.backbone import AlbertBackbone
from keras_albert.models.task import AlbertTask
from keras_albert.tasks.text_embedding import defaults
from keras_albert.validation import require_bool, require_one_of


@keras.saving.register_keras_serializable(package="keras_albert")
class MaskedPooling(keras.layers.Layer):
    """Token vectors `(batch, seq, H)` to one vector `(batch, H)` over the real tokens
    (`padding_mask` 1), as sentence-transformers' `Pooling` does; float32 under every policy.

    Args:
        mode: "mean" (the mean of the real tokens), "cls" (the first token's vector) or "max"
            (the per-dimension maximum over the real tokens).
        normalize: divide by the L2 norm (sentence-transformers' `Normalize`).

    Example:
    >>> import keras
    >>> import numpy as np
    >>> from keras_albert.tasks.text_embedding.model import MaskedPooling
    >>> pooling = MaskedPooling("mean")
    >>> sequence = np.array([[[1.0, 2.0], [3.0, 4.0], [9.0, 9.0]]])
    >>> keras.ops.convert_to_numpy(pooling(sequence, np.array([[1, 1, 0]]))).tolist()
    [[2.0, 3.0]]
    """

    def __init__(self, mode=defaults.POOLING, normalize=defaults.NORMALIZE, **kwargs):
        super().__init__(**kwargs)
        require_one_of("mode", mode, defaults.POOLING_MODES)
        require_bool("normalize", normalize)
        self.mode = mode
        self.normalize = normalize

    def call(self, sequence, padding_mask):
        sequence = keras.ops.cast(sequence, "float32")  # (batch, seq, H)
        mask = keras.ops.cast(padding_mask, "float32")[:, :, None]  # (batch, seq, 1)
        if self.mode == "cls":
            pooled = sequence[:, 0, :]
        elif self.mode == "max":
            # Padding loses every comparison; a large finite value (sentence-transformers
            # uses -inf) keeps a row without tokens from turning into NaN when normalized.
            pooled = keras.ops.max(keras.ops.where(mask > 0, sequence, -1e9), axis=1)
        else:
            # The count clamped as sentence-transformers does (1e-9): a row of padding is 0.
            count = keras.ops.maximum(keras.ops.sum(mask, axis=1), 1e-9)  # (batch, 1)
            pooled = keras.ops.sum(sequence * mask, axis=1) / count
        if self.normalize:
            # torch.nn.functional.normalize's floor on the norm (1e-12).
            norm = keras.ops.sqrt(keras.ops.sum(keras.ops.square(pooled), axis=-1, keepdims=True))
            pooled = pooled / keras.ops.maximum(norm, 1e-12)
        return pooled

    def compute_output_shape(self, sequence_shape, padding_mask_shape=None):
        return (sequence_shape[0], sequence_shape[-1])

    def get_config(self):
        config = super().get_config()
        config.update({"mode": self.mode, "normalize": self.normalize})
        return config


@keras.saving.register_keras_serializable(package="keras_albert")
class AlbertTextEmbedder(AlbertTask):
    """ALBERT sentence embeddings, as a sentence-transformers model over ALBERT: the backbone's
    `sequence_output` pooled over the padding mask (`MaskedPooling`), optionally L2-normalized.

    Inputs: the backbone's `token_ids`, `segment_ids`, `padding_mask`. Output: `embeddings`
    `(batch, hidden_dim)`, float32 under every policy. With a preprocessor
    (`AlbertTextEmbedderPreprocessor`, attached by `from_preset`) `predict` takes strings.
    The pooler of the backbone is not used (sentence-transformers' `AlbertModel` keeps it too).

    Args:
        backbone: an `AlbertBackbone`.
        pooling: "mean" (default), "cls" or "max".
        normalize: bool, unit-length embeddings (cosine similarity is then a dot product).

    Example:
    >>> import numpy as np
    >>> from keras_albert import AlbertBackbone, AlbertTextEmbedder
    >>> backbone = AlbertBackbone(vocabulary_size=64, embedding_dim=8, hidden_dim=16,
    ...                           intermediate_dim=32, num_layers=2, num_heads=2)
    >>> embedder = AlbertTextEmbedder(backbone, normalize=True)
    >>> ids = np.array([[2, 10, 3, 0]])
    >>> tuple(embedder({"token_ids": ids, "segment_ids": np.zeros_like(ids),
    ...                 "padding_mask": (ids != 0).astype("int32")}).shape)
    (1, 16)

    Reference: Reimers & Gurevych, 2019, "Sentence-BERT", arXiv:1908.10084.
    """

    OUTPUT_NAME = "embeddings"

    def __init__(self, backbone, pooling=defaults.POOLING, normalize=defaults.NORMALIZE, **kwargs):
        if not isinstance(backbone, AlbertBackbone):
            raise ValueError(f"`backbone` must be an AlbertBackbone. Received: {backbone!r}")
        require_one_of("pooling", pooling, defaults.POOLING_MODES)
        require_bool("normalize", normalize)
        # === Layers ===
        self.backbone = backbone
        self.pooling_layer = MaskedPooling(
            pooling, normalize, dtype=backbone.dtype_policy, name="pooling"
        )
        # === Functional Model ===
        inputs = dict(backbone.input)
        sequence = backbone(inputs)["sequence_output"]  # (batch, seq, H)
        outputs = self.pooling_layer(sequence, inputs["padding_mask"])  # (batch, H), float32
        kwargs.setdefault("name", "albert_text_embedder")
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        # === Config ===
        self.pooling = pooling
        self.normalize = normalize

    def task_config(self):
        return {"pooling": self.pooling, "normalize": self.normalize}
