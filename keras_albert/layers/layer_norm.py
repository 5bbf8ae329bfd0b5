"""LayerNorm over the last axis, written so that TensorFlow can fuse it when served in 16 bits."""

import contextlib
import math
import threading

import keras
from keras import ops

if keras.backend.backend() == "tensorflow":
    import tensorflow as tf  # the served graph's exact form

_FUSED_DTYPES = ("bfloat16", "float16")
# The fused kernel builds its oneDNN primitives on every call: about 0.1 ms however few the
# rows. Below this many rows Keras's element-wise graph is faster (measured, width 768, in
# bfloat16: 43 vs 119 µs at 20 rows, 156 vs 172 at 64, 433 vs 175 at 128, 881 vs 331 at 1024).
FUSED_MIN_ROWS = 64

_serving = threading.local()


@contextlib.contextmanager
def constant_weights():
    """Within it (while `keras_albert.serving.precision.ModelCall` traces a served model, whose
    weights are graph constants), a `LayerNorm` writes γ and β into its conditional's fused
    branch as constants of the branch: the one form TensorFlow's rewrite fuses. Nowhere else:
    a copy is not differentiable, and γ and β may be constants that a gradient tape watches."""
    depth = getattr(_serving, "depth", 0)
    _serving.depth = depth + 1
    try:
        yield
    finally:
        _serving.depth = depth


def served() -> bool:
    """Whether a served model is being traced (within `constant_weights`): where the layers
    may take a form only TensorFlow's served (oneDNN) kernels compute exactly."""
    return bool(getattr(_serving, "depth", 0))


def normalization_dtype(compute_dtype) -> str:
    """The dtype in which a LayerNorm and the attention softmax take their inputs: float32,
    except when served in bfloat16 (`served`), where it is bfloat16 itself.

    TensorFlow's oneDNN kernels for both (`_MklLayerNorm`, `_MklSoftmax`) take bfloat16 and
    compute in float32 inside, rounding once: the softmax's probabilities are bit for bit the
    float32 softmax's rounded (tests/layers/test_layers.py), the fused LayerNorm's equal
    oneDNN's float32 kernel rounded (measured at 10,752 × 768), and the activations are not
    cast to float32 and back around them (a served 28 × 384 ALBERT-base call 2,636 → 2,317 ms;
    docs/guides/precision_and_speed.md). Training, float16 and float32 keep float32. A bfloat16
    export served by TensorFlow without oneDNN (`TF_ENABLE_ONEDNN_OPTS=0`, non-x86 hosts) runs
    Eigen's kernels instead, which accumulate in bfloat16: softmax probabilities within ~3 % of
    float32's, rows summing to 1 within ~1.5 % (measured, 384 keys).
    """
    dtype = keras.backend.standardize_dtype(compute_dtype)
    return dtype if served() and dtype == "bfloat16" else "float32"


@keras.saving.register_keras_serializable(package="keras_albert")
class LayerNorm(keras.layers.LayerNormalization):
    """`keras.layers.LayerNormalization` (same weights and names); under a 16-bit compute
    dtype, for `FUSED_MIN_ROWS` rows (positions) or more, computed as `x·g + (β − g·mean)`
    with `g = γ / sqrt(var + ε)`, in float32.

    Keras's own graph (`x·g + (−mean·g + β)`) is the same arithmetic in an order TensorFlow's
    oneDNN graph rewrite does not recognize; this order, with the axis written non-negative, it
    fuses into one `_MklLayerNorm` kernel where γ and β are graph constants (as served:
    `keras_albert.serving.precision.ModelCall`) instead of about ten element-wise ops. That
    kernel pays a fixed ~0.1 ms per call, so fewer rows (a served sentence) keep Keras's graph;
    where the row count is only known when run, a conditional chooses, and, served
    (`constant_weights`), γ and β are written into its branch as constants again. The kernel
    differs from the exact float32 result by up to ≈ 5e-4 (measured, width 64 and 768): far
    below bfloat16's own rounding (≈ 4e-3 relative), too far for a float32 model, which keeps
    Keras's graph. Anything but the last axis with centering and scaling (ALBERT's only use)
    falls back to Keras's graph too, as does every call on JAX and PyTorch (the rewrite is
    TensorFlow's).

    Example:
    >>> from keras import ops
    >>> from keras_albert.layers.layer_norm import LayerNorm
    >>> tuple(LayerNorm(epsilon=1e-12)(ops.ones((1, 3, 8))).shape)
    (1, 3, 8)
    """

    def call(self, inputs):
        rank = len(inputs.shape)
        axes = self.axis if isinstance(self.axis, (list, tuple)) else [self.axis]
        if (
            keras.backend.backend() != "tensorflow"
            or keras.backend.standardize_dtype(self.compute_dtype) not in _FUSED_DTYPES
            or self.rms_scaling
            or not (self.center and self.scale)
            or [axis % rank for axis in axes] != [rank - 1]
        ):
            return super().call(inputs)
        if None not in inputs.shape:  # the row count is known when traced: choose once
            if math.prod(inputs.shape[:-1]) < FUSED_MIN_ROWS:
                return super().call(inputs)
            return self._fused(inputs, *self._fused_weights())
        # A branch sees the enclosing graph's constants as inputs, which the rewrite does not
        # fuse: served, their values are written into the branch as its own constants.
        weights = self._fused_weights()
        values = [None, None]
        if served():
            values = [tf.get_static_value(weight) for weight in weights]

        def fused():
            constants = (
                weight if value is None else ops.convert_to_tensor(value)
                for weight, value in zip(weights, values, strict=True)
            )
            return self._fused(inputs, *constants)

        return ops.cond(
            ops.cast(ops.size(inputs), "int64") // self.gamma.shape[0] < FUSED_MIN_ROWS,
            lambda: super(LayerNorm, self).call(inputs),
            fused,
        )

    def _fused_weights(self):
        dtype = normalization_dtype(self.compute_dtype)
        return ops.cast(self.gamma, dtype), ops.cast(self.beta, dtype)

    def _fused(self, inputs, gamma, beta):
        x = ops.cast(inputs, normalization_dtype(self.compute_dtype))
        axes = [len(inputs.shape) - 1]
        if x.dtype == "float32":
            mean, variance = ops.moments(x, axes=axes, keepdims=True)
        else:  # Keras's `moments` would cast 16 bits to float32 and back, which is not fused
            mean, variance = tf.nn.moments(x, axes=axes, keepdims=True)
        scale = ops.rsqrt(variance + ops.convert_to_tensor(self.epsilon, x.dtype)) * gamma
        outputs = x * scale + (beta - scale * mean)
        return ops.cast(outputs, self.compute_dtype)
