"""keras-hub presets both ways, with keras-hub itself as the reference.

Ours → `save_checkpoint(format="keras_hub")` → `keras_hub.models.*.from_preset`, and keras-hub's
own `save_to_preset` → `load_checkpoint`: the same outputs (1e-5) on real SST-2 sentences
tokenized with the real 30k SentencePiece model, and the same token ids from both tokenizers
(cased and accented text too: the preset's SentencePiece model lowercases and strips accents
itself).
Tiny widths, the real vocabulary; every weight random (biases and LayerNorm too), so that a
mis-mapped tensor shows.
"""

import os
import shutil

import h5py
import keras_hub
import numpy as np
import pytest
import tensorflow as tf

from keras_albert import AlbertBackbone, AlbertClassifier, AlbertPretrainer, AlbertTokenizer
from keras_albert.convert import find_vocabulary, load_checkpoint, save_checkpoint
from keras_albert.export import export_checkpoint
from keras_albert.text.sentencepiece_model import with_albert_normalization
from tests.helpers import tiny_config
from tests.test_tool_errors import load_tool
from tests.text.text_data import ALBERT_MODEL, load_sst2_dev

ATOL = 1e-5
SEQUENCE_LENGTH = 64
NUM_SENTENCES = 32
# Text that keras-hub's tokenizer, which runs SentencePiece alone, gets wrong unless the preset's
# SentencePiece model lowercases and strips accents as ours does.
CASED_AND_ACCENTED = [
    "A Charming Journey.",
    "ÉCOLE NORMALE SUPÉRIEURE, Paris",
    "Café Crème at the Ærøskøbing Ñandú",
    "naïve façade: Ångström, Straße, İstanbul",
    "Ｆｕｌｌｗｉｄｔｈ ＡＢＣ and the ﬁ ligature",
    "Tab\tand\u3000ideographic  spaces,   Zürich\n",
]
# Two groups of two blocks over four layers: the group order and the block numbering in the
# weights file both matter.
SIZES = dict(
    vocabulary_size=30000,
    num_layers=4,
    num_groups=2,
    num_inner_repetitions=2,
    max_sequence_length=SEQUENCE_LENGTH,
)
KERAS_HUB_SIZES = dict(
    vocabulary_size=30000,
    num_layers=4,
    num_heads=2,
    embedding_dim=8,
    hidden_dim=16,
    intermediate_dim=32,
    num_groups=2,
    num_inner_repetitions=2,
    max_sequence_length=SEQUENCE_LENGTH,
)


def randomize(model, seed):
    rng = np.random.default_rng(seed)
    for weight in model.weights:
        weight.assign(weight.numpy() + rng.normal(0, 0.1, weight.shape).astype("float32"))


@pytest.fixture(scope="module")
def sentences():
    return load_sst2_dev()[:NUM_SENTENCES]


@pytest.fixture(scope="module")
def inputs(sentences):
    tokenizer = AlbertTokenizer(ALBERT_MODEL)
    packed = tokenizer.packer(SEQUENCE_LENGTH)(tokenizer(tf.constant(sentences)))
    return {name: np.asarray(value).astype("int32") for name, value in packed.items()}


def assert_same_backbone_outputs(ours, theirs, inputs):
    actual, expected = ours(inputs), theirs(inputs)
    keep = inputs["padding_mask"].astype(bool)
    np.testing.assert_allclose(
        np.asarray(actual["sequence_output"])[keep],
        np.asarray(expected["sequence_output"])[keep],
        atol=ATOL,
        rtol=0,
    )
    np.testing.assert_allclose(
        actual["pooled_output"], expected["pooled_output"], atol=ATOL, rtol=0
    )


@pytest.fixture(scope="module")
def our_classifier():
    classifier = AlbertClassifier(
        AlbertBackbone.from_albert_config(tiny_config(**SIZES)), num_classes=3
    )
    randomize(classifier, seed=1)
    return classifier


@pytest.fixture(scope="module")
def written_preset(tmp_path_factory, our_classifier):
    directory = tmp_path_factory.mktemp("ours") / "preset"
    save_checkpoint(our_classifier, directory, format="keras_hub", vocabulary=ALBERT_MODEL)
    return directory


def test_keras_hub_loads_our_classifier_preset(written_preset, our_classifier, inputs):
    theirs = keras_hub.models.AlbertTextClassifier.from_preset(str(written_preset))
    np.testing.assert_allclose(theirs(inputs), our_classifier(inputs), atol=ATOL, rtol=0)
    backbone = keras_hub.models.AlbertBackbone.from_preset(str(written_preset))
    assert_same_backbone_outputs(our_classifier.backbone, backbone, inputs)
    assert backbone.count_params() == our_classifier.backbone.count_params()


def test_keras_hub_preprocessor_of_our_preset_packs_our_ids(written_preset, sentences):
    preprocessor = keras_hub.models.AlbertTextClassifierPreprocessor.from_preset(
        str(written_preset), sequence_length=SEQUENCE_LENGTH
    )
    texts = tf.constant(sentences + CASED_AND_ACCENTED)
    theirs = preprocessor(texts)
    tokenizer = AlbertTokenizer(ALBERT_MODEL)
    ours = tokenizer.packer(SEQUENCE_LENGTH)(tokenizer(texts))
    for name in ("token_ids", "segment_ids", "padding_mask"):
        np.testing.assert_array_equal(
            np.asarray(theirs[name]).astype("int32"), np.asarray(ours[name]).astype("int32")
        )


def test_keras_hub_tokenizer_of_our_preset_gives_our_ids_on_cased_and_accented_text(
    written_preset,
):
    theirs = keras_hub.models.AlbertTokenizer.from_preset(str(written_preset))
    ours = AlbertTokenizer(ALBERT_MODEL)
    assert ours.encode("A Charming Journey.") == [21, 13275, 2998, 9]  # ▁a ▁charming ▁journey .
    for text in CASED_AND_ACCENTED:
        assert [int(i) for i in theirs(text)] == ours.encode(text), text
    # The SentencePiece model as released: keras-hub makes "<unk>" (1) of the capitals.
    released = keras_hub.models.AlbertTokenizer(proto=str(ALBERT_MODEL))
    assert 1 in [int(i) for i in released("A Charming Journey.")]


def test_tokenizers_differ_only_by_accent_stripping():
    """All 872 SST-2 dev sentences: ours with `strip_accents=False` equals keras-hub's
    tokenizer; with the original recipe only the accented sentences differ."""
    sentences = load_sst2_dev()
    theirs = keras_hub.models.AlbertTokenizer(proto=str(ALBERT_MODEL))(tf.constant(sentences))
    theirs = [list(ids) for ids in theirs]  # eager keras-hub returns lists of lists
    keeping = AlbertTokenizer(ALBERT_MODEL, strip_accents=False)(tf.constant(sentences))
    assert keeping.to_list() == theirs
    original = AlbertTokenizer(ALBERT_MODEL)(tf.constant(sentences)).to_list()
    differ = {s for s, a, b in zip(sentences, original, theirs, strict=True) if a != b}
    assert differ and all(not sentence.isascii() for sentence in differ)


@pytest.fixture(scope="module")
def keras_hub_classifier_preset(tmp_path_factory):
    backbone = keras_hub.models.AlbertBackbone(**KERAS_HUB_SIZES)
    tokenizer = keras_hub.models.AlbertTokenizer(proto=str(ALBERT_MODEL))
    preprocessor = keras_hub.models.AlbertTextClassifierPreprocessor(
        tokenizer, sequence_length=SEQUENCE_LENGTH
    )
    classifier = keras_hub.models.AlbertTextClassifier(
        backbone, num_classes=2, preprocessor=preprocessor
    )
    randomize(classifier, seed=2)
    directory = tmp_path_factory.mktemp("keras_hub") / "classifier"
    classifier.save_to_preset(directory)
    return classifier, directory


def test_load_checkpoint_reads_a_keras_hub_classifier_preset(keras_hub_classifier_preset, inputs):
    theirs, directory = keras_hub_classifier_preset
    ours = load_checkpoint(directory)
    assert isinstance(ours, AlbertClassifier) and ours.num_classes == 2
    np.testing.assert_allclose(ours(inputs), theirs(inputs), atol=ATOL, rtol=0)
    backbone = load_checkpoint(directory, model="backbone")
    assert isinstance(backbone, AlbertBackbone)
    assert_same_backbone_outputs(backbone, theirs.backbone, inputs)
    assert find_vocabulary(directory) == str(directory / "assets" / "tokenizer" / "vocabulary.spm")


@pytest.mark.slow
def test_exports_find_the_preset_tokenizer(keras_hub_classifier_preset, tmp_path):
    _, directory = keras_hub_classifier_preset
    path = export_checkpoint(directory, base_dir=tmp_path, name="sst2", format="tflite")
    assert os.path.isfile(path)
    # The preset's SentencePiece model, with the tokenizer's lowercasing and accent stripping
    # written into its normalizer.
    written = (tmp_path / "sst2" / "sentencepiece.model").read_bytes()
    assert written == with_albert_normalization(ALBERT_MODEL.read_bytes())


def test_masked_lm_preset_becomes_a_pretrainer_with_a_fresh_order_head(tmp_path, capsys):
    backbone = keras_hub.models.AlbertBackbone(**KERAS_HUB_SIZES)
    masked_lm = keras_hub.models.AlbertMaskedLM(backbone)
    randomize(masked_lm, seed=3)
    masked_lm.save_to_preset(tmp_path)
    ours = load_checkpoint(tmp_path)
    assert isinstance(ours, AlbertPretrainer)
    assert "sentence_order_head is freshly initialized" in capsys.readouterr().out
    theirs = {w.path: w.numpy() for w in masked_lm.weights}
    ours_by_path = {w.path: w.numpy() for w in ours.weights}
    for our_path, their_path in [
        ("masked_lm_head/output_bias", "mlm_head/output_bias"),
        ("masked_lm_head/dense/kernel", "mlm_head/intermediate_dense/kernel"),
        ("masked_lm_head/layer_norm/gamma", "mlm_head/intermediate_layer_norm/gamma"),
        ("embedding/token_embedding/embeddings", "token_embedding/embeddings"),
    ]:
        np.testing.assert_array_equal(ours_by_path[our_path], theirs[their_path])


def test_our_pretrainer_becomes_a_keras_hub_masked_lm(tmp_path, inputs):
    ours = AlbertPretrainer(AlbertBackbone.from_albert_config(tiny_config(**SIZES)))
    randomize(ours, seed=4)
    save_checkpoint(ours, tmp_path, format="keras_hub")
    theirs = keras_hub.models.AlbertMaskedLM.from_preset(str(tmp_path))
    assert_same_backbone_outputs(ours.backbone, theirs.backbone, inputs)
    theirs_by_path = {w.path: w.numpy() for w in theirs.weights}
    ours_by_path = {w.path: w.numpy() for w in ours.weights}
    np.testing.assert_array_equal(
        theirs_by_path["mlm_head/intermediate_dense/kernel"],
        ours_by_path["masked_lm_head/dense/kernel"],
    )
    np.testing.assert_array_equal(
        theirs_by_path["mlm_head/output_bias"], ours_by_path["masked_lm_head/output_bias"]
    )


def test_converter_tool_writes_a_keras_hub_preset(tmp_path, our_classifier, inputs):
    (tmp_path / "run").mkdir()
    our_classifier.save(tmp_path / "run" / "best.keras")
    (tmp_path / "run" / "tokenizer.model").write_bytes(ALBERT_MODEL.read_bytes())
    assert (
        load_tool("convert_checkpoint").main(
            [str(tmp_path / "run" / "best.keras"), str(tmp_path / "hub"), "--to", "keras_hub"]
        )
        == 0
    )
    theirs = keras_hub.models.AlbertTextClassifier.from_preset(str(tmp_path / "hub"))
    np.testing.assert_allclose(theirs(inputs), our_classifier(inputs), atol=ATOL, rtol=0)
    assert theirs.preprocessor is not None  # the tokenizer found beside the checkpoint
    packed = theirs.preprocessor(tf.constant(["A Charming Journey."]))
    assert np.asarray(packed["token_ids"])[0, :6].tolist() == [2, 21, 13275, 2998, 9, 3]


def test_converter_tool_keeps_the_case_a_cased_run_recorded(tmp_path, our_classifier):
    (tmp_path / "run").mkdir()
    our_classifier.save(tmp_path / "run" / "best.keras")
    (tmp_path / "run" / "tokenizer.model").write_bytes(ALBERT_MODEL.read_bytes())
    (tmp_path / "run" / "summary.json").write_text('{"lowercase": false}')
    convert = load_tool("convert_checkpoint").main
    assert (
        convert([str(tmp_path / "run" / "best.keras"), str(tmp_path / "hub"), "--to", "keras_hub"])
        == 0
    )
    theirs = keras_hub.models.AlbertTokenizer.from_preset(str(tmp_path / "hub"))
    cased = AlbertTokenizer(ALBERT_MODEL, lowercase=False)
    for text in CASED_AND_ACCENTED:
        assert [int(i) for i in theirs(text)] == cased.encode(text), text
    assert cased.encode("A Charming Journey.") != AlbertTokenizer(ALBERT_MODEL).encode(
        "A Charming Journey."
    )


def test_writer_refuses_what_keras_hub_cannot_hold(tmp_path):
    backbone = AlbertBackbone.from_albert_config(tiny_config(activation="gelu"))
    with pytest.raises(ValueError, match="`activation` must be 'gelu_approximate'"):
        save_checkpoint(backbone, tmp_path, format="keras_hub")


def test_reader_lists_an_unexpected_tensor(written_preset, tmp_path):
    copy = tmp_path / "preset"
    shutil.copytree(written_preset, copy)
    with h5py.File(copy / "model.weights.h5", "a") as weights:
        weights["layers/dense_2/vars/0"] = np.zeros((2, 2), "float32")
    with pytest.raises(ValueError, match=r"unused tensor 'model\.weights\.h5:layers/dense_2"):
        load_checkpoint(copy)
