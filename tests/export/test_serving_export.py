"""The exports, served by the TF1 session loader in a fresh process, against Keras in process."""

import numpy as np
import pytest
import tensorflow as tf
from scipy.special import softmax

from keras_albert import AlbertClassifier, AlbertPretrainer
from tests.export.conftest import BAD_TEXTS, read_logs, reference_pack, sst2_sentences

TOLERANCE = 1e-5

# TF Text ops the export may use: all in tensorflow_model_server since 2.2 (SentencePiece) and
# earlier (NormalizeUTF8).
ALLOWED_TF_TEXT_OPS = {
    "SentencepieceOp",
    "SentencepieceTokenizeOp",
    "SentencepieceStringToIdOp",
    "NormalizeUTF8",
}
FORBIDDEN_OPS = {
    "PyFunc",
    "PyFuncStateless",
    "EagerPyFunc",
    "RoundRobinTrim",
    "RoundRobinGenerateMasks",
    "Utf8Binarize",
    "TFText>RoundRobinTrim",
    "TFText>RoundRobinGenerateMasks",
    "TFText>Utf8Binarize",
}


def outputs_of(log) -> dict:
    kind = log.WhichOneof("log_type")
    if kind == "predict_log":
        return {
            name: tf.make_ndarray(proto) for name, proto in log.predict_log.response.outputs.items()
        }
    if kind == "classify_log":
        classifications = log.classify_log.response.result.classifications
        return {
            "classes": np.array([[c.label for c in item.classes] for item in classifications]),
            "scores": np.array([[c.score for c in item.classes] for item in classifications]),
        }
    regressions = log.regress_log.response.result.regressions
    return {"outputs": np.array([item.value for item in regressions], np.float32)}


def keras_outputs(export, tokenizer, texts, text_pairs=None) -> dict:
    """What `serving_default` must answer: the Keras model on Python-tokenized, packed ids."""
    inputs = reference_pack(
        [tokenizer.encode(text) for text in texts],
        [tokenizer.encode(text) for text in text_pairs] if text_pairs else None,
        export.max_sequence_length,
        tokenizer.cls_id,
        tokenizer.sep_id,
        tokenizer.pad_id,
    )
    return keras_outputs_of_ids(export, inputs)


def keras_outputs_of_ids(export, inputs) -> dict:
    """What `serve_token_ids` must answer: the Keras model on the packed ids `inputs`."""
    batch_size = len(inputs["token_ids"])
    if isinstance(export.model, AlbertClassifier):
        logits = np.asarray(export.model(inputs, training=False))
        if export.model.num_classes == 1:
            return {"score": logits[:, 0]}
        return {
            "logits": logits,
            "probabilities": softmax(logits.astype(np.float64), axis=-1),
            "label": logits.argmax(-1),
        }
    if isinstance(export.model, AlbertPretrainer):
        mask_positions = np.zeros((batch_size, 1), np.int32)
        sop_logits = export.model({**inputs, "mask_positions": mask_positions})["sop_logits"]
        outputs = export.model.backbone(inputs, training=False)
    else:
        outputs = export.model(inputs, training=False)
    result = {
        "pooled_output": np.asarray(outputs["pooled_output"]),
        "sequence_output": np.asarray(outputs["sequence_output"]),
        "padding_mask": inputs["padding_mask"],
    }
    if isinstance(export.model, AlbertPretrainer):
        result["sop_logits"] = np.asarray(sop_logits)
    return result


def unexpected_errors(export) -> list:
    return [
        (key, export.report["request_errors"][index])
        for key, index in export.request_keys.items()
        if key[0] != "error" and export.report["request_errors"][index]
    ]


def assert_outputs_close(actual: dict, expected: dict):
    assert set(actual) == set(expected), (set(actual), set(expected))
    for name, value in expected.items():
        assert actual[name].shape == np.shape(value), (name, actual[name].shape, np.shape(value))
        np.testing.assert_allclose(actual[name], value, atol=TOLERANCE, rtol=0, err_msg=name)


@pytest.fixture(scope="module")
def exports(served):
    return served["exports"]


@pytest.mark.parametrize("name", ["sst2_pair", "stsb", "embeddings", "pretrainer"])
def test_sst2_through_the_session_equals_keras(served, albert_tokenizer_for_export, name):
    export = served["exports"][name]
    tokenizer = albert_tokenizer_for_export
    assert unexpected_errors(export) == []
    sentences = sst2_sentences()
    pairs = sentences[1:] + sentences[:1] if export.text_pair else None
    checked = 0
    for (kind, start), index in export.request_keys.items():
        if kind not in ("text", "token_ids", "examples"):
            continue
        stop = {0: 1, 1: 8, 8: 24, 24: 50}[start]
        texts = sentences[start:stop]
        expected = keras_outputs(export, tokenizer, texts, pairs[start:stop] if pairs else None)
        actual = outputs_of(export.responses[index])
        if kind == "examples":
            if export.model.num_classes == 1:
                expected = {"outputs": expected["score"]}
            else:
                expected = {
                    "classes": np.array([["neg", "pos"]] * len(texts)),
                    "scores": expected["probabilities"],
                }
                np.testing.assert_array_equal(actual.pop("classes"), expected.pop("classes"))
        assert_outputs_close(actual, expected)
        checked += 1
    assert checked == (12 if isinstance(export.model, AlbertClassifier) else 8)


def test_outputs_are_float32_and_signatures_as_documented(exports):
    classifier = exports["sst2_pair"].report["signatures"]
    assert set(classifier) == {"serving_default", "serve_token_ids", "serve_examples"}
    default = classifier["serving_default"]
    assert default["method_name"] == "tensorflow/serving/predict"
    assert {name: spec["dtype"] for name, spec in default["inputs"].items()} == {
        "text": "string",
        "text_pair": "string",
    }
    assert default["inputs"]["text"]["shape"] == [-1]
    assert {name: spec["dtype"] for name, spec in default["outputs"].items()} == {
        "logits": "float32",
        "probabilities": "float32",
        "label": "int32",
    }
    token_ids = classifier["serve_token_ids"]
    assert {name: (spec["dtype"], spec["shape"]) for name, spec in token_ids["inputs"].items()} == {
        name: ("int32", [-1, -1]) for name in ("token_ids", "segment_ids", "padding_mask")
    }
    examples = classifier["serve_examples"]
    assert examples["method_name"] == "tensorflow/serving/classify"
    assert {name: spec["dtype"] for name, spec in examples["outputs"].items()} == {
        "classes": "string",
        "scores": "float32",
    }
    regressor = exports["stsb"].report["signatures"]
    assert regressor["serve_examples"]["method_name"] == "tensorflow/serving/regress"
    assert regressor["serving_default"]["outputs"]["score"]["dtype"] == "float32"
    assert set(regressor["serving_default"]["inputs"]) == {"text"}
    backbone = exports["embeddings"].report["signatures"]
    assert set(backbone) == {"serving_default", "serve_token_ids"}
    assert {
        name: spec["dtype"] for name, spec in backbone["serving_default"]["outputs"].items()
    } == {
        "pooled_output": "float32",
        "sequence_output": "float32",
        "padding_mask": "int32",
    }
    pretrainer = exports["pretrainer"].report["signatures"]
    assert set(pretrainer["serving_default"]["inputs"]) == {"text", "text_pair"}
    assert pretrainer["serving_default"]["outputs"]["sop_logits"]["dtype"] == "float32"


def test_serve_token_ids_refuses_what_the_model_cannot_embed(exports):
    export = exports["embeddings"]
    errors = export.report["request_errors"]
    too_long = errors[export.request_keys[("error", "too_long")]]
    assert "InvalidArgumentError" in too_long and "max_sequence_length=64" in too_long
    bad_id = errors[export.request_keys[("error", "bad_id")]]
    assert "InvalidArgumentError" in bad_id and "vocabulary_size=30000" in bad_id


def test_sentencepiece_model_is_an_asset(exports, albert_tokenizer_for_export):
    for export in exports.values():
        assert export.report["assets"] == ["sentencepiece.model"]
        assert export.report["asset_file_defs"] == ["sentencepiece.model"]
        with open(f"{export.path}/assets/sentencepiece.model", "rb") as file:
            assert file.read() == albert_tokenizer_for_export.serialized_model


def test_dynamic_padding_to_the_longest_capped(exports, albert_tokenizer_for_export):
    export = exports["embeddings"]
    tokenizer = albert_tokenizer_for_export
    sentences = sst2_sentences()[8:24]
    outputs = outputs_of(export.responses[export.request_keys[("text", 8)]])
    longest = max(len(tokenizer.encode(text)) for text in sentences) + 2
    assert longest < export.max_sequence_length
    assert outputs["sequence_output"].shape[1] == longest
    assert outputs["padding_mask"].sum(axis=1).max() == longest
    # 100,000 characters: capped at max_sequence_length.
    long_outputs = outputs_of(export.responses[export.request_keys[("bad", "long")]])
    assert long_outputs["padding_mask"].shape == (1, export.max_sequence_length)
    assert long_outputs["padding_mask"].all()


def test_op_allow_list_and_no_xla(served):
    core_ops = set(served["report"]["core_ops"])
    for export in served["exports"].values():
        op_types = set(export.report["op_types"])
        assert {"SentencepieceOp", "SentencepieceTokenizeOp"} <= op_types
        assert op_types.isdisjoint(FORBIDDEN_OPS), op_types & FORBIDDEN_OPS
        assert op_types - core_ops <= ALLOWED_TF_TEXT_OPS, op_types - core_ops
        assert export.report["must_compile"] == []
        assert export.report["integer_transposes"] == []
        assert export.report["variable_reads"] == []


def test_harness_did_not_import_keras_albert(served):
    assert [name for name in served["report"]["modules"] if "keras_albert" in name] == []


def keras_outputs_of_warmup(export, tokenizer, log) -> dict:
    """What the servable must answer to the warmup record `log`, computed by Keras."""
    kind = log.WhichOneof("log_type")
    if kind == "predict_log":
        request = log.predict_log.request
        inputs = {name: tf.make_ndarray(proto) for name, proto in request.inputs.items()}
        if request.model_spec.signature_name == "serve_token_ids":
            return keras_outputs_of_ids(export, inputs)
        assert request.model_spec.signature_name == "serving_default"
        texts = [text.decode() for text in inputs["text"]]
        pairs = [text.decode() for text in inputs["text_pair"]] if "text_pair" in inputs else None
        return keras_outputs(export, tokenizer, texts, pairs)
    request = getattr(log, kind).request
    features = [example.features.feature for example in request.input.example_list.examples]
    texts = [feature["text"].bytes_list.value[0].decode() for feature in features]
    pairs = None
    if export.text_pair:
        pairs = [feature["text_pair"].bytes_list.value[0].decode() for feature in features]
    expected = keras_outputs(export, tokenizer, texts, pairs)
    if kind == "regress_log":
        return {"outputs": expected["score"]}
    return {
        "classes": np.array([["neg", "pos"]] * len(texts)),
        "scores": expected["probabilities"],
    }


def test_warmup_records_replay(exports, albert_tokenizer_for_export):
    for export in exports.values():
        warmup = export.report["warmup"]
        assert 0 < warmup["count"] <= 1000
        assert warmup["errors"] == [None] * warmup["count"]
        expected_signatures = {"serving_default", "serve_token_ids"}
        if isinstance(export.model, AlbertClassifier):
            expected_signatures.add("serve_examples")
            kind = "regress_log" if export.model.num_classes == 1 else "classify_log"
            assert kind in warmup["kinds"]
        assert set(warmup["signatures"]) == expected_signatures
        records = read_logs(f"{export.path}/assets.extra/tf_serving_warmup_requests")
        assert len(records) == len(export.warmup_responses) == warmup["count"]
        for record, response in zip(records, export.warmup_responses, strict=True):
            actual = outputs_of(response)
            expected = keras_outputs_of_warmup(export, albert_tokenizer_for_export, record)
            if "classes" in expected:
                np.testing.assert_array_equal(actual.pop("classes"), expected.pop("classes"))
            assert_outputs_close(actual, expected)


def test_models_config(served):
    config = {entry["name"]: entry for entry in served["report"]["models_config"]}
    assert set(config) == {"sst2_pair", "stsb", "embeddings", "pretrainer"}
    for name, entry in config.items():
        assert entry["base_path"] == f"{served['base_dir']}/{name}"
        assert entry["platform"] == "tensorflow"
        assert entry["latest_versions"] == 1


@pytest.mark.parametrize("name", ["sst2_pair", "stsb", "embeddings", "pretrainer"])
def test_rest_bodies_in_both_formats(served, albert_tokenizer_for_export, name):
    export = served["exports"][name]
    assert export.report["rest_errors"] == [None] * len(export.rest_bodies)
    grpc = outputs_of(export.responses[export.request_keys[("rest_grpc", 0)]])
    sentences = sst2_sentences()
    pairs = sentences[1:] + sentences[:1] if export.text_pair else None
    expected = keras_outputs(
        export, albert_tokenizer_for_export, sentences[1:8], pairs[1:8] if pairs else None
    )
    for rest_format in ("instances", "inputs"):
        rest = outputs_of(export.rest_responses[export.rest_keys[rest_format]])
        assert_outputs_close(rest, grpc)
        # The seven SST-2 rows equal Keras; the eighth is the b64-sent invalid UTF-8 text.
        first_seven = {key: value[:7] for key, value in rest.items()}
        if "sequence_output" in first_seven:
            width = expected["sequence_output"].shape[1]
            first_seven["sequence_output"] = first_seven["sequence_output"][:, :width]
            first_seven["padding_mask"] = first_seven["padding_mask"][:, :width]
        assert_outputs_close(first_seven, expected)
        if ("token_ids", rest_format) in export.rest_keys:
            token_rest = outputs_of(
                export.rest_responses[export.rest_keys[("token_ids", rest_format)]]
            )
            assert_outputs_close(token_rest, expected)


def test_bad_inputs_give_defined_outputs(exports, albert_tokenizer_for_export):
    """Documented behaviour: every text is packed as the tokenizer's Python path tokenizes it
    (invalid UTF-8 → U+FFFD, unknown characters → <unk>, too long → truncated), an empty or
    whitespace-only text becomes `[CLS] [SEP]`, and a batch of 0 gives empty outputs."""
    tokenizer = albert_tokenizer_for_export
    for export in exports.values():
        assert unexpected_errors(export) == []
        for key, text in BAD_TEXTS.items():
            actual = outputs_of(export.responses[export.request_keys[("bad", key)]])
            expected = keras_outputs(export, tokenizer, [text], [b""] if export.text_pair else None)
            assert_outputs_close(actual, expected)
        all_bad = outputs_of(export.responses[export.request_keys[("bad", "all")]])
        texts = list(BAD_TEXTS.values())
        assert_outputs_close(
            all_bad,
            keras_outputs(
                export, tokenizer, texts, [b"a pair"] * len(texts) if export.text_pair else None
            ),
        )
        empty = outputs_of(export.responses[export.request_keys[("bad", "batch_of_0")]])
        for value in empty.values():
            assert value.shape[0] == 0

    backbone = exports["embeddings"]
    lengths = {
        key: int(
            outputs_of(backbone.responses[backbone.request_keys[("bad", key)]])[
                "padding_mask"
            ].sum()
        )
        for key in BAD_TEXTS
    }
    assert lengths["empty"] == lengths["whitespace"] == 2
    assert lengths["long"] == backbone.max_sequence_length
    assert lengths["emoji"] == len(tokenizer.encode(BAD_TEXTS["emoji"])) + 2
    assert tokenizer.unk_id in tokenizer.encode(BAD_TEXTS["emoji"])
