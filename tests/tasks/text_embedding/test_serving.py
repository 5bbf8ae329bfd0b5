"""The text-embedding SavedModel, served in a fresh process without keras_albert (the export
tests' `serving_harness.py`, as TF Serving runs it), against `AlbertTextEmbedder.predict`:
real and odd sentences, a batch of 0, a text longer than the packed length (truncated, as the
preprocessor does), and the token-id signature; the op set TF Serving has, warmup, assets."""

import numpy as np
import pytest
import tensorflow as tf
from tensorflow_serving.apis import prediction_log_pb2

from keras_albert import AlbertBackbone
from keras_albert.export.serving_layout import (
    warmup_records,
    write_models_config,
    write_warmup_requests,
)
from keras_albert.serving import requests as serving_requests
from keras_albert.tasks.text_embedding.model import AlbertTextEmbedder
from keras_albert.tasks.text_embedding.preprocessor import AlbertTextEmbedderPreprocessor
from keras_albert.tasks.text_embedding.serving import TextEmbeddingServingModule
from keras_albert.text.tokenizer import AlbertTokenizer
from tests.export.conftest import read_logs, run_harness, write_requests
from tests.export.test_serving_export import ALLOWED_TF_TEXT_OPS, FORBIDDEN_OPS, outputs_of
from tests.helpers import perturbed
from tests.tasks.classification.test_preprocessor import SENTENCES
from tests.tasks.text_embedding.test_model import SIZES
from tests.text.text_data import ALBERT_MODEL

MAX_SEQUENCE_LENGTH = SIZES["max_sequence_length"]
TOLERANCE = 1e-5
ODD = ["", "   ", "Ünïcödé, ÇA VA?", "naïve café — 2,000 words", "wh\udcffo"]
LONG = "word " * 100


def _log(inputs, signature="serving_default"):
    request = serving_requests.predict_request("embed", inputs, signature)
    return prediction_log_pb2.PredictionLog(
        predict_log=prediction_log_pb2.PredictLog(request=request)
    )


def _texts(texts):
    encoded = [t.encode("utf-8", "surrogateescape") for t in texts]
    return {"text": np.array(encoded, object)}


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    tokenizer = AlbertTokenizer(ALBERT_MODEL)
    model = AlbertTextEmbedder(
        perturbed(AlbertBackbone(**SIZES), seed=3),
        normalize=True,
        preprocessor=AlbertTextEmbedderPreprocessor(tokenizer, MAX_SEQUENCE_LENGTH),
    )
    root = tmp_path_factory.mktemp("text_embedding_serving")
    base_dir = root / "saved_models"
    path = base_dir / "embed" / "1"
    module = TextEmbeddingServingModule(model, tokenizer)
    module.save(path)
    write_warmup_requests(path, warmup_records(module, "embed"))
    write_models_config(base_dir)
    requests = {
        "real": SENTENCES,
        "odd": ODD,
        "long": [LONG, "short"],
        "batch_of_0": [],
    }
    packed = {name: value.numpy() for name, value in module.pack(tf.constant(SENTENCES)).items()}
    logs = [_log(_texts(texts)) for texts in requests.values()]
    logs.append(_log(packed, "serve_token_ids"))
    files = write_requests(root, "embed", logs)
    report = run_harness(
        root,
        {
            "exports": [{"path": str(path), **files}],
            "models_config": str(base_dir / "models.config"),
        },
    )
    responses = read_logs(files["responses"])
    keys = [*requests, "token_ids"]
    outputs = {
        key: (outputs_of(log), error)
        for key, log, error in zip(
            keys, responses, report["exports"][0]["request_errors"], strict=True
        )
    }
    return {
        "model": model,
        "module": module,
        "requests": requests,
        "outputs": outputs,
        "report": report,
        "packed": packed,
    }


def _ok(served, key):
    outputs, error = served["outputs"][key]
    assert error is None, error
    return outputs["embeddings"]


@pytest.mark.parametrize("key", ["real", "odd", "long"])
def test_served_embeddings_equal_predict(served, key):
    texts = [t.encode("utf-8", "surrogateescape") for t in served["requests"][key]]
    expected = served["model"].predict(np.array(texts, object), verbose=0)
    actual = _ok(served, key)
    assert actual.shape == expected.shape and actual.dtype == np.float32
    np.testing.assert_allclose(actual, expected, rtol=0, atol=TOLERANCE)


def test_token_ids_and_an_empty_batch(served):
    expected = served["model"].predict(SENTENCES, verbose=0)
    np.testing.assert_allclose(_ok(served, "token_ids"), expected, rtol=0, atol=TOLERANCE)
    assert _ok(served, "batch_of_0").shape == (0, SIZES["hidden_dim"])


def test_ops_assets_warmup_and_no_keras_albert(served):
    report = served["report"]
    assert [m for m in report["modules"] if "keras_albert" in m] == []
    export_report = report["exports"][0]
    op_types = set(export_report["op_types"])
    assert {"SentencepieceOp", "SentencepieceTokenizeOp"} <= op_types
    assert op_types.isdisjoint(FORBIDDEN_OPS), op_types & FORBIDDEN_OPS
    assert op_types - set(report["core_ops"]) <= ALLOWED_TF_TEXT_OPS
    assert export_report["must_compile"] == []
    assert export_report["integer_transposes"] == []
    assert export_report["variable_reads"] == []
    assert export_report["assets"] == ["sentencepiece.model"]
    assert export_report["warmup"]["count"] == 8
    assert export_report["warmup"]["errors"] == [None] * 8
    signatures = export_report["signatures"]
    assert set(signatures) == {"serving_default", "serve_token_ids"}
    outputs = signatures["serving_default"]["outputs"]
    assert {key: value["dtype"] for key, value in outputs.items()} == {"embeddings": "float32"}


def test_only_an_embedder_is_served():
    with pytest.raises(TypeError, match="Received: model=AlbertBackbone"):
        TextEmbeddingServingModule(AlbertBackbone(**SIZES), AlbertTokenizer(ALBERT_MODEL))
