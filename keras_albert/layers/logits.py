"""Logits in float32 under every policy: the heads' last projections.

Under `mixed_bfloat16` a Dense layer of the model's policy reads its kernel rounded to bfloat16
and rounds its output to bfloat16 too: 8 bits of mantissa, so a logit of 10 is off by up to
0.02 before the softmax and the loss see it, and a 30,000-way masked-LM softmax sees that at
every position. The heads' last projections are small (a few outputs per position, or the masked
positions only), so they compute in float32 whatever the model's policy: the features come in
at the compute dtype and are cast up, the weights read unrounded, and the logits leave float32,
as the losses want them.
"""

import keras
from keras import ops

LOGITS_DTYPE = "float32"


def logits_dense(units, initializer_range=0.02, name=None, use_bias=True) -> keras.layers.Dense:
    """A head's output projection to `units` logits, computed in float32 (`LOGITS_DTYPE`)."""
    return keras.layers.Dense(
        units,
        use_bias=use_bias,
        kernel_initializer=keras.initializers.TruncatedNormal(stddev=initializer_range),
        dtype=LOGITS_DTYPE,
        name=name,
    )


class TiedLogits(keras.layers.Layer):
    """`x · tableᵀ + bias` in float32, where `read_weights()` returns the (V, E) table and the
    (V,) bias, which another layer owns: a float32 layer of its own, because within a 16-bit
    layer's call every float32 variable reads rounded to the compute dtype."""

    def __init__(self, read_weights, **kwargs):
        super().__init__(dtype=LOGITS_DTYPE, **kwargs)
        self._read_weights = read_weights  # a function: its variables stay their owner's

    def call(self, x):
        table, bias = (ops.cast(weight, LOGITS_DTYPE) for weight in self._read_weights())
        return ops.matmul(x, ops.transpose(table)) + bias
