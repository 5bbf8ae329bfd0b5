"""Masked-LM head whose output projection is the token embedding table itself (tied)."""

import keras

from keras_albert.layers.activations import get_activation
from keras_albert.layers.gather import gather_positions
from keras_albert.layers.layer_norm import LayerNorm
from keras_albert.layers.logits import TiedLogits
from keras_albert.validation import require_positive_int


@keras.saving.register_keras_serializable(package="keras_albert")
class MaskedLMHead(keras.layers.Layer):
    """Predicts the tokens at `mask_positions`: dense H→E → activation → LayerNorm → ·Wᵀ + b,
    the last step in float32 under every policy (`keras_albert.layers.logits`).

    W is the V×E token table of the embedding layer, not a copy: the head reads
    `token_embedding.embeddings` at call time, so training either one updates both, as in
    the original (`cls/predictions` multiplies by `bert/embeddings/word_embeddings`).
    Only the output bias is the head's own.

    Args:
        token_embedding: the `keras.layers.Embedding` whose table is tied to the output.
            Not serialized: the model that owns both passes it again on load.
        embedding_dim: int, E.
        activation: str, see `keras_albert.layers.activations`.
        layer_norm_epsilon: float, LayerNorm epsilon (1e-12, as the original).
        initializer_range: float, stddev of the truncated-normal kernel initializer.

    Example:
    >>> import keras
    >>> from keras_albert.layers.masked_lm_head import MaskedLMHead
    >>> table = keras.layers.Embedding(10, 4); table.build((None,))
    >>> head = MaskedLMHead(table, embedding_dim=4)
    >>> tuple(head(keras.ops.ones((2, 5, 8)), keras.ops.zeros((2, 3), "int32")).shape)
    (2, 3, 10)
    """

    def __init__(
        self,
        token_embedding,
        embedding_dim,
        activation="gelu_approximate",
        layer_norm_epsilon=1e-12,
        initializer_range=0.02,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if not isinstance(token_embedding, keras.layers.Embedding):
            raise ValueError(
                "`token_embedding` must be a keras.layers.Embedding whose table the head is "
                f"tied to. Received: token_embedding={token_embedding!r}"
            )
        require_positive_int("embedding_dim", embedding_dim)
        self.token_embedding = token_embedding
        self.embedding_dim = embedding_dim
        self.activation = activation
        self.activation_function = get_activation(activation)
        self.layer_norm_epsilon = layer_norm_epsilon
        self.initializer_range = initializer_range
        self.dense = keras.layers.Dense(
            embedding_dim,
            kernel_initializer=keras.initializers.TruncatedNormal(stddev=initializer_range),
            dtype=self.dtype_policy,
            name="dense",
        )
        self.layer_norm = LayerNorm(
            epsilon=layer_norm_epsilon, dtype=self.dtype_policy, name="layer_norm"
        )
        self.logits = TiedLogits(
            lambda: (self.token_embedding.embeddings, self.output_bias), name="logits"
        )

    def build(self, sequence_output_shape, mask_positions_shape=None):
        self.dense.build(sequence_output_shape)
        self.layer_norm.build((*sequence_output_shape[:-1], self.embedding_dim))
        self.output_bias = self.add_weight(
            shape=(self.token_embedding.input_dim,), initializer="zeros", name="output_bias"
        )

    def call(self, sequence_output, mask_positions):
        # (batch, num_masked, H): the hidden states at the masked positions only.
        x = gather_positions(sequence_output, mask_positions)
        x = self.layer_norm(self.activation_function(self.dense(x)))  # (batch, num_masked, E)
        return self.logits(x)  # (batch, num_masked, V), float32 (layers/logits.py)

    def compute_output_shape(self, sequence_output_shape, mask_positions_shape):
        return (*mask_positions_shape, self.token_embedding.input_dim)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "embedding_dim": self.embedding_dim,
                "activation": self.activation,
                "layer_norm_epsilon": self.layer_norm_epsilon,
                "initializer_range": self.initializer_range,
            }
        )
        return config
