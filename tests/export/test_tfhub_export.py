"""The TF-Hub / Kaggle interface export (`keras_albert.export.tfhub`), used as a TF-Hub user would.

A tiny backbone (dropout 0.1, random weights, biases and LayerNorm too) with the real 30k
SentencePiece model, exported as `encoder/` + `preprocessor/`. In a fresh process
(`tfhub_consumer.py`: tensorflow_hub + tf_keras), `hub.KerasLayer(preprocessor)` +
`hub.KerasLayer(encoder, trainable=True)` give the ids our packer gives and our Keras model's
pooled, sequence and per-layer outputs (1e-5) on real SST-2 dev sentences, and three
`model.fit` steps move the encoder's weights and lower the loss. In this process (Keras 3):
`keras.layers.TFSMLayer` over the same SavedModels, the pretrainer's `.mlm`, and
`bert_pack_inputs` on pairs at another `seq_length`.
"""

import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_albert import AlbertBackbone, AlbertPretrainer, AlbertTokenizer
from keras_albert.export.tfhub import export_tfhub
from tests.test_tool_errors import load_tool
from tests.text.text_data import ALBERT_MODEL, DATA, load_sst2_dev

ATOL = 1e-5
SEQUENCE_LENGTH = 128
NUM_LAYERS = 3
CONSUMER = os.path.join(os.path.dirname(__file__), "tfhub_consumer.py")


def perturbed(model, seed):
    rng = np.random.default_rng(seed)
    for weight in model.weights:
        weight.assign(weight.numpy() + rng.normal(0, 0.2, weight.shape).astype("float32"))
    return model


def tiny_backbone(**changes):
    sizes = dict(
        vocabulary_size=30000,
        embedding_dim=8,
        hidden_dim=16,
        intermediate_dim=32,
        num_layers=NUM_LAYERS,
        num_heads=2,
        max_sequence_length=SEQUENCE_LENGTH,
    )
    return AlbertBackbone(**{**sizes, **changes})


def sst2_examples(count):
    lines = (DATA / "sst2_dev.tsv").read_text(encoding="utf-8").split("\n")[1 : count + 1]
    labels = [int(line.rsplit("\t", 1)[1]) for line in lines]
    sentences = load_sst2_dev()[:count]
    return sentences, labels


@pytest.fixture(scope="module")
def tokenizer():
    return AlbertTokenizer(ALBERT_MODEL)


@pytest.fixture(scope="module")
def backbone():
    return perturbed(tiny_backbone(dropout=0.1), seed=3)


@pytest.fixture(scope="module")
def exported(tmp_path_factory, backbone, tokenizer):
    return export_tfhub(backbone, tokenizer, tmp_path_factory.mktemp("tfhub") / "albert")


def our_outputs(backbone, tokenizer, sentences):
    packed = tokenizer.packer(SEQUENCE_LENGTH)(tokenizer(tf.constant(sentences)))
    inputs = {name: np.asarray(value).astype("int32") for name, value in packed.items()}
    all_layers = AlbertBackbone.from_config({**backbone.get_config(), "output_all_layers": True})
    all_layers.set_weights(backbone.get_weights())
    return inputs, {k: v for k, v in all_layers(inputs, training=False).items()}


@pytest.mark.slow
def test_hub_keras_layers_reproduce_our_outputs_and_fine_tune(
    tmp_path, exported, backbone, tokenizer
):
    sentences, labels = sst2_examples(8)
    assert len(set(labels)) == 2
    (tmp_path / "inputs.json").write_text(json.dumps({"sentences": sentences, "labels": labels}))
    environment = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    environment.pop("KERAS_BACKEND", None)
    result = subprocess.run(
        [sys.executable, CONSUMER, exported, tmp_path / "inputs.json", tmp_path / "out.npz"],
        capture_output=True,
        text=True,
        env=environment,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    hub = dict(np.load(tmp_path / "out.npz"))

    inputs, expected = our_outputs(backbone, tokenizer, sentences)
    np.testing.assert_array_equal(hub["input_word_ids"], inputs["token_ids"])
    np.testing.assert_array_equal(hub["input_type_ids"], inputs["segment_ids"])
    np.testing.assert_array_equal(hub["input_mask"], inputs["padding_mask"])
    for name in ("pooled_output", "sequence_output"):
        np.testing.assert_allclose(hub[name], expected[name], atol=ATOL, rtol=0)
    np.testing.assert_allclose(hub["default"], expected["pooled_output"], atol=ATOL, rtol=0)
    # One entry per pass of the ONE shared block, each that pass's output.
    assert hub["encoder_outputs"].shape[0] == NUM_LAYERS
    np.testing.assert_allclose(
        hub["encoder_outputs"], np.stack(expected["encoder_layer_outputs"]), atol=ATOL, rtol=0
    )
    # training=True reaches the encoder: dropout 0.1 changes the outputs.
    assert hub["dropout_difference"] > 1e-3
    assert int(hub["num_trainable_weights"]) == len(backbone.trainable_weights)
    assert hub["weight_change"] > 1e-4
    assert hub["loss_after"] < hub["loss_before"], (hub["loss_before"], hub["loss_after"])


def test_tfsm_layer_loads_the_tfhub_saved_models(exported, backbone, tokenizer):
    sentences = load_sst2_dev()[8:14]
    # The documented Keras 3 recipe (docs/guides/checkpoints.md, "From / to"): the object's
    # own __call__.
    preprocessor = keras.layers.TFSMLayer(
        os.path.join(exported, "preprocessor"), call_endpoint="__call__"
    )
    encoder = keras.layers.TFSMLayer(os.path.join(exported, "encoder"), call_endpoint="__call__")
    assert len(encoder.trainable_weights) == len(backbone.trainable_weights)
    outputs = encoder(preprocessor(tf.constant(sentences)))
    _, expected = our_outputs(backbone, tokenizer, sentences)
    for name in ("pooled_output", "sequence_output"):
        np.testing.assert_allclose(outputs[name], expected[name], atol=ATOL, rtol=0)


def test_preprocessor_tokenize_and_bert_pack_inputs_on_pairs(exported, tokenizer):
    preprocessor = tf.saved_model.load(os.path.join(exported, "preprocessor"))
    sentences = load_sst2_dev()[20:26]
    first, second = tf.constant(sentences[:3]), tf.constant(sentences[3:])
    tokens = preprocessor.tokenize(first)
    assert tokens.to_list() == [tokenizer.encode(sentence) for sentence in sentences[:3]]
    special = {k: int(v) for k, v in preprocessor.tokenize.get_special_tokens_dict().items()}
    assert special == {
        "vocab_size": 30000,
        "start_of_sequence_id": tokenizer.cls_id,
        "end_of_segment_id": tokenizer.sep_id,
        "padding_id": tokenizer.pad_id,
        "mask_id": tokenizer.mask_id,
    }
    # seq_length 20 truncates these pairs: the original's longest-first truncation.
    packed = preprocessor.bert_pack_inputs([tokens, preprocessor.tokenize(second)], seq_length=20)
    expected = tokenizer.packer(20)((tokenizer(first), tokenizer(second)))
    np.testing.assert_array_equal(packed["input_word_ids"], expected["token_ids"])
    np.testing.assert_array_equal(packed["input_type_ids"], expected["segment_ids"])
    np.testing.assert_array_equal(packed["input_mask"], np.asarray(expected["padding_mask"]))
    # Ragged rank 2 (words, then pieces) is merged per row, as Model Garden's packer does.
    words = tf.RaggedTensor.from_uniform_row_length(tokens, 1)
    rank2 = preprocessor.bert_pack_inputs([words])
    np.testing.assert_array_equal(
        rank2["input_word_ids"], tokenizer.packer(SEQUENCE_LENGTH)(tokenizer(first))["token_ids"]
    )


@pytest.mark.slow
def test_pretrainer_mlm_sub_object(tmp_path, tokenizer):
    pretrainer = perturbed(AlbertPretrainer(tiny_backbone()), seed=4)
    path = export_tfhub(pretrainer, tokenizer, tmp_path / "pretrainer")
    encoder = tf.saved_model.load(os.path.join(path, "encoder"))
    packer = tokenizer.packer(32)
    packed = packer(tokenizer(tf.constant(load_sst2_dev()[:4])))
    positions = np.array([[1, 2, 3]] * 4, dtype="int32")
    ours = pretrainer(
        {
            **{k: np.asarray(v).astype("int32") for k, v in packed.items()},
            "mask_positions": positions,
        }
    )
    theirs = encoder.mlm(
        {
            "input_word_ids": packed["token_ids"],
            "input_type_ids": packed["segment_ids"],
            "input_mask": tf.cast(packed["padding_mask"], tf.int32),
            "masked_lm_positions": positions,
        },
        training=False,
    )
    np.testing.assert_allclose(theirs["mlm_logits"], ours["mlm_logits"], atol=ATOL, rtol=0)
    assert len(theirs["encoder_outputs"]) == NUM_LAYERS
    # The core object's variables are the encoder's; .mlm adds the head's.
    assert len(encoder.trainable_variables) == len(pretrainer.backbone.trainable_weights)
    assert len(encoder.mlm.trainable_variables) > len(encoder.trainable_variables)
    assert encoder.sp_model_file.asset_path.numpy().endswith(b"sentencepiece.model")


@pytest.mark.slow
def test_export_tool_writes_encoder_and_preprocessor(tmp_path, backbone, tokenizer):
    backbone.save(tmp_path / "backbone.keras")
    (tmp_path / "tokenizer.model").write_bytes(ALBERT_MODEL.read_bytes())
    tool = load_tool("export_saved_model")
    argv = [str(tmp_path / "backbone.keras"), "--format", "tfhub", "--name", "hub"]
    assert tool.main([*argv, "--output-dir", str(tmp_path / "out")]) == 0
    assert sorted(os.listdir(tmp_path / "out" / "hub")) == ["encoder", "preprocessor"]
    with pytest.raises(ValueError, match="`pair` must be left at False for --format tfhub"):
        tool.main([*argv, "--output-dir", str(tmp_path / "o2"), "--pair"])


def test_classifier_is_refused(tmp_path, backbone, tokenizer):
    from keras_albert import AlbertClassifier

    with pytest.raises(TypeError, match="must be an AlbertBackbone or AlbertPretrainer"):
        export_tfhub(AlbertClassifier(backbone, num_classes=2), tokenizer, tmp_path / "c")


def test_a_failed_export_leaves_neither_savedmodel(tmp_path, backbone, tokenizer, monkeypatch):
    save, written = tf.saved_model.save, []

    def full_disk_at_the_preprocessor(obj, path, *args, **kwargs):
        written.append(os.path.basename(path))
        if len(written) == 2:
            raise OSError("No space left on device")
        return save(obj, path, *args, **kwargs)

    monkeypatch.setattr(tf.saved_model, "save", full_disk_at_the_preprocessor)
    with pytest.raises(OSError, match="No space left"):
        export_tfhub(backbone, tokenizer, tmp_path / "albert")
    assert written == ["encoder", "preprocessor"]  # the encoder was written, then removed
    assert os.listdir(tmp_path) == []
