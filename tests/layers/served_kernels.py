"""The kernels TensorFlow runs for a layer served as keras_albert serves models."""

import os
import platform

import keras
import pytest
import tensorflow as tf

from keras_albert.serving.precision import ModelCall

needs_onednn = pytest.mark.skipif(
    os.environ.get("TF_ENABLE_ONEDNN_OPTS") == "0" or platform.machine() != "x86_64",
    reason="fused kernels come from TensorFlow's oneDNN graph rewrite (x86-64, on by default)",
)


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
