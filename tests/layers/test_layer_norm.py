"""`LayerNorm`: Keras's LayerNormalization with the same weights, in the order TensorFlow fuses."""

import keras
import numpy as np
import pytest

from keras_albert.layers.layer_norm import LayerNorm


def _pair(dtype, width=48):
    rng = np.random.default_rng(3)
    x = rng.normal(0.5, 2.0, (2, 7, width)).astype("float32")
    weights = [1 + rng.normal(0, 0.1, width), rng.normal(0, 0.1, width)]
    layers = []
    for layer in (
        LayerNorm(epsilon=1e-12, dtype=dtype, name="layer_norm"),
        keras.layers.LayerNormalization(epsilon=1e-12, dtype=dtype),
    ):
        layer.build(x.shape)
        layer.set_weights([w.astype(layer.variable_dtype) for w in weights])
        layers.append(layer)
    return x, layers


def test_float32_compute_is_keras_exactly():
    x, (ours, theirs) = _pair("float32")
    assert [w.path for w in ours.weights] == ["layer_norm/gamma", "layer_norm/beta"]
    np.testing.assert_array_equal(np.asarray(ours(x)), np.asarray(theirs(x)))


@pytest.mark.parametrize("dtype", ["bfloat16", "mixed_bfloat16", "mixed_float16"])
def test_16_bit_compute_equals_keras_to_its_rounding(dtype):
    x, (ours, theirs) = _pair(dtype)
    reference = np.asarray(keras.ops.cast(theirs(x), "float32"))
    actual = np.asarray(keras.ops.cast(ours(x), "float32"))
    assert ours(x).dtype == theirs(x).dtype
    # Both compute in float32 and round the result once to 16 bits: at most one unit apart.
    step = 2.0**-7 if "bfloat16" in dtype else 2.0**-10
    assert np.all(np.abs(actual - reference) <= step * np.maximum(np.abs(reference), 1.0))
    assert np.abs(actual - reference).max() < 0.05


def test_other_axes_fall_back_to_keras():
    x = np.random.default_rng(0).normal(size=(2, 5, 6)).astype("float32")
    ours = LayerNorm(axis=1, dtype="bfloat16")
    theirs = keras.layers.LayerNormalization(axis=1, dtype="bfloat16")
    np.testing.assert_array_equal(
        np.asarray(keras.ops.cast(ours(x), "float32")),
        np.asarray(keras.ops.cast(theirs(x), "float32")),
    )
