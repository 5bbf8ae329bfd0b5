"""How many kernels one pass of the shared block costs when served, counted, so that a change
which breaks a fusion (a Dense multiply no longer fused with its bias or its GELU, the
bfloat16 LayerNorm no longer fused at 64 rows or more, Q/K/V back to three multiplies) or adds
per-pass bookkeeping fails here instead of going unnoticed until a benchmark.

The SavedModel is loaded with the TF1 session loader, as TF Serving loads it (Grappler and the
oneDNN rewrites run at load), and run once with a full trace; the kernels of one pass are the
difference between the 2-pass and the 1-pass export of the same weights. At batch 1 (17
tokens) the served time is the X, and each extra kernel is
a few microseconds more per pass.
"""

import collections

import numpy as np
import pytest
import tensorflow as tf
from tensorflow.core.protobuf import config_pb2

from keras_albert import AlbertBackbone, AlbertClassifier
from keras_albert.cpu import cpu_features
from keras_albert.export import export_saved_model
from keras_albert.text.tokenizer import AlbertTokenizer
from tests.layers.served_kernels import FUSED_MATMUL, ONEDNN
from tests.text.text_data import ALBERT_MODEL

SIZES = dict(
    vocabulary_size=30000,
    embedding_dim=16,
    hidden_dim=64,
    intermediate_dim=128,
    num_heads=4,
    max_sequence_length=128,
)
# Kernels per pass of the block by precision and (batch, length), as counted when this test was
# written (AMD EPYC, AVX-512, AVX512-BF16, TF 2.21): float32 54 at any row count (two
# element-wise LayerNorms of about ten kernels each); bfloat16 92 at 17 rows (the LayerNorm's
# conditional on the row count adds its branch kernels, and every bfloat16 ↔ float32 cast is
# one) and 62 at 1,024 rows (each LayerNorm one fused kernel). Since 2026-11-26 the softmax and
# the fused LayerNorms take their bfloat16 inputs without casts, and the residual is added to
# the feed-forward's 2-D output, which the multiply's kernel fuses: float32 53, bfloat16 89
# and 55. Without oneDNN's rewrite (AVX2-only CPUs by default, or TF_ENABLE_ONEDNN_OPTS=0),
# Eigen's kernels, counted on an Intel Sapphire Rapids with TF_ENABLE_ONEDNN_OPTS=0 (2026-11-29):
# float32 64 (three multiplies take their bias into `_FusedMatMul`, the fourth's bias joins the
# residual's sum; GELU's tanh and the element-wise LayerNorms are kernels of their own),
# bfloat16 105 and 95 (Eigen has no fused bfloat16 multiply on the CPU: MatMul then BiasAdd;
# no LayerNorm kernel either, so the fused form's element-wise kernels run).
# The budget is the count itself: fewer is progress (lower it), more fails.
SHAPES = [(1, 17), (8, 128)]
BUDGET = {
    ("float32", 1, 17): 53,
    ("float32", 8, 128): 53,
    ("bfloat16", 1, 17): 89,
    ("bfloat16", 8, 128): 55,
}
EIGEN_BUDGET = {
    ("float32", 1, 17): 64,
    ("float32", 8, 128): 64,
    ("bfloat16", 1, 17): 105,
    ("bfloat16", 8, 128): 95,
}
PRECISIONS = ("float32", "bfloat16")
FUSED_MULTIPLIES_PER_PASS = 4  # Q/K/V as one, the attention output, the two feed-forward


def _model(num_layers, weights=None):
    model = AlbertClassifier(AlbertBackbone(num_layers=num_layers, **SIZES), num_classes=2)
    if weights is None:
        rng = np.random.default_rng(0)
        for weight in model.weights:  # biases and γ/β away from 0 and 1, as trained
            if len(weight.shape) == 1:
                weight.assign(weight.numpy() + rng.normal(0, 0.1, weight.shape))
    else:
        model.set_weights(weights)
    return model


def _kernels(path, batch_size, length):
    session = tf.compat.v1.Session(graph=tf.Graph())
    meta_graph = tf.compat.v1.saved_model.loader.load(session, ["serve"], path)
    signature = meta_graph.signature_def["serve_token_ids"]
    inputs = {
        "token_ids": np.full((batch_size, length), 7, np.int32),
        "segment_ids": np.zeros((batch_size, length), np.int32),
        "padding_mask": np.ones((batch_size, length), np.int32),
    }
    feed = {signature.inputs[name].name: value for name, value in inputs.items()}
    fetch = signature.outputs["logits"].name
    for _ in range(2):  # the first calls build the oneDNN primitives
        session.run(fetch, feed)
    metadata = config_pb2.RunMetadata()
    options = config_pb2.RunOptions(trace_level=config_pb2.RunOptions.FULL_TRACE)
    session.run(fetch, feed, options=options, run_metadata=metadata)
    session.close()
    counts = collections.Counter()
    for device in metadata.step_stats.dev_stats:
        for node in device.node_stats:
            label = node.timeline_label  # "name = Op(inputs)"
            counts[label.split(" = ")[1].split("(")[0] if " = " in label else node.node_name] += 1
    return counts


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    tokenizer = AlbertTokenizer(ALBERT_MODEL)
    one = _model(1)
    two = _model(2, one.get_weights())
    directory = tmp_path_factory.mktemp("kernels")
    paths = {}
    for precision in PRECISIONS:
        for passes, model in ((1, one), (2, two)):
            path = str(directory / f"{precision}_{passes}")
            export_saved_model(model, tokenizer, path, precision=precision)
            paths[precision, passes] = path
    return paths


def _per_pass(exports, precision, batch_size, length):
    one = _kernels(exports[precision, 1], batch_size, length)
    two = _kernels(exports[precision, 2], batch_size, length)
    return two - one, sum(two.values()) - sum(one.values())


@pytest.mark.parametrize("batch_size, length", SHAPES)
def test_float32_pass_stays_within_its_kernel_budget(exports, batch_size, length):
    per_pass, total = _per_pass(exports, "float32", batch_size, length)
    if ONEDNN:  # every multiply with its bias (and GELU) in one kernel
        assert per_pass[FUSED_MATMUL] == FUSED_MULTIPLIES_PER_PASS, per_pass
        assert per_pass["MatMul"] == per_pass["BiasAdd"] == per_pass["Tanh"] == 0, per_pass
        assert total <= BUDGET["float32", batch_size, length], sorted(per_pass.items())
        return
    # Eigen: no bias left alone, GELU's tanh a kernel of its own
    assert per_pass[FUSED_MATMUL] + per_pass["MatMul"] == FUSED_MULTIPLIES_PER_PASS, per_pass
    assert per_pass[FUSED_MATMUL] >= FUSED_MULTIPLIES_PER_PASS - 1, per_pass
    assert per_pass["BiasAdd"] == 0 and per_pass["Tanh"] == 1, per_pass
    assert total <= EIGEN_BUDGET["float32", batch_size, length], sorted(per_pass.items())


@pytest.mark.parametrize("batch_size, length", SHAPES)
def test_bfloat16_pass_stays_within_its_kernel_budget(exports, batch_size, length):
    per_pass, total = _per_pass(exports, "bfloat16", batch_size, length)
    # The float32 ↔ bfloat16 casts are of the whole batch at the ends of the pass, never per
    # row: as many at 8 × 128 as oneDNN's pass has.
    if not ONEDNN:  # Eigen (by default on AVX2-only CPUs): each multiply then its bias, the
        # LayerNorms element-wise
        assert per_pass["MatMul"] == FUSED_MULTIPLIES_PER_PASS, per_pass
        assert per_pass["BiasAdd"] == FUSED_MULTIPLIES_PER_PASS - 1, per_pass
        assert per_pass["Rsqrt"] == 2 and per_pass["Cast"] <= (10 if length < 64 else 2), per_pass
        assert total <= EIGEN_BUDGET["bfloat16", batch_size, length], sorted(per_pass.items())
        return
    if not cpu_features()["flags"].get("avx512_bf16"):
        # Without AVX512-BF16, TensorFlow's oneDNN rewrite leaves bfloat16 multiplies alone
        # (docs/guides/precision_and_speed.md: bfloat16 is slower than float32 there); only the
        # count holds.
        assert total <= 2 * BUDGET["bfloat16", 1, 17], sorted(per_pass.items())
        return
    assert per_pass[FUSED_MATMUL] == FUSED_MULTIPLIES_PER_PASS, per_pass
    # 64 rows or more: both LayerNorms of the pass are one oneDNN kernel each.
    assert per_pass["_MklLayerNorm"] == (2 if batch_size * length >= 64 else 0), per_pass
    assert total <= BUDGET["bfloat16", batch_size, length], sorted(per_pass.items())
