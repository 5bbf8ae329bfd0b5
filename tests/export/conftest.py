"""Exports of tiny models, served once by the fresh-process harness for all the export tests.

The fixture exports a pair classifier, a regressor and a backbone into one TF Serving base
directory, writes every request the tests ask about (SST-2 dev sentences, token ids, tf.Examples,
bad inputs, REST bodies in both formats), and runs `serving_harness.py` once in a new Python
process that imports only TensorFlow, TensorFlow Text and the serving protos.
"""

import dataclasses
import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf
from tensorflow_serving.apis import prediction_log_pb2, regression_pb2

from keras_albert import AlbertBackbone, AlbertClassifier, AlbertPretrainer
from keras_albert.export.serving_layout import export_for_serving
from keras_albert.serving import requests as serving_requests
from keras_albert.text.tokenizer import AlbertTokenizer
from tests.text.text_data import ALBERT_MODEL, load_sst2_dev

HARNESS = os.path.join(os.path.dirname(__file__), "serving_harness.py")

# Inputs the server must answer without an error (their outputs are checked in the tests).
BAD_TEXTS = {
    "empty": b"",
    "whitespace": " \t\n\u3000 ".encode(),
    "long": ("word " * 20_000).encode(),  # 100,000 characters
    "invalid_utf8": b"ab\xff\xfe cd \xc3",
    "control": "a\x00b\x01c\x7f\u200b d".encode(),
    "emoji": "good 👍🏽 film 🎬".encode(),
}

TINY_SIZES = dict(
    vocabulary_size=30000,  # the real 30k-clean SentencePiece model
    embedding_dim=8,
    hidden_dim=16,
    intermediate_dim=32,
    num_layers=2,
    num_heads=2,
    max_sequence_length=64,
)


@dataclasses.dataclass
class Export:
    name: str
    path: str
    model: keras.Model
    text_pair: bool
    max_sequence_length: int
    requests: list  # PredictionLog, in order
    rest_bodies: list  # dicts
    request_keys: dict  # key -> index into requests
    rest_keys: dict
    report: dict = None
    responses: list = None
    rest_responses: list = None
    warmup_responses: list = None


def sst2_sentences() -> list[str]:
    return load_sst2_dev()[:50]


def reference_pack(first, second, sequence_length, cls_id, sep_id, pad_id):
    """NumPy packing as google-research/albert's run_classifier, padded to the longest."""
    rows = []
    for index, tokens_a in enumerate(first):
        tokens_a = list(tokens_a)
        tokens_b = list(second[index]) if second is not None else None
        if tokens_b is None:
            tokens_a = tokens_a[: sequence_length - 2]
            ids = [cls_id] + tokens_a + [sep_id]
            segments = [0] * len(ids)
        else:
            while len(tokens_a) + len(tokens_b) > sequence_length - 3:
                (tokens_a if len(tokens_a) > len(tokens_b) else tokens_b).pop()
            ids = [cls_id] + tokens_a + [sep_id] + tokens_b + [sep_id]
            segments = [0] * (len(tokens_a) + 2) + [1] * (len(tokens_b) + 1)
        rows.append((ids, segments))
    longest = max(len(ids) for ids, _ in rows)
    token_ids = np.full((len(rows), longest), pad_id, np.int32)
    segment_ids = np.zeros((len(rows), longest), np.int32)
    padding_mask = np.zeros((len(rows), longest), np.int32)
    for row, (ids, segments) in enumerate(rows):
        token_ids[row, : len(ids)] = ids
        segment_ids[row, : len(ids)] = segments
        padding_mask[row, : len(ids)] = 1
    return {"token_ids": token_ids, "segment_ids": segment_ids, "padding_mask": padding_mask}


def _predict_log(request):
    return prediction_log_pb2.PredictionLog(
        predict_log=prediction_log_pb2.PredictLog(request=request)
    )


def _build_requests(export: Export, tokenizer: AlbertTokenizer):
    """Adds every request the tests check to `export` (gRPC logs and REST bodies)."""
    sentences = sst2_sentences()
    pairs = sentences[1:] + sentences[:1] if export.text_pair else None

    def add(key, log):
        export.request_keys[key] = len(export.requests)
        export.requests.append(log)

    # SST-2 in batches of different sizes and lengths.
    batches = [(0, 1), (1, 8), (8, 24), (24, 50)]
    for start, stop in batches:
        texts = sentences[start:stop]
        text_pairs = pairs[start:stop] if pairs else None
        inputs = serving_requests.text_inputs(texts, text_pairs)
        add(("text", start), _predict_log(serving_requests.predict_request(export.name, inputs)))
        packed = reference_pack(
            [tokenizer.encode(text) for text in texts],
            [tokenizer.encode(text) for text in text_pairs] if text_pairs else None,
            export.max_sequence_length,
            tokenizer.cls_id,
            tokenizer.sep_id,
            tokenizer.pad_id,
        )
        add(
            ("token_ids", start),
            _predict_log(serving_requests.predict_request(export.name, packed, "serve_token_ids")),
        )
        if isinstance(export.model, AlbertClassifier):
            request = serving_requests.classify_request(export.name, texts, text_pairs)
            if export.model.num_classes == 1:
                log = prediction_log_pb2.PredictionLog(
                    regress_log=prediction_log_pb2.RegressLog(
                        request=regression_pb2.RegressionRequest(
                            model_spec=request.model_spec, input=request.input
                        )
                    )
                )
            else:
                log = prediction_log_pb2.PredictionLog(
                    classify_log=prediction_log_pb2.ClassifyLog(request=request)
                )
            add(("examples", start), log)

    # Bad inputs: alone, all together, paired with an empty side, and a batch of 0.
    bad = list(BAD_TEXTS.values())
    for key, text in BAD_TEXTS.items():
        text_pairs = [b""] if export.text_pair else None
        inputs = serving_requests.text_inputs([text], text_pairs)
        add(("bad", key), _predict_log(serving_requests.predict_request(export.name, inputs)))
    inputs = serving_requests.text_inputs(bad, [b"a pair"] * len(bad) if export.text_pair else None)
    add(("bad", "all"), _predict_log(serving_requests.predict_request(export.name, inputs)))
    inputs = serving_requests.text_inputs([], [] if export.text_pair else None)
    add(("bad", "batch_of_0"), _predict_log(serving_requests.predict_request(export.name, inputs)))

    # serve_token_ids refuses what the model cannot embed, with an error naming the limit.
    if export.name == "embeddings":
        too_long = np.full((1, TINY_SIZES["max_sequence_length"] + 1), 5, np.int32)
        bad_id = np.array([[tokenizer.cls_id, TINY_SIZES["vocabulary_size"], tokenizer.sep_id]])
        for key, token_ids in (("too_long", too_long), ("bad_id", bad_id.astype(np.int32))):
            inputs = {
                "token_ids": token_ids,
                "segment_ids": np.zeros_like(token_ids),
                "padding_mask": np.ones_like(token_ids),
            }
            add(
                ("error", key),
                _predict_log(
                    serving_requests.predict_request(export.name, inputs, "serve_token_ids")
                ),
            )

    # REST: the same 8 texts (one of them not UTF-8, sent as b64) in both formats.
    rest_texts = sentences[1:8] + [BAD_TEXTS["invalid_utf8"]]
    rest_pairs = (pairs[1:8] + [b""]) if pairs else None
    inputs = serving_requests.text_inputs(rest_texts, rest_pairs)
    add(("rest_grpc", 0), _predict_log(serving_requests.predict_request(export.name, inputs)))
    for rest_format in serving_requests.REST_FORMATS:
        export.rest_keys[rest_format] = len(export.rest_bodies)
        export.rest_bodies.append(serving_requests.rest_body(inputs, rest_format))
    packed = (
        reference_pack(
            [tokenizer.encode(text) for text in sentences[1:8]],
            None,
            export.max_sequence_length,
            tokenizer.cls_id,
            tokenizer.sep_id,
            tokenizer.pad_id,
        )
        if not export.text_pair
        else None
    )
    if packed is not None:
        for rest_format in serving_requests.REST_FORMATS:
            export.rest_keys[("token_ids", rest_format)] = len(export.rest_bodies)
            export.rest_bodies.append(
                serving_requests.rest_body(packed, rest_format, "serve_token_ids")
            )


def write_requests(root, name: str, logs, rest_bodies=()) -> dict:
    """The files of one export's job entry under `root`: its `PredictionLog` requests written,
    its REST bodies, and where the harness writes the responses."""
    files = {
        key: str(root / f"{name}_{key}")
        for key in ("requests", "responses", "rest", "rest_responses", "warmup_responses")
    }
    with tf.io.TFRecordWriter(files["requests"]) as writer:
        for log in logs:
            writer.write(log.SerializeToString())
    with open(files["rest"], "w", encoding="utf-8") as file:
        json.dump(list(rest_bodies), file)
    return files


def run_harness(root, job: dict, timeout: int = 900) -> dict:
    """Runs `serving_harness.py` on `job` (its `exports`, `models_config`) in a fresh process
    and returns its report."""
    job["report"] = str(root / "report.json")
    job_path = root / "job.json"
    job_path.write_text(json.dumps(job))
    # No PYTHONPATH and a directory outside the repository: keras_albert is not importable
    # from the repository checkout (the report also lists what was imported).
    environment = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    result = subprocess.run(
        [sys.executable, HARNESS, str(job_path)],
        cwd=root, env=environment, capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-5000:]
    return json.loads((root / "report.json").read_text())


def read_logs(path):
    return [
        prediction_log_pb2.PredictionLog.FromString(record.numpy())
        for record in tf.data.TFRecordDataset(path)
    ]


@pytest.fixture(scope="session")
def export_seed():
    """Seeds once per session, before any export tokenizer exists: seeding clears TensorFlow's
    kernel cache, which drops the SentencePiece resource of a tokenizer made before it."""
    keras.utils.set_random_seed(7)


@pytest.fixture(scope="module")
def albert_tokenizer_for_export(export_seed):
    # Module-scoped: a test module in between (run by the same pytest-xdist worker) may seed
    # TensorFlow, which would drop a session-wide tokenizer's SentencePiece resource.
    return AlbertTokenizer(ALBERT_MODEL)


@pytest.fixture(scope="session")
def served(tmp_path_factory, export_seed):
    """The exports with the harness's answers: {name: Export}, plus the base directory."""
    tokenizer = AlbertTokenizer(ALBERT_MODEL)  # its own: used only while the exports are made
    backbone = AlbertBackbone(**TINY_SIZES)
    specs = [
        # name, model, text_pair, max_sequence_length, class_names
        ("sst2_pair", AlbertClassifier(backbone, num_classes=2), True, 32, ("neg", "pos")),
        ("stsb", AlbertClassifier(AlbertBackbone(**TINY_SIZES), num_classes=1), False, 48, None),
        ("embeddings", AlbertBackbone(**TINY_SIZES), False, 64, None),
        ("pretrainer", AlbertPretrainer(AlbertBackbone(**TINY_SIZES)), True, 64, None),
    ]
    root = tmp_path_factory.mktemp("serving")
    base_dir = root / "saved_models"
    exports = {}
    job = {"exports": [], "models_config": str(base_dir / "models.config")}
    for name, model, text_pair, max_sequence_length, class_names in specs:
        path = export_for_serving(
            model,
            tokenizer,
            base_dir=base_dir,
            name=name,
            text_pair=text_pair,
            max_sequence_length=max_sequence_length,
            class_names=class_names,
            warmup_texts=sst2_sentences()[:5],
        )
        export = Export(name, path, model, text_pair, max_sequence_length, [], [], {}, {})
        _build_requests(export, tokenizer)
        files = write_requests(root, name, export.requests, export.rest_bodies)
        job["exports"].append({"path": path, **files})
        exports[name] = (export, files)

    report = run_harness(root, job)
    for (export, files), export_report in zip(exports.values(), report["exports"], strict=True):
        export.report = export_report
        export.responses = read_logs(files["responses"])
        export.rest_responses = read_logs(files["rest_responses"])
        export.warmup_responses = read_logs(files["warmup_responses"])
    return {
        "exports": {name: export for name, (export, _) in exports.items()},
        "report": report,
        "base_dir": str(base_dir),
    }
