"""The kernels TensorFlow runs for a layer served as keras_albert serves models.

Which kernels run depends on whether TensorFlow runs oneDNN's graph rewrite (`ONEDNN`, as
TensorFlow decides in this process: on by default on AVX512-VNNI/BF16, AVX-VNNI and AMX CPUs,
off on AVX2-only ones). Tests assert the kernels of both kinds; `tests/test_every_cpu.py` runs
the modules that do once more with the rewrite switched the other way, so that a machine of
either kind checks both.
"""

import keras
import numpy as np
import tensorflow as tf

from keras_albert.cpu import onednn_enabled, onednn_runs_bfloat16
from keras_albert.serving.precision import ModelCall

ONEDNN = onednn_enabled()
# Whether oneDNN's kernels take the bfloat16 ops too (AVX-512 CPUs); without, Eigen's run them.
ONEDNN_BFLOAT16 = onednn_runs_bfloat16()
# A Dense multiply with its bias (and, with oneDNN, its GELU) in one kernel.
FUSED_MATMUL = "_MklNativeFusedMatMul" if ONEDNN else "_FusedMatMul"

# bfloat16 keeps 8 significant bits: rounding to nearest moves a value by at most half a unit
# in the last place, 2^-8 of its magnitude (its unit roundoff).
BFLOAT16_UNIT_ROUNDOFF = 2.0**-8
# Without oneDNN, a bfloat16 LayerNorm served in its fused form `x·g + (β − g·mean)`,
# `g = γ / sqrt(var + ε)`, runs as Eigen's element-wise kernels, each rounding to bfloat16: the
# mean, the squared differences, their mean, + ε, rsqrt and ·γ (g to within ≈ 4.5 roundings),
# then x·g, g·mean, β − g·mean and the sum. Error bound: this many unit roundoffs of the terms'
# magnitude |x·g| + |g·mean| (measured: 3.3 at width 64).
EIGEN_LAYER_NORM_ROUNDINGS = 8
# Eigen's bfloat16 softmax rounds `s − max(s)` (an error of u·|s − max| in the exponent, that
# much relative error in exp), exp, a pairwise sum (log2(keys) roundings) and the division:
# |p̂ − p| ≤ u·p·(|s − max| + EIGEN_SOFTMAX_ROUNDINGS + log2(keys)) (measured: 0.84 of it).
EIGEN_SOFTMAX_ROUNDINGS = 3


def assert_within_eigen_layer_norm(actual, x, gamma, beta, epsilon):
    """`actual` (served bfloat16, without oneDNN) within `EIGEN_LAYER_NORM_ROUNDINGS` of the
    exact LayerNorm of the bfloat16 `x`, computed in float64."""
    x = np.asarray(x, "float64")
    mean = x.mean(-1, keepdims=True)
    scale = np.asarray(gamma, "float64") / np.sqrt(x.var(-1, keepdims=True) + epsilon)
    exact = x * scale + (np.asarray(beta, "float64") - scale * mean)
    magnitude = np.abs(x * scale) + np.abs(scale * mean)
    bound = EIGEN_LAYER_NORM_ROUNDINGS * BFLOAT16_UNIT_ROUNDOFF * magnitude
    assert np.all(np.abs(actual - exact) <= bound), np.max(np.abs(actual - exact) / bound)


def assert_within_eigen_softmax(actual, scores):
    """`actual` (served bfloat16, without oneDNN) within Eigen's bfloat16 softmax bound of the
    exact softmax of the bfloat16 `scores` over the last axis, computed in float64."""
    scores = np.asarray(scores, "float64")
    shifted = scores - scores.max(-1, keepdims=True)
    exact = np.exp(shifted) / np.exp(shifted).sum(-1, keepdims=True)
    roundings = np.abs(shifted) + EIGEN_SOFTMAX_ROUNDINGS + np.log2(scores.shape[-1])
    bound = BFLOAT16_UNIT_ROUNDOFF * exact * roundings
    assert np.all(np.abs(actual - exact) <= bound), np.max(np.abs(actual - exact) / bound)


def served_kernels(layer, x):
    """Runs `layer(x)` with its weights graph constants (`ModelCall`), every dimension but
    the last unknown until run, in a v1 session (as TF Serving runs a SavedModel); returns
    the set of kernels that ran and the result."""
    spec = tf.TensorSpec([None] * (x.ndim - 1) + [x.shape[-1]], "float32")
    inputs = keras.Input(spec.shape[1:], name="x")
    call = ModelCall(
        keras.Model(inputs, layer(inputs)),
        lambda features: layer(tf.ensure_shape(features["x"], spec.shape)),  # width known
    )
    function = tf.function(lambda x: call({"x": x})).get_concrete_function(spec)
    with tf.Graph().as_default() as graph:
        tf.graph_util.import_graph_def(function.graph.as_graph_def(), name="")
        session = tf.compat.v1.Session(graph=graph)
        metadata = tf.compat.v1.RunMetadata()
        options = tf.compat.v1.RunOptions(trace_level=tf.compat.v1.RunOptions.FULL_TRACE)
        result = session.run(
            function.outputs[0].name,
            {function.inputs[0].name: x},
            options=options,
            run_metadata=metadata,
        )
    kernels = {
        node.timeline_label.split("=")[-1].split("(")[0].strip()
        for device in metadata.step_stats.dev_stats
        for node in device.node_stats
    }
    return kernels, result
