"""One post-LayerNorm transformer block (BERT/ALBERT), split in its two residual halves.

The halves are separate layers so that a model can share one and not the other (the
ALBERT paper's sharing ablation, Table 4); `TransformerEncoder` is the usual whole block.
"""

import math

import keras
from keras import ops

from keras_albert.layers.activations import get_activation
from keras_albert.layers.dropout import ReplicaDropout
from keras_albert.layers.layer_norm import LayerNorm, normalization_dtype
from keras_albert.layers.remat import Rematerialized
from keras_albert.validation import (
    require_divisible,
    require_positive_int,
    require_rate,
)

# Added to the scores of padded keys, as the original (`(1 - mask) * -10000.0`).
_MASKED_SCORE = -10000.0


def _dense(units, initializer_range, dtype, name):
    return keras.layers.Dense(
        units,
        kernel_initializer=keras.initializers.TruncatedNormal(stddev=initializer_range),
        dtype=dtype,
        name=name,
    )


def _tokens(x):
    """(batch, seq, H) -> (batch * seq, H). A Dense layer on a 2-D input is one MatMul + bias,
    which TensorFlow's CPU graph rewrites fuse into one oneDNN kernel (with constant weights,
    as served, `keras_albert.serving.precision.ModelCall`); on a 3-D input Keras reshapes around
    the MatMul and the bias add stays a separate op."""
    return ops.reshape(x, (-1, ops.shape(x)[-1]))


@keras.saving.register_keras_serializable(package="keras_albert")
class SelfAttention(Rematerialized):
    """Multi-head self-attention with its residual and LayerNorm: LN(x + drop(W_o·attn(x))).

    Scores are q·kᵀ / sqrt(head_dim); padded keys get -10000 before the softmax, which is
    computed in float32 under any dtype policy.

    Args:
        num_heads: int, attention heads; must divide the input width.
        dropout: float, dropout on the output projection (the original hidden dropout).
        attention_dropout: float, dropout on the attention probabilities.
        layer_norm_epsilon: float, LayerNorm epsilon.
        initializer_range: float, stddev of the truncated-normal kernel initializer.

    Example:
    >>> from keras import ops
    >>> from keras_albert.layers.transformer_encoder import SelfAttention
    >>> tuple(SelfAttention(num_heads=2)(ops.ones((1, 3, 8)), ops.ones((1, 3), "int32")).shape)
    (1, 3, 8)
    """

    def __init__(
        self,
        num_heads,
        dropout=0.0,
        attention_dropout=0.0,
        layer_norm_epsilon=1e-12,
        initializer_range=0.02,
        **kwargs,
    ):
        super().__init__(**kwargs)
        require_positive_int("num_heads", num_heads)
        require_rate("dropout", dropout)
        require_rate("attention_dropout", attention_dropout)
        self.num_heads = num_heads
        self.dropout = dropout
        self.attention_dropout = attention_dropout
        self.layer_norm_epsilon = layer_norm_epsilon
        self.initializer_range = initializer_range
        self.supports_masking = False

    def build(self, inputs_shape, padding_mask_shape=None):
        hidden_dim = inputs_shape[-1]
        require_divisible("hidden_dim", hidden_dim, "num_heads", self.num_heads)
        self.head_dim = hidden_dim // self.num_heads
        for name in ("query", "key", "value", "output"):
            dense = _dense(hidden_dim, self.initializer_range, self.dtype_policy, name)
            dense.build(inputs_shape)
            setattr(self, f"{name}_dense", dense)
        self.probabilities_dropout = ReplicaDropout(
            self.attention_dropout, dtype=self.dtype_policy, name="probabilities_dropout"
        )
        self.output_dropout = ReplicaDropout(
            self.dropout, dtype=self.dtype_policy, name="output_dropout"
        )
        self.layer_norm = LayerNorm(
            epsilon=self.layer_norm_epsilon, dtype=self.dtype_policy, name="layer_norm"
        )
        self.layer_norm.build(inputs_shape)

    def _split_heads(self, x, batch_size, sequence_length):
        # (batch, seq, H) -> (batch, heads, seq, head_dim)
        x = ops.reshape(x, (batch_size, sequence_length, self.num_heads, self.head_dim))
        return ops.transpose(x, (0, 2, 1, 3))

    def _query_key_value(self, tokens, batch_size, sequence_length):
        """The three projections, each (batch, heads, seq, head_dim).

        One multiply by the three kernels side by side and one transpose, not three of each
        (the same sums; the weights stay three Dense layers, as in the checkpoints): where the
        weights are constants (served, `keras_albert.serving.precision.ModelCall`) TensorFlow
        folds the concatenation away. Quantized or LoRA layers keep their own calls.
        """
        denses = (self.query_dense, self.key_dense, self.value_dense)
        if any(dense.quantization_mode is not None or dense.lora_enabled for dense in denses):
            return [
                self._split_heads(dense(tokens), batch_size, sequence_length) for dense in denses
            ]
        kernel = ops.concatenate([dense.kernel for dense in denses], axis=1)
        bias = ops.concatenate([dense.bias for dense in denses], axis=0)
        projected = ops.matmul(tokens, kernel) + bias  # (batch * seq, 3 * H)
        projected = ops.reshape(
            projected, (batch_size, sequence_length, 3, self.num_heads, self.head_dim)
        )
        return ops.unstack(ops.transpose(projected, (2, 0, 3, 1, 4)), num=3, axis=0)

    def call(self, inputs, padding_mask=None, training=None):
        batch_size, sequence_length = ops.shape(inputs)[0], ops.shape(inputs)[1]
        tokens = _tokens(inputs)
        query, key, value = self._query_key_value(tokens, batch_size, sequence_length)

        query = query * ops.cast(1.0 / math.sqrt(self.head_dim), query.dtype)
        scores = ops.matmul(query, ops.transpose(key, (0, 1, 3, 2)))  # (batch, heads, seq, seq)
        if padding_mask is not None:
            # (batch, 1, 1, seq): every query ignores the padded keys. Added in the compute
            # dtype, before the softmax's cast to float32: a kept key's score is unchanged (+0)
            # and a padded one's exponent underflows to 0 in any dtype, so the probabilities are
            # the same, and served TensorFlow fuses the add into the multiply's kernel.
            keep = ops.cast(padding_mask, scores.dtype)[:, None, None, :]
            scores = scores + (1.0 - keep) * ops.cast(_MASKED_SCORE, scores.dtype)
        probabilities = self._softmax(scores)
        probabilities = self.probabilities_dropout(probabilities, training=training)

        context = ops.matmul(probabilities, value)  # (batch, heads, seq, head_dim)
        context = ops.reshape(ops.transpose(context, (0, 2, 1, 3)), ops.shape(tokens))
        attention_output = self.output_dropout(self.output_dense(context), training=training)
        return self.layer_norm(ops.reshape(tokens + attention_output, ops.shape(inputs)))

    def _softmax(self, scores):
        """The attention probabilities in the compute dtype, computed in float32: the scores
        cast to `normalization_dtype` (float32, or bfloat16 as served, for oneDNN's kernel)."""
        dtype = normalization_dtype(self.compute_dtype)
        probabilities = ops.softmax(ops.cast(scores, dtype), axis=-1)
        return ops.cast(probabilities, self.compute_dtype)

    def compute_output_shape(self, inputs_shape, padding_mask_shape=None):
        return inputs_shape

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_heads": self.num_heads,
                "dropout": self.dropout,
                "attention_dropout": self.attention_dropout,
                "layer_norm_epsilon": self.layer_norm_epsilon,
                "initializer_range": self.initializer_range,
            }
        )
        return config


@keras.saving.register_keras_serializable(package="keras_albert")
class FeedForward(Rematerialized):
    """Position-wise feed-forward with its residual and LayerNorm: LN(x + drop(W2·act(W1·x))).

    Args:
        intermediate_dim: int, width of the inner layer.
        activation: str, one of "gelu_approximate" (the original ALBERT "gelu"), "gelu"
            (exact erf form), "relu", "tanh", "silu".
        dropout: float, dropout on the output.
        layer_norm_epsilon: float, LayerNorm epsilon.
        initializer_range: float, stddev of the truncated-normal kernel initializer.

    Example:
    >>> from keras import ops
    >>> from keras_albert.layers.transformer_encoder import FeedForward
    >>> tuple(FeedForward(intermediate_dim=16)(ops.ones((1, 3, 8))).shape)
    (1, 3, 8)
    """

    def __init__(
        self,
        intermediate_dim,
        activation="gelu_approximate",
        dropout=0.0,
        layer_norm_epsilon=1e-12,
        initializer_range=0.02,
        **kwargs,
    ):
        super().__init__(**kwargs)
        require_positive_int("intermediate_dim", intermediate_dim)
        require_rate("dropout", dropout)
        self.activation_function = get_activation(activation)
        self.intermediate_dim = intermediate_dim
        self.activation = activation
        self.dropout = dropout
        self.layer_norm_epsilon = layer_norm_epsilon
        self.initializer_range = initializer_range

    def build(self, inputs_shape):
        hidden_dim = inputs_shape[-1]
        self.intermediate_dense = _dense(
            self.intermediate_dim, self.initializer_range, self.dtype_policy, "intermediate"
        )
        self.intermediate_dense.build(inputs_shape)
        self.output_dense = _dense(hidden_dim, self.initializer_range, self.dtype_policy, "output")
        self.output_dense.build((*inputs_shape[:-1], self.intermediate_dim))
        self.output_dropout = ReplicaDropout(
            self.dropout, dtype=self.dtype_policy, name="output_dropout"
        )
        self.layer_norm = LayerNorm(
            epsilon=self.layer_norm_epsilon, dtype=self.dtype_policy, name="layer_norm"
        )
        self.layer_norm.build(inputs_shape)

    def call(self, inputs, training=None):
        tokens = _tokens(inputs)
        x = self.activation_function(self.intermediate_dense(tokens))  # (tokens, I)
        x = self.output_dropout(self.output_dense(x), training=training)
        return self.layer_norm(ops.reshape(tokens + x, ops.shape(inputs)))

    def compute_output_shape(self, inputs_shape):
        return inputs_shape

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "intermediate_dim": self.intermediate_dim,
                "activation": self.activation,
                "dropout": self.dropout,
                "layer_norm_epsilon": self.layer_norm_epsilon,
                "initializer_range": self.initializer_range,
            }
        )
        return config


@keras.saving.register_keras_serializable(package="keras_albert")
class TransformerEncoder(Rematerialized):
    """One post-LayerNorm transformer encoder block: `FeedForward(SelfAttention(x))`.

    This layer knows nothing of sharing: ALBERT shares it by calling the same object at
    several depths (see `AlbertBackbone`).

    Args:
        num_heads: int, attention heads.
        intermediate_dim: int, feed-forward inner width.
        activation: str, feed-forward activation (see `FeedForward`).
        dropout: float, dropout after the attention and feed-forward outputs.
        attention_dropout: float, dropout on the attention probabilities.
        layer_norm_epsilon: float, LayerNorm epsilon (the original uses 1e-12).
        initializer_range: float, stddev of the truncated-normal kernel initializer.

    Example:
    >>> from keras import ops
    >>> from keras_albert.layers.transformer_encoder import TransformerEncoder
    >>> block = TransformerEncoder(num_heads=2, intermediate_dim=16)
    >>> tuple(block(ops.ones((1, 3, 8)), ops.ones((1, 3), "int32")).shape)
    (1, 3, 8)
    """

    def __init__(
        self,
        num_heads,
        intermediate_dim,
        activation="gelu_approximate",
        dropout=0.0,
        attention_dropout=0.0,
        layer_norm_epsilon=1e-12,
        initializer_range=0.02,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.num_heads = num_heads
        self.intermediate_dim = intermediate_dim
        self.activation = activation
        self.dropout = dropout
        self.attention_dropout = attention_dropout
        self.layer_norm_epsilon = layer_norm_epsilon
        self.initializer_range = initializer_range
        self.attention = SelfAttention(
            num_heads,
            dropout=dropout,
            attention_dropout=attention_dropout,
            layer_norm_epsilon=layer_norm_epsilon,
            initializer_range=initializer_range,
            dtype=self.dtype_policy,
            name="attention",
        )
        self.feedforward = FeedForward(
            intermediate_dim,
            activation=activation,
            dropout=dropout,
            layer_norm_epsilon=layer_norm_epsilon,
            initializer_range=initializer_range,
            dtype=self.dtype_policy,
            name="feedforward",
        )

    def build(self, inputs_shape, padding_mask_shape=None):
        self.attention.build(inputs_shape)
        self.feedforward.build(inputs_shape)

    def call(self, inputs, padding_mask=None, training=None):
        x = self.attention(inputs, padding_mask=padding_mask, training=training)
        return self.feedforward(x, training=training)

    def compute_output_shape(self, inputs_shape, padding_mask_shape=None):
        return inputs_shape

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_heads": self.num_heads,
                "intermediate_dim": self.intermediate_dim,
                "activation": self.activation,
                "dropout": self.dropout,
                "attention_dropout": self.attention_dropout,
                "layer_norm_epsilon": self.layer_norm_epsilon,
                "initializer_range": self.initializer_range,
            }
        )
        return config
