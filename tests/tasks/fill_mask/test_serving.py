"""The fill-mask SavedModel, served in a fresh process without keras_albert (the export tests'
`serving_harness.py`, the TF1 session loader as TF Serving runs it), against the Python API.

A tiny random `AlbertMaskedLM` with the real 30k SentencePiece model (large random weights, so
the distributions are peaked) and one with the Chinese WordPiece vocabulary; real SST-2
sentences and Tang verses with words masked, odd placements of the mask, bad inputs. The
served top-k ids, pieces and filled texts must equal `fill_mask`'s, the probabilities within
1e-6."""

import json
import pathlib
import subprocess
import sys

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
from keras_albert.tasks.fill_mask.features import MaskedTextEncoder, pack
from keras_albert.tasks.fill_mask.model import AlbertMaskedLM
from keras_albert.tasks.fill_mask.predict import fill_mask
from keras_albert.tasks.fill_mask.serving import FillMaskServingModule
from keras_albert.text.tokenizer import AlbertTokenizer
from tests.export.conftest import read_logs, run_harness, write_requests
from tests.export.test_serving_export import ALLOWED_TF_TEXT_OPS, FORBIDDEN_OPS, outputs_of
from tests.tasks.fill_mask.test_features import ODD, masked_sentences
from tests.text.text_data import ALBERT_MODEL, DATA

PROBE = pathlib.Path(__file__).resolve().parents[3] / "tools" / "probe_saved_model.py"
MAX_SEQUENCE_LENGTH = 64
TOP_K = 4
PROBABILITY_TOLERANCE = 1e-6
SIZES = dict(
    embedding_dim=8,
    hidden_dim=16,
    intermediate_dim=32,
    num_layers=2,
    num_heads=2,
    max_sequence_length=MAX_SEQUENCE_LENGTH,
)


def tang_verses(count=12):
    verses = (DATA / "zh" / "tang_poems_verses.txt").read_text(encoding="utf-8").split("\n\n")
    texts = []
    for index, verse in enumerate(verses[:count]):
        characters = list(verse.strip()[:40])
        for position in (3, 9 + index % 5):
            characters[position] = "[MASK]"
        texts.append("".join(characters))
    return texts + ["北[MASK]欢迎你", "[MASK]s are 2,000[MASK]"]


def random_masked_lm(vocabulary_size, seed):
    """Weights plus N(0, 0.5²): the most probable token ~0.8% (~250 times uniform).

    With N(0, 1²) (most probable ~14%) the activations are large enough for the served graph's
    fused kernels and Keras's to round apart by up to 6e-6 in probability; at 0.5 the gap is
    below 1e-7."""
    model = AlbertMaskedLM(AlbertBackbone(vocabulary_size=vocabulary_size, **SIZES))
    rng = np.random.default_rng(seed)
    for weight in model.weights:
        weight.assign(weight.numpy() + rng.normal(0, 0.5, weight.shape).astype("float32"))
    return model


def _log(name, inputs, signature="serving_default"):
    request = serving_requests.predict_request(name, inputs, signature)
    return prediction_log_pb2.PredictionLog(
        predict_log=prediction_log_pb2.PredictLog(request=request)
    )


def _texts(texts):
    return {"text": np.array([t if isinstance(t, bytes) else t.encode() for t in texts], object)}


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    exports = {
        "sentencepiece": (AlbertTokenizer(ALBERT_MODEL), masked_sentences(24, seed=2)),
        "wordpiece": (AlbertTokenizer(DATA / "zh" / "vocab_chinese.txt"), tang_verses()),
    }
    root = tmp_path_factory.mktemp("fill_mask_serving")
    base_dir = root / "saved_models"
    job = {"exports": [], "models_config": str(base_dir / "models.config")}
    result = {}
    for seed, (name, (tokenizer, texts)) in enumerate(exports.items()):
        model = random_masked_lm(tokenizer.vocabulary_size, seed)
        module = FillMaskServingModule(model, tokenizer, top_k=TOP_K)
        path = base_dir / name / "1"
        module.save(path)
        write_warmup_requests(path, warmup_records(module, name))
        odd = [text for text in ODD if name == "sentencepiece"]
        requests = {
            "real": _texts(texts),
            "odd": _texts(odd or texts[-2:]),
            "no_mask": _texts(["A text without a mask.", "[MASK] and one with"]),
            "batch_of_0": _texts([]),
            "too_long": _texts(["[MASK] " + "word " * MAX_SEQUENCE_LENGTH]),  # 67 tokens
        }
        encoder = MaskedTextEncoder(tokenizer)
        packed = pack([encoder.encode(text) for text in texts], tokenizer)
        packed.pop("mask_positions")
        logs = [_log(name, inputs) for inputs in requests.values()]
        logs.append(_log(name, packed, "serve_token_ids"))
        files = write_requests(root, name, logs)
        job["exports"].append({"path": str(path), **files})
        result[name] = {
            "path": path,
            "model": model,
            "tokenizer": tokenizer,
            "texts": texts,
            "odd": odd or texts[-2:],
            "keys": [*requests, "token_ids"],
            "files": files,
            "packed": packed,
        }
    write_models_config(base_dir)
    report = run_harness(root, job)
    for export, export_report in zip(result.values(), report["exports"], strict=True):
        responses = read_logs(export["files"]["responses"])
        export["report"] = export_report
        export["outputs"] = {
            key: (outputs_of(log), error)
            for key, log, error in zip(
                export["keys"], responses, export_report["request_errors"], strict=True
            )
        }
    return {"exports": result, "report": report}


def _ok(export, key):
    outputs, error = export["outputs"][key]
    assert error is None, error
    return outputs


def check_equals_python(outputs, export, texts):
    """The served answers to `texts` against `fill_mask` on the same texts, text by text (a
    text without a mask gets no masks from both)."""
    expected = fill_mask(export["model"], export["tokenizer"], texts, top_k=TOP_K)
    num_masks = outputs["num_masks"]
    max_masks = outputs["token_ids"].shape[1]
    assert outputs["token_ids"].shape == (len(texts), max_masks, TOP_K)
    assert max_masks == max([len(masks) for masks in expected], default=0)
    for row, masks in enumerate(expected):
        assert num_masks[row] == len(masks)
        for mask in range(max_masks):
            ids = outputs["token_ids"][row, mask]
            probabilities = outputs["probabilities"][row, mask]
            if mask >= len(masks):  # padding
                assert list(ids) == [-1] * TOP_K and not probabilities.any()
                assert list(outputs["tokens"][row, mask]) == [b""] * TOP_K
                assert list(outputs["texts"][row, mask]) == [b""] * TOP_K
                continue
            candidates = masks[mask]
            assert list(ids) == [c["token_id"] for c in candidates]
            assert [t.decode() for t in outputs["tokens"][row, mask]] == [
                c["token"] for c in candidates
            ]
            assert [t.decode() for t in outputs["texts"][row, mask]] == [
                c["text"] for c in candidates
            ]
            np.testing.assert_allclose(
                probabilities,
                [c["probability"] for c in candidates],
                atol=PROBABILITY_TOLERANCE,
                rtol=0,
            )


@pytest.mark.parametrize("name", ["sentencepiece", "wordpiece"])
def test_served_equals_python(served, name):
    export = served["exports"][name]
    check_equals_python(_ok(export, "real"), export, export["texts"])
    check_equals_python(_ok(export, "odd"), export, export["odd"])
    check_equals_python(
        _ok(export, "no_mask"), export, ["A text without a mask.", "[MASK] and one with"]
    )
    empty = _ok(export, "batch_of_0")
    assert empty["token_ids"].shape == (0, 0, TOP_K) and empty["num_masks"].shape == (0,)


@pytest.mark.parametrize("name", ["sentencepiece", "wordpiece"])
def test_serve_token_ids_finds_the_masks(served, name):
    export = served["exports"][name]
    outputs = _ok(export, "token_ids")
    served_text = _ok(export, "real")
    for key in ("token_ids", "tokens", "num_masks"):
        np.testing.assert_array_equal(outputs[key], served_text[key])
    np.testing.assert_allclose(outputs["probabilities"], served_text["probabilities"], atol=1e-6)
    token_ids = export["packed"]["token_ids"]
    mask_id = export["tokenizer"].mask_id
    for row, positions in enumerate(outputs["mask_positions"]):
        found = list(np.flatnonzero(token_ids[row] == mask_id))
        assert list(positions) == found + [-1] * (len(positions) - len(found))


def test_too_long_a_text_is_an_error_giving_its_length(served):
    for export in served["exports"].values():
        _, error = export["outputs"]["too_long"]
        text = "[MASK] " + "word " * MAX_SEQUENCE_LENGTH
        length = len(MaskedTextEncoder(export["tokenizer"]).encode(text)) + 2
        assert "longer than max_sequence_length=64 tokens with [CLS] and [SEP]" in error
        assert f"its length:] [{length}]" in error, error


def run_probe(path, *texts):
    # -I: isolated from PYTHONPATH and the script's folder, as a user's deployment would be.
    return subprocess.run(
        [sys.executable, "-I", str(PROBE), str(path), *texts, "--repeats", "0"],
        capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip


def test_the_probe_tool_prints_the_answers_fill_mask_gives(served):
    export = served["exports"]["sentencepiece"]
    texts = [*export["texts"][:2], "A text without a mask.", "[MASK] [MASK] went home ."]
    completed = run_probe(export["path"], *texts)
    assert completed.returncode == 0, completed.stderr[-3000:]
    result = json.loads(completed.stdout)
    assert result["keras_albert_imported"] is False
    expected = fill_mask(export["model"], export["tokenizer"], texts, top_k=TOP_K)
    for prediction, masks, text in zip(result["predictions"], expected, texts, strict=True):
        assert prediction["text"] == text
        assert prediction["num_masks"] == len(masks)
        for key, field in (("token_ids", "token_id"), ("tokens", "token"), ("texts", "text")):
            assert prediction[key] == [[c[field] for c in mask] for mask in masks], key
        probabilities = [[c["probability"] for c in mask] for mask in masks]
        np.testing.assert_allclose(
            np.reshape(prediction["probabilities"], (len(masks), TOP_K)),
            np.reshape(probabilities, (len(masks), TOP_K)),
            atol=PROBABILITY_TOLERANCE,
            rtol=0,
        )


def test_the_probe_tool_gives_the_reason_a_text_is_refused_in_its_one_line(served):
    export = served["exports"]["sentencepiece"]
    text = "[MASK] " + "word " * MAX_SEQUENCE_LENGTH
    completed = run_probe(export["path"], text)
    assert completed.returncode == 1
    length = len(MaskedTextEncoder(export["tokenizer"]).encode(text)) + 2
    assert completed.stderr.splitlines() == [
        f"error: {export['path']}: assertion failed: [serving_default: a text is longer than "
        f"max_sequence_length={MAX_SEQUENCE_LENGTH} tokens with [CLS] and [SEP]; its length:] "
        f"[{length}]"
    ]


def test_ops_assets_warmup_and_no_keras_albert(served):
    report = served["report"]
    core_ops = set(report["core_ops"])
    assert [m for m in report["modules"] if "keras_albert" in m] == []
    for name, export in served["exports"].items():
        export_report = export["report"]
        op_types = set(export_report["op_types"])
        assert op_types.isdisjoint(FORBIDDEN_OPS), op_types & FORBIDDEN_OPS
        # The ops the other exports use, all in TF Text 2.12.1 (which TF Serving embeds).
        allowed = ALLOWED_TF_TEXT_OPS | {"RegexSplitWithOffsets", "WordpieceTokenizeWithOffsets"}
        assert op_types - core_ops <= allowed, (name, op_types - core_ops)
        assert export_report["must_compile"] == []
        assert export_report["integer_transposes"] == [], name
        assert export_report["variable_reads"] == [], name
        assert export_report["warmup"]["count"] == 8
        assert export_report["warmup"]["errors"] == [None] * 8
        outputs = export_report["signatures"]["serving_default"]["outputs"]
        assert {key: value["dtype"] for key, value in outputs.items()} == {
            "token_ids": "int32",
            "tokens": "string",
            "probabilities": "float32",
            "texts": "string",
            "num_masks": "int32",
        }
    assert served["exports"]["sentencepiece"]["report"]["assets"] == ["sentencepiece.model"]
    assert served["exports"]["wordpiece"]["report"]["assets"] == ["vocab.txt"]
    assert {entry["name"] for entry in report["models_config"]} == {"sentencepiece", "wordpiece"}


def test_module_arguments_are_checked():
    tokenizer = AlbertTokenizer(ALBERT_MODEL)
    model = AlbertMaskedLM(AlbertBackbone(vocabulary_size=30000, **SIZES))
    with pytest.raises(TypeError, match="Received: model=AlbertBackbone"):
        FillMaskServingModule(model.backbone, tokenizer)
    with pytest.raises(ValueError, match="`top_k` must be a positive integer. Received: top_k=0"):
        FillMaskServingModule(model, tokenizer, top_k=0)
    with pytest.raises(ValueError, match="at most the model's max_sequence_length=64"):
        FillMaskServingModule(model, tokenizer, max_sequence_length=65)
    with pytest.raises(TypeError, match="`tokenizer` must be an AlbertTokenizer"):
        FillMaskServingModule(model, "30k-clean.model")
    # The module's eager halves, as the warmup uses them.
    module = FillMaskServingModule(model, tokenizer, max_sequence_length=8, top_k=2)
    with pytest.raises(tf.errors.InvalidArgumentError, match="its length:"):
        module.pack(tf.constant(["[MASK] one two three four five six"]))  # 9 tokens
    packed = module.pack(tf.constant(["[MASK] one two three four five"]))
    assert packed["token_ids"].shape == (1, 8)


def test_the_export_tool_serves_a_pretrainer_checkpoint_as_fill_mask(tmp_path):
    # `--model fill_mask` turns a pretraining checkpoint into its masked LM (the pretrainer's
    # own head), and the export dispatch gives it the fill-mask module with `--top-k`.
    import runpy
    from pathlib import Path

    from keras_albert import AlbertPretrainer, load_checkpoint

    masked_lm = random_masked_lm(30000, seed=3)
    pretrainer = AlbertPretrainer(masked_lm.backbone)
    pretrainer.masked_lm_head.set_weights(masked_lm.masked_lm_head.get_weights())
    checkpoint = tmp_path / "pretrainer.keras"
    pretrainer.save(checkpoint)
    tool = Path(__file__).resolve().parents[3] / "tools" / "export_saved_model.py"
    argv = [str(checkpoint), "--vocabulary", str(ALBERT_MODEL), "--model", "fill_mask"]
    argv += ["--name", "fm", "--output-dir", str(tmp_path / "served"), "--top-k", "3"]
    assert runpy.run_path(str(tool))["main"](argv) == 0
    served = tf.saved_model.load(str(tmp_path / "served" / "fm" / "1"))
    texts = ["The [MASK] was fine.", "a [MASK] and a [MASK] film"]
    outputs = served.signatures["serving_default"](text=tf.constant(texts))
    tokenizer = AlbertTokenizer(str(ALBERT_MODEL))
    loaded = load_checkpoint(str(checkpoint), model="fill_mask")
    assert isinstance(loaded, AlbertMaskedLM)
    expected = fill_mask(loaded, tokenizer, texts, top_k=3)
    assert outputs["token_ids"].shape[-1] == 3
    for row, masks in enumerate(expected):
        assert int(outputs["num_masks"][row]) == len(masks)
        for mask, proposals in enumerate(masks):
            ids = [proposal["token_id"] for proposal in proposals]
            assert outputs["token_ids"][row, mask].numpy().tolist() == ids
            np.testing.assert_allclose(
                outputs["probabilities"][row, mask].numpy(),
                [proposal["probability"] for proposal in proposals],
                rtol=0,
                atol=PROBABILITY_TOLERANCE,
            )
