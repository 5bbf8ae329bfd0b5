"""`gelu_approximate`: the original ALBERT GELU, in the order TensorFlow fuses when served."""

import keras
import numpy as np
import pytest

from keras_albert.layers.activations import gelu_approximate, get_activation
from keras_albert.layers.transformer_encoder import FeedForward
from tests.layers.served_kernels import ONEDNN, ONEDNN_BFLOAT16, served_kernels


def _reference(x):  # the original ALBERT `gelu`, in float64
    x = np.asarray(x, "float64")
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x**3)))


def test_equals_the_original_formula_and_keras():
    x = np.concatenate([np.linspace(-12, 12, 2001), [-80.0, -0.0, 0.0, 80.0]]).astype("float32")
    ours = np.asarray(gelu_approximate(x))
    np.testing.assert_allclose(ours, _reference(x), rtol=1e-6, atol=1e-6)
    keras_gelu = np.asarray(keras.activations.gelu(x, approximate=True))
    np.testing.assert_allclose(ours, keras_gelu, rtol=1e-6, atol=1e-6)
    assert get_activation("gelu_approximate") is gelu_approximate


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_served_feed_forward_runs_it_inside_the_multiply_where_onednn_runs(dtype):
    rng = np.random.default_rng(0)
    layer = FeedForward(intermediate_dim=32, dtype=dtype)
    x = rng.normal(size=(2, 3, 16)).astype("float32")
    layer.build(x.shape)
    # Trained-like weights: a zero bias is folded away, and then nothing is fused.
    layer.set_weights([rng.normal(0, 0.5, w.shape) + (w.ndim == 1) for w in layer.get_weights()])
    kernels, result = served_kernels(layer, x)
    # oneDNN takes bfloat16 ops only on AVX-512 CPUs (`ONEDNN_BFLOAT16`).
    if ONEDNN if dtype == "float32" else ONEDNN_BFLOAT16:  # bias and GELU inside the multiply
        assert "Tanh" not in kernels and "_MklNativeFusedMatMul" in kernels, sorted(kernels)
    elif dtype == "float32":  # Eigen fuses the bias; TensorFlow fuses GELU only into oneDNN's
        assert {"_FusedMatMul", "Tanh"} <= kernels and "BiasAdd" not in kernels, sorted(kernels)
    else:  # Eigen has no fused bfloat16 multiply on the CPU
        assert {"MatMul", "BiasAdd", "Tanh"} <= kernels, sorted(kernels)
    reference = np.asarray(keras.ops.cast(layer(x), "float32"))
    tolerance = 1e-5 if dtype == "float32" else 5e-2
    np.testing.assert_allclose(np.asarray(result, "float32"), reference, atol=tolerance)
