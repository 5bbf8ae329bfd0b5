"""LayerNorm over the last axis, written so that TensorFlow can fuse it when served in 16 bits."""

import keras
from keras import ops

_FUSED_DTYPES = ("bfloat16", "float16")


@keras.saving.register_keras_serializable(package="keras_albert")
class LayerNorm(keras.layers.LayerNormalization):
    """`keras.layers.LayerNormalization` (same weights and names); under a 16-bit compute
    dtype computed as `x·g + (β − g·mean)` with `g = γ / sqrt(var + ε)`, in float32.

    Keras's own graph (`x·g + (−mean·g + β)`) is the same arithmetic in an order TensorFlow's
    oneDNN graph rewrite does not recognize; this order, with the reduction axis written as a
    non-negative index, it fuses into one `_MklLayerNorm` kernel where the weights are graph
    constants (as served: `keras_albert.export.precision.ModelCall`) instead of about ten
    element-wise ops. That kernel differs from the exact float32 result by up to ≈ 5e-4
    (measured, width 64 and 768): far below bfloat16's own rounding (≈ 4e-3 relative), too far
    for a float32 model, which keeps Keras's graph. Anything but the last axis with centering
    and scaling (ALBERT's only use) falls back to Keras's implementation too.

    Example:
    >>> LayerNorm(epsilon=1e-12)(ops.ones((1, 3, 8))).shape
    (1, 3, 8)
    """

    def call(self, inputs):
        rank = len(inputs.shape)
        axes = self.axis if isinstance(self.axis, (list, tuple)) else [self.axis]
        if (
            keras.backend.standardize_dtype(self.compute_dtype) not in _FUSED_DTYPES
            or self.rms_scaling
            or not (self.center and self.scale)
            or [axis % rank for axis in axes] != [rank - 1]
        ):
            return super().call(inputs)
        x = ops.cast(inputs, "float32")
        mean, variance = ops.moments(x, axes=[rank - 1], keepdims=True)
        scale = ops.rsqrt(variance + self.epsilon) * ops.cast(self.gamma, "float32")
        outputs = x * scale + (ops.cast(self.beta, "float32") - scale * mean)
        return ops.cast(outputs, self.compute_dtype)
