"""bfloat16 and shallower exports, served in a fresh process, against the float32 model.

One tiny classifier (the real 30k SentencePiece model) is exported at every precision and at
depth 1, and the harness (`serving_harness.py`, a process without keras_albert) answers 200
SST-2 dev sentences with each. The weights have the scale of a trained ALBERT-base
(initializer stddev · √hidden_dim ≈ 1, so pre-activations are of order one), so that bfloat16
rounding shows at its real size.
"""

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
from tensorflow_serving.apis import prediction_log_pb2

from keras_albert import AlbertBackbone, AlbertClassifier
from keras_albert.export.serving_layout import export_for_serving
from keras_albert.serving import requests as serving_requests
from keras_albert.serving.precision import SERVING_PRECISIONS, serving_model
from tests.export.conftest import HARNESS, read_logs, reference_pack
from tests.export.test_serving_export import ALLOWED_TF_TEXT_OPS, FORBIDDEN_OPS
from tests.layers.served_kernels import (
    BFLOAT16_UNIT_ROUNDOFF,
    EIGEN_LAYER_NORM_ROUNDINGS,
    EIGEN_SOFTMAX_ROUNDINGS,
    ONEDNN_BFLOAT16,
)
from tests.text.text_data import load_sst2_dev

SIZES = dict(
    vocabulary_size=30000,
    embedding_dim=16,
    hidden_dim=64,
    intermediate_dim=128,
    num_layers=3,
    num_heads=4,
    max_sequence_length=64,
    initializer_range=0.125,  # 0.125 · √64 = 1
)
NUM_SENTENCES = 200
BATCH_SIZE = 50
SHALLOW_DEPTH = 1
# Largest |logit - float32 logit| over the 200 sentences (the float32 logits have a spread of
# 0.63 and class margins of 0.29 to 1.7).
#
# bfloat16's, from the format: every bfloat16 rounding on a logit's path moves values of order
# one by up to the unit roundoff u = 2^-8, uniformly (σ = u/√3); n independent roundings add as
# a random walk (σ·√n), and the largest of the 400 logits' errors lies within 3σ·√n. Roundings
# on the path: where oneDNN runs (AVX512-VNNI/BF16, AMX CPUs by default) each kernel computes
# in float32 and rounds once: per pass of the block Q/K/V, the softmax, the context, the
# attention output, LayerNorm, the intermediate (GELU inside), the output, LayerNorm (8); outside
# the block the table, the embedding LayerNorm, the projection, the pooler and the output (5).
# Without oneDNN (AVX2-only CPUs by default) Eigen's kernels round every step: a bias add after
# each multiply, the LayerNorms' and the softmax's steps (tests/layers/served_kernels.py), and
# GELU's five element-wise steps: 36 per pass, 16 outside.
# Measured: float32 8e-7; bfloat16 0.019 with oneDNN (Intel Sapphire Rapids, AMD Zen 4 and 5),
# 0.031 without (the same on a Sapphire Rapids with TF_ENABLE_ONEDNN_OPTS=0 and on an AVX2-only
# AMD Zen 3: Eigen's arithmetic does not depend on the CPU).
BFLOAT16_ROUNDINGS = {  # oneDNN runs the bfloat16 ops: (per pass, outside the block)
    True: (8, 5),
    False: (
        4 * 2 + 2 * (EIGEN_LAYER_NORM_ROUNDINGS + 1) + EIGEN_SOFTMAX_ROUNDINGS + 1 + 1 + 5,
        1 + EIGEN_LAYER_NORM_ROUNDINGS + 2 + 3 + 2,
    ),
}


def bfloat16_tolerance(onednn: bool) -> float:
    per_pass, outside = BFLOAT16_ROUNDINGS[onednn]
    roundings = SIZES["num_layers"] * per_pass + outside
    return 3 * BFLOAT16_UNIT_ROUNDOFF / math.sqrt(3) * math.sqrt(roundings)


TOLERANCES = {"float32": 1e-5, "bfloat16": bfloat16_tolerance(ONEDNN_BFLOAT16)}


@pytest.fixture(scope="module")
def model():
    classifier = AlbertClassifier(AlbertBackbone(**SIZES), num_classes=2)
    # Not keras.utils.set_random_seed: it would reset the session's SentencePiece resource.
    rng = np.random.default_rng(11)
    for weight in classifier.weights:
        if len(weight.shape) > 1:  # kernels and tables
            weight.assign(rng.normal(0, SIZES["initializer_range"], weight.shape))
        else:  # biases and LayerNorm γ/β away from 0 and 1, as trained: TensorFlow folds a zero
            # bias or a unit γ away, and the served graphs would not use the kernels that the
            # bias and LayerNorm fusions select (keras_albert.serving.precision.ModelCall)
            weight.assign(weight.numpy() + rng.normal(0, 0.1, weight.shape))
    return classifier


@pytest.fixture(scope="module")
def served(tmp_path_factory, albert_tokenizer_for_export, model):
    tokenizer = albert_tokenizer_for_export
    sentences = load_sst2_dev()[:NUM_SENTENCES]
    batches = [sentences[i : i + BATCH_SIZE] for i in range(0, NUM_SENTENCES, BATCH_SIZE)]
    root = tmp_path_factory.mktemp("precision")
    base_dir = root / "saved_models"
    specs = {precision: dict(precision=precision) for precision in SERVING_PRECISIONS}
    specs["depth_1"] = dict(num_layers=SHALLOW_DEPTH)
    job = {"exports": [], "models_config": str(base_dir / "models.config")}
    for name, options in specs.items():
        path = export_for_serving(
            model, tokenizer, base_dir=base_dir, name=name, warmup_texts=sentences[:3], **options
        )
        files = {
            key: str(root / f"{name}_{key}")
            for key in ("requests", "responses", "rest", "rest_responses", "warmup_responses")
        }
        with tf.io.TFRecordWriter(files["requests"]) as writer:
            for batch in batches:
                request = serving_requests.predict_request(
                    name, serving_requests.text_inputs(batch)
                )
                log = prediction_log_pb2.PredictionLog(
                    predict_log=prediction_log_pb2.PredictLog(request=request)
                )
                writer.write(log.SerializeToString())
        with open(files["rest"], "w", encoding="utf-8") as file:
            json.dump([], file)
        job["exports"].append({"path": path, **files})
    job["report"] = str(root / "report.json")
    (root / "job.json").write_text(json.dumps(job))
    environment = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    result = subprocess.run(
        [sys.executable, HARNESS, str(root / "job.json")],
        cwd=root,
        env=environment,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-5000:]
    report = json.loads((root / "report.json").read_text())
    logits = {}
    for name, export in zip(specs, job["exports"], strict=True):
        logs = read_logs(export["responses"])
        logits[name] = np.concatenate(
            [tf.make_ndarray(log.predict_log.response.outputs["logits"]) for log in logs]
        )
    packed = [
        reference_pack(
            [tokenizer.encode(text) for text in batch],
            None,
            SIZES["max_sequence_length"],
            tokenizer.cls_id,
            tokenizer.sep_id,
            tokenizer.pad_id,
        )
        for batch in batches
    ]
    return {"report": report, "names": list(specs), "logits": logits, "packed": packed}


def keras_logits(model, packed) -> np.ndarray:
    return np.concatenate([np.asarray(model(inputs, training=False)) for inputs in packed])


@pytest.mark.parametrize("precision", SERVING_PRECISIONS)
def test_each_precision_is_close_to_the_float32_model(served, model, precision):
    expected = keras_logits(model, served["packed"])
    actual = served["logits"][precision]
    assert actual.dtype == np.float32 and actual.shape == (NUM_SENTENCES, 2)
    spread = expected.std()
    assert spread > 0.3, spread  # logits of order one, not a collapsed head
    error = np.abs(actual - expected).max()
    assert error <= TOLERANCES[precision], (precision, error, spread)
    agreement = np.mean(actual.argmax(-1) == expected.argmax(-1))
    assert agreement >= 0.99, (precision, agreement)
    if precision != "float32":
        # A real change of the arithmetic, not the float32 graph again.
        assert error > 1e-5, (precision, error)


def test_shallower_export_equals_k_passes_of_the_keras_backbone(served, model):
    # The float32 Keras model's own layers, the shared block applied SHALLOW_DEPTH times.
    backbone = model.backbone
    expected = []
    for inputs in served["packed"]:
        x = backbone.embedding(inputs["token_ids"], inputs["segment_ids"])
        for step in backbone.encoder_steps_at_depth(SHALLOW_DEPTH):
            x = step(x, padding_mask=inputs["padding_mask"])
        expected.append(np.asarray(model.output_dense(backbone.pooler(x[:, 0, :]))))
    expected = np.concatenate(expected)
    np.testing.assert_allclose(served["logits"]["depth_1"], expected, atol=1e-5, rtol=0)
    assert np.abs(expected - served["logits"]["float32"]).max() > 0.05


def test_every_export_keeps_the_serving_guarantees(served):
    report = served["report"]
    core_ops = set(report["core_ops"])
    for name, export in zip(served["names"], report["exports"], strict=True):
        op_types = set(export["op_types"])
        assert op_types - core_ops <= ALLOWED_TF_TEXT_OPS, (name, op_types - core_ops)
        assert not op_types & FORBIDDEN_OPS, name
        assert export["must_compile"] == [], name
        assert export["integer_transposes"] == [], name
        assert export["variable_reads"] == [], name
        assert export["request_errors"] == [None] * (NUM_SENTENCES // BATCH_SIZE), name
        assert export["warmup"]["count"] > 0 and set(export["warmup"]["errors"]) == {None}, name
        outputs = export["signatures"]["serving_default"]["outputs"]
        assert outputs["logits"]["dtype"] == "float32", name
    assert [name for name in report["modules"] if "keras_albert" in name] == []


def test_bad_precision_and_depth_are_clear_errors(model):
    with pytest.raises(ValueError, match="precision.*Received: precision='fp16'"):
        serving_model(model, "fp16")
    with pytest.raises(ValueError, match="Received: num_layers=0"):
        serving_model(model, "float32", 0)
    with pytest.raises(ValueError, match="trained depth num_layers=3. Received: num_layers=4"):
        serving_model(model, "bfloat16", 4)
    # int8 was removed (always slower than float32, docs/guides/precision_and_speed.md): a
    # clear error.
    with pytest.raises(ValueError, match="Received: precision='int8'"):
        serving_model(model, "int8")
    assert serving_model(model, "float32") is model
    assert serving_model(model, "float32", SIZES["num_layers"]) is model


def test_export_tool_flags(tmp_path):
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tools"))
    try:
        import export_saved_model
    finally:
        sys.path.pop(0)
    parser = export_saved_model.build_parser()
    args = parser.parse_args(["model.keras", "--precision", "bfloat16", "--num-layers", "6"])
    assert (args.precision, args.num_layers) == ("bfloat16", 6)
    with pytest.raises(SystemExit):
        parser.parse_args(["model.keras", "--precision", "fp16"])
    # int8 is TFLite's (dynamic-range weights); a SavedModel export refuses it by name.
    args = parser.parse_args(["model.keras", "--precision", "int8", "--format", "tflite"])
    assert (args.precision, args.format) == ("int8", "tflite")


def test_bfloat16_copy_stores_its_weights_in_bfloat16(model):
    # Stored, not cast at every read: a mixed policy's float32 variables would be cast once
    # per pass of the shared block in the served graph.
    # The logits' projection stays float32 and unrounded (layers/logits.py).
    served = serving_model(model, "bfloat16")
    assert served.backbone.dtype_policy.name == "bfloat16"
    logits = {id(weight) for weight in served.output_dense.weights}
    assert {weight.dtype for weight in served.weights if id(weight) not in logits} == {"bfloat16"}
    assert {weight.dtype for weight in served.output_dense.weights} == {"float32"}
    for served_weight, weight in zip(served.weights, model.weights, strict=True):
        expected = weight if id(served_weight) in logits else tf.cast(weight, tf.bfloat16)
        np.testing.assert_array_equal(served_weight, expected)  # rounded once, if at all
