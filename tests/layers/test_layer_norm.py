"""`LayerNorm`: Keras's LayerNormalization with the same weights, in the order TensorFlow fuses."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_albert.layers.layer_norm import FUSED_MIN_ROWS, LayerNorm, constant_weights
from tests.layers.served_kernels import (
    ONEDNN_BFLOAT16,
    assert_within_eigen_layer_norm,
    served_kernels,
)

FEW, MANY = (2, 7), (2, FUSED_MIN_ROWS)  # rows below the fused kernel's threshold, and above


def _pair(dtype, width=48, rows=FEW):
    rng = np.random.default_rng(3)
    x = rng.normal(0.5, 2.0, (*rows, width)).astype("float32")
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


def _as_float32(x):
    return np.asarray(keras.ops.cast(x, "float32"))


def _dynamic(layer):
    spec = tf.TensorSpec([None, None, layer.gamma.shape[0]], "float32")
    return tf.function(layer, input_signature=[spec])


def _assert_one_rounding_apart(actual, reference, dtype):
    # Both compute in float32 and round the result once to 16 bits: at most one unit apart.
    step = 2.0**-7 if "bfloat16" in dtype else 2.0**-10
    assert np.all(np.abs(actual - reference) <= step * np.maximum(np.abs(reference), 1.0))
    assert np.abs(actual - reference).max() < 0.05


def _assert_served_fused_form(served, layer, theirs, x):
    # oneDNN's kernel computes in float32 and rounds once; Eigen's kernels (without oneDNN)
    # round every step of the fused form to bfloat16.
    if ONEDNN_BFLOAT16:
        _assert_one_rounding_apart(served, _as_float32(theirs(x)), "bfloat16")
    else:
        weights = [_as_float32(weight) for weight in (layer.gamma, layer.beta)]
        rounded = _as_float32(keras.ops.cast(x, "bfloat16"))  # the layer's own input
        assert_within_eigen_layer_norm(served, rounded, *weights, layer.epsilon)


@pytest.mark.parametrize("dtype", ["bfloat16", "mixed_bfloat16", "mixed_float16"])
def test_16_bit_compute_equals_keras_to_its_rounding(dtype):
    x, (ours, theirs) = _pair(dtype, rows=MANY)
    assert ours(x).dtype == theirs(x).dtype
    _assert_one_rounding_apart(_as_float32(ours(x)), _as_float32(theirs(x)), dtype)


@pytest.mark.parametrize("dtype", ["bfloat16", "mixed_float16"])
def test_16_bit_compute_of_few_rows_is_keras_exactly(dtype):
    x, (ours, theirs) = _pair(dtype, rows=FEW)
    np.testing.assert_array_equal(_as_float32(ours(x)), _as_float32(theirs(x)))


@pytest.mark.parametrize("rows", [FEW, MANY, (1, FUSED_MIN_ROWS - 1), (1, FUSED_MIN_ROWS)])
def test_rows_known_only_when_run_choose_the_same_way(rows):
    x, (ours, theirs) = _pair("bfloat16", rows=rows)
    dynamic = _as_float32(_dynamic(ours)(x))
    np.testing.assert_array_equal(dynamic, _as_float32(ours(x)))
    if np.prod(rows) < FUSED_MIN_ROWS:
        np.testing.assert_array_equal(dynamic, _as_float32(theirs(x)))
    _assert_one_rounding_apart(dynamic, _as_float32(theirs(x)), "bfloat16")


def test_served_many_rows_run_one_fused_kernel_and_few_rows_keras_graph():
    x, (layer, theirs) = _pair("bfloat16", width=64, rows=MANY)
    many, result = served_kernels(layer, x)
    if ONEDNN_BFLOAT16:
        assert "_MklLayerNorm" in many and "Rsqrt" not in many, sorted(many)
    else:  # Eigen has no LayerNorm kernel: the fused form's element-wise kernels
        assert "_MklLayerNorm" not in many and "Rsqrt" in many, sorted(many)
    _assert_served_fused_form(_as_float32(result), layer, theirs, x)
    few, result = served_kernels(layer, x[:, :3])
    assert "_MklLayerNorm" not in few and "Rsqrt" in few, sorted(few)
    np.testing.assert_array_equal(_as_float32(result), _as_float32(theirs(x[:, :3])))


def test_other_axes_fall_back_to_keras():
    x = np.random.default_rng(0).normal(size=(2, 5, 6)).astype("float32")
    ours = LayerNorm(axis=1, dtype="bfloat16")
    theirs = keras.layers.LayerNormalization(axis=1, dtype="bfloat16")
    np.testing.assert_array_equal(
        np.asarray(keras.ops.cast(ours(x), "float32")),
        np.asarray(keras.ops.cast(theirs(x), "float32")),
    )


@pytest.mark.parametrize("rows", [FEW, MANY])
def test_gradients_of_constant_weights_outside_serving_equal_keras(rows):
    # γ and β as constants a tape watches (a stateless train step): not replaced by copies.
    x, (ours, theirs) = _pair("mixed_bfloat16", rows=rows)
    spec = tf.TensorSpec([None, None, x.shape[-1]], "float32")

    def gradients(layer):
        values = layer.get_weights()

        @tf.function(input_signature=[spec])
        def step(x):
            weights = [tf.constant(value) for value in values]
            with tf.GradientTape() as tape:
                tape.watch(weights)
                outputs, _ = layer.stateless_call(weights, [], x)
                loss = tf.reduce_sum(tf.cast(outputs, "float32") * tf.range(1.0, 1.0 + x.shape[-1]))
            return tape.gradient(loss, weights)

        return [np.asarray(g) for g in step(x)]

    for ours_gradient, keras_gradient in zip(gradients(ours), gradients(theirs), strict=True):
        np.testing.assert_allclose(ours_gradient, keras_gradient, rtol=2e-2, atol=1e-3 * x.size)
        assert np.abs(ours_gradient).max() > 1.0


def test_served_bfloat16_fused_kernel_takes_the_bfloat16_rows_without_casts():
    # Served in bfloat16, the fused branch computes on the bfloat16 rows and γ, β themselves;
    # oneDNN's kernel computes in float32 inside and rounds once.
    x, (layer, theirs) = _pair("bfloat16", width=64, rows=MANY)
    kernels, served = served_kernels(layer, x)
    assert ("_MklLayerNorm" in kernels) == ONEDNN_BFLOAT16, sorted(kernels)
    _assert_served_fused_form(_as_float32(served), layer, theirs, x)
    spec = tf.TensorSpec([None, None, 64], "bfloat16")
    with constant_weights():
        graph = tf.function(layer).get_concrete_function(spec).graph
    # ops.cond(fewer than FUSED_MIN_ROWS, Keras's graph, the fused one): the false branch
    (fused,) = [f.graph for name, f in graph._functions.items() if "cond_false" in name]
    types = {op.type for op in fused.get_operations()}
    assert "Cast" not in types and "Rsqrt" in types, sorted(types)
