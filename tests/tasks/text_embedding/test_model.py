"""`AlbertTextEmbedder`: pooling over the padding mask (mean, cls, max) against NumPy, optional
L2 normalization, serialization, `predict` on raw texts through its preprocessor, and
`load_checkpoint(..., model="text_embedding")` around any checkpoint's backbone."""

import shutil

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_albert import AlbertBackbone, AlbertClassifier, load_checkpoint
from keras_albert.tasks.registry import model_kind_of
from keras_albert.tasks.text_embedding.model import AlbertTextEmbedder, MaskedPooling
from keras_albert.tasks.text_embedding.preprocessor import AlbertTextEmbedderPreprocessor
from keras_albert.text.tokenizer import AlbertTokenizer
from tests.helpers import check_model_roundtrips, perturbed, random_inputs, tiny_backbone, to_numpy
from tests.text.text_data import ALBERT_MODEL

SENTENCES = [
    "A man is playing a guitar.",
    "Someone plays the guitar on stage.",
    "The weather is lovely today, isn't it?",
    "Stocks fell sharply on Monday.",
]


def numpy_pooling(sequence, mask, mode, normalize):
    mask = mask[:, :, None].astype("float64")
    if mode == "mean":
        pooled = (sequence * mask).sum(1) / mask.sum(1)
    elif mode == "max":
        pooled = np.where(mask > 0, sequence, -np.inf).max(1)
    else:
        pooled = sequence[:, 0]
    if normalize:
        pooled = pooled / np.linalg.norm(pooled, axis=-1, keepdims=True)
    return pooled


@pytest.mark.parametrize("normalize", [False, True])
@pytest.mark.parametrize("mode", ["mean", "cls", "max"])
def test_pooling_reads_only_the_real_tokens(mode, normalize):
    backbone = perturbed(tiny_backbone(), seed=0)
    model = AlbertTextEmbedder(backbone, pooling=mode, normalize=normalize)
    inputs = random_inputs()
    sequence = to_numpy(backbone(inputs)["sequence_output"])
    expected = numpy_pooling(sequence, inputs["padding_mask"], mode, normalize)
    actual = to_numpy(model(inputs))
    assert actual.shape == (3, backbone.albert_config.hidden_dim) and actual.dtype == np.float32
    np.testing.assert_allclose(actual, expected, rtol=0, atol=1e-5)
    # More padding changes nothing: the pooling (and the attention) skip it.
    padded = {name: np.pad(value, ((0, 0), (0, 5))) for name, value in inputs.items()}
    np.testing.assert_allclose(to_numpy(model(padded)), actual, rtol=0, atol=1e-5)
    if normalize:
        np.testing.assert_allclose(np.linalg.norm(actual, axis=-1), 1.0, atol=1e-6)


def test_mixed_precision_gives_float32_embeddings():
    model = AlbertTextEmbedder(tiny_backbone(dtype="mixed_float16"), normalize=True)
    assert to_numpy(model(random_inputs())).dtype == np.float32


def test_serialization_round_trip(tmp_path):
    model = AlbertTextEmbedder(perturbed(tiny_backbone(), seed=1), pooling="max", normalize=True)
    check_model_roundtrips(model, random_inputs(), tmp_path)
    assert model.get_config()["pooling"] == "max" and model.get_config()["normalize"] is True
    layer = MaskedPooling("cls", normalize=True)
    assert MaskedPooling.from_config(layer.get_config()).get_config() == layer.get_config()


def test_arguments_are_checked():
    backbone = tiny_backbone()
    with pytest.raises(ValueError, match=r"`pooling` must be one of .*Received: pooling='sum'"):
        AlbertTextEmbedder(backbone, pooling="sum")
    with pytest.raises(ValueError, match=r"`normalize` must be a bool. Received: normalize=1"):
        AlbertTextEmbedder(backbone, normalize=1)
    with pytest.raises(ValueError, match=r"`backbone` must be an AlbertBackbone"):
        AlbertTextEmbedder(AlbertClassifier(backbone, num_classes=2))


SIZES = dict(
    vocabulary_size=30000,
    embedding_dim=8,
    hidden_dim=16,
    intermediate_dim=32,
    num_layers=2,
    num_heads=2,
    max_sequence_length=32,
)


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """A tiny classifier saved as `.keras` with its SentencePiece model beside it: any
    checkpoint's backbone becomes an embedder."""
    keras.utils.set_random_seed(0)
    directory = tmp_path_factory.mktemp("checkpoint")
    AlbertClassifier(AlbertBackbone(**SIZES), num_classes=2).save(directory / "model.keras")
    shutil.copy(ALBERT_MODEL, directory / "30k-clean.model")
    return directory / "model.keras"


def test_load_checkpoint_builds_it_around_any_backbone(checkpoint):
    model = load_checkpoint(checkpoint, model="text_embedding")
    assert isinstance(model, AlbertTextEmbedder)
    assert model_kind_of(model) == "text_embedding"
    classifier = keras.saving.load_model(checkpoint)
    for ours, theirs in zip(model.backbone.weights, classifier.backbone.weights, strict=True):
        np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))


def test_predict_on_raw_texts_equals_the_packed_call(checkpoint, tmp_path):
    model = AlbertTextEmbedder.from_preset(checkpoint)
    assert isinstance(model.preprocessor, AlbertTextEmbedderPreprocessor)
    embeddings = model.predict(SENTENCES, batch_size=3, verbose=0)
    assert embeddings.shape == (len(SENTENCES), SIZES["hidden_dim"])
    tokenizer = AlbertTokenizer(ALBERT_MODEL)
    rows = [[tokenizer.cls_id, *tokenizer.encode(text), tokenizer.sep_id] for text in SENTENCES]
    for text, row, embedding in zip(SENTENCES, rows, embeddings, strict=True):
        ids = np.array([row], "int32")
        inputs = {"token_ids": ids, "segment_ids": 0 * ids, "padding_mask": 0 * ids + 1}
        np.testing.assert_allclose(to_numpy(model(inputs))[0], embedding, atol=1e-5, err_msg=text)
    # Saved with its tokenizer; reloaded, it embeds raw texts the same.
    model.save(tmp_path / "embedder.keras")
    restored = keras.saving.load_model(tmp_path / "embedder.keras")
    np.testing.assert_allclose(restored.predict(SENTENCES, verbose=0), embeddings, atol=1e-6)


def test_the_preprocessor_takes_one_text_a_row():
    preprocessor = AlbertTextEmbedderPreprocessor(AlbertTokenizer(ALBERT_MODEL), sequence_length=8)
    packed = preprocessor(tf.constant(["a fine film indeed and more words"]))
    assert packed["token_ids"].shape == (1, 8) and int(packed["padding_mask"].numpy().sum()) == 8
    with pytest.raises(ValueError, match=r"`x` must be one string tensor"):
        preprocessor((tf.constant(["a"]), tf.constant(["b"])))
