"""The exports in two more runtimes: TFLite (token ids in) and Keras 3's `TFSMLayer` (text in).

One tiny classifier with the real 30k SentencePiece model and random weights (biases and
LayerNorm too); real SST-2 dev sentences. TFLite: `tf.lite.Interpreter` on the ids our
tokenizer packs gives the Keras model's probabilities (1e-5), one sentence at a time as the
exported `[1, seq]` signature takes them. TFSMLayer: the TF Serving export, loaded with
`keras.layers.TFSMLayer(call_endpoint="serving_default")`, maps the raw sentences to the same
probabilities.
"""

import os
import re

import keras
import numpy as np
import pytest
import sentencepiece as spm
import tensorflow as tf

from keras_albert import AlbertBackbone, AlbertClassifier, AlbertTokenizer
from keras_albert.export import export_for_serving
from keras_albert.export.tflite import export_tflite
from keras_albert.export.vocabulary import SENTENCEPIECE_FILE
from tests.test_tool_errors import load_tool
from tests.text.text_data import ALBERT_MODEL, load_sst2_dev

ATOL = 1e-5
SEQUENCE_LENGTH = 64
NUM_SENTENCES = 16


@pytest.fixture(scope="module")
def tokenizer():
    return AlbertTokenizer(ALBERT_MODEL)


@pytest.fixture(scope="module")
def classifier():
    backbone = AlbertBackbone(
        vocabulary_size=30000,
        embedding_dim=8,
        hidden_dim=16,
        intermediate_dim=32,
        num_layers=2,
        num_heads=2,
        max_sequence_length=SEQUENCE_LENGTH,
    )
    model = AlbertClassifier(backbone, num_classes=3)
    rng = np.random.default_rng(5)
    for weight in model.weights:
        weight.assign(weight.numpy() + rng.normal(0, 0.2, weight.shape).astype("float32"))
    return model


@pytest.fixture(scope="module")
def sentences():
    return load_sst2_dev()[:NUM_SENTENCES]


def packed_one_by_one(tokenizer, sentences):
    """Each sentence packed alone, unpadded: what an app hands the `[1, seq]` TFLite model."""
    packer = tokenizer.packer(SEQUENCE_LENGTH)
    for sentence in sentences:
        packed = packer(tokenizer(tf.constant([sentence])))
        length = int(tf.reduce_sum(tf.cast(packed["padding_mask"], tf.int32)))
        yield {
            name: np.asarray(value)[:, :length].astype("int32") for name, value in packed.items()
        }


def test_tflite_interpreter_matches_keras_on_sst2_token_ids(
    tmp_path, classifier, tokenizer, sentences
):
    path = export_tflite(classifier, tokenizer, tmp_path / "sst2")
    assert path == str(tmp_path / "sst2" / "model.tflite")
    # SentencePiece alone on the written file (what the app runs) gives the tokenizer's ids,
    # capitals and accents included (the released file alone does not).
    written = spm.SentencePieceProcessor(model_file=str(tmp_path / "sst2" / SENTENCEPIECE_FILE))
    released = spm.SentencePieceProcessor(model_file=str(ALBERT_MODEL))
    texts = [*sentences, "A Charming Journey.", "Café Déjà Vu, ÉCOLE naïve"]
    texts = [text for text in texts if not re.search(r"\d,", text)]  # no digit-comma re-split
    assert [written.encode(t) for t in texts] == [tokenizer.encode(t) for t in texts]
    assert released.encode("A Charming Journey.") != tokenizer.encode("A Charming Journey.")
    interpreter = tf.lite.Interpreter(model_path=path)
    runner = interpreter.get_signature_runner()
    lengths = set()
    for inputs in packed_one_by_one(tokenizer, sentences):
        lengths.add(inputs["token_ids"].shape[1])
        expected = tf.nn.softmax(classifier(inputs), axis=-1).numpy()
        outputs = runner(**inputs)
        np.testing.assert_allclose(outputs["probabilities"], expected, atol=ATOL, rtol=0)
        np.testing.assert_array_equal(outputs["label"], expected.argmax(-1))
    assert len(lengths) > 1  # the sequence dimension really is dynamic
    # Builtins only: no Flex (TensorFlow) op, no custom op a stock interpreter lacks.
    ops = {op["op_name"] for op in interpreter._get_ops_details()}
    assert "FULLY_CONNECTED" in ops
    assert not any(op.startswith("Flex") or op == "CUSTOM" for op in ops), ops


def test_export_tool_writes_tflite_beside_the_vocabulary(tmp_path, classifier, tokenizer):
    classifier.save(tmp_path / "best.keras")
    (tmp_path / "tokenizer.model").write_bytes(ALBERT_MODEL.read_bytes())
    tool = load_tool("export_saved_model")
    argv = [str(tmp_path / "best.keras"), "--format", "tflite", "--name", "sst2"]
    assert tool.main([*argv, "--output-dir", str(tmp_path / "out")]) == 0
    assert sorted(os.listdir(tmp_path / "out" / "sst2")) == ["model.tflite", SENTENCEPIECE_FILE]
    with pytest.raises(ValueError, match="`pair` must be left at False for --format tflite"):
        tool.main([*argv, "--output-dir", str(tmp_path / "o2"), "--pair"])
    with pytest.raises(ValueError, match="`precision` must be one of"):
        tool.main([*argv, "--output-dir", str(tmp_path / "o3"), "--precision", "bfloat16"])


def test_tfsm_layer_loads_the_string_in_export(tmp_path, classifier, tokenizer, sentences):
    version_dir = export_for_serving(
        classifier, tokenizer, base_dir=tmp_path, name="sst2", warmup_texts=sentences[:2]
    )
    # The documented Keras 3 recipe (docs/guides/checkpoints.md, "From / to"): a layer over
    # the SavedModel.
    layer = keras.layers.TFSMLayer(version_dir, call_endpoint="serving_default")
    # A signature is called by keyword in TensorFlow; TFSMLayer passes its input positionally,
    # which binds to the one input `text` (a pair export would need both: not this recipe).
    outputs = layer(tf.constant(sentences))
    packed = tokenizer.packer(SEQUENCE_LENGTH)(tokenizer(tf.constant(sentences)))
    expected = tf.nn.softmax(classifier({k: np.asarray(v) for k, v in packed.items()}), -1)
    np.testing.assert_allclose(outputs["probabilities"], expected, atol=ATOL, rtol=0)
    # And inside a Keras model, text in.
    text = keras.Input(shape=(), dtype="string", name="text")
    model = keras.Model(text, layer(text)["probabilities"])
    np.testing.assert_allclose(model(tf.constant(sentences)), expected, atol=ATOL, rtol=0)


def test_a_failed_export_leaves_no_model(tmp_path, classifier, tokenizer, monkeypatch):
    # model.tflite is written, then the tokenizer's file cannot be.
    monkeypatch.setattr(
        "keras_albert.export.vocabulary.SENTENCEPIECE_FILE", os.path.join("missing", "spm.model")
    )
    with pytest.raises(FileNotFoundError):
        export_tflite(classifier, tokenizer, tmp_path / "sst2")
    assert os.listdir(tmp_path) == []
