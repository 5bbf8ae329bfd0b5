"""The classifier carries its preprocessor: `from_preset` of a checkpoint gives a model that
`fit`s, `predict`s and `evaluate`s on raw sentences (and pairs), saves and reloads with its
tokenizer, and exports alone to a string-in SavedModel whose answers equal `predict`'s."""

import shutil

import keras
import keras_hub
import numpy as np
import pytest
import tensorflow as tf

from keras_albert import AlbertBackbone, AlbertClassifier
from keras_albert.export import export_for_serving
from keras_albert.tasks.classification.preprocessor import AlbertClassifierPreprocessor
from keras_albert.text.tokenizer import AlbertTokenizer
from tests.text.text_data import ALBERT_MODEL
from tests.tiny import TINY_30K

SIZES = TINY_30K
SENTENCES = [
    "a gorgeous , witty , seductive movie .",
    "the film is strictly routine .",
    "an utterly charming and hilarious film .",
    "it 's a mess , and a boring one .",
    "one of the year 's best films .",
    "dull , lifeless and amateurishly made .",
    "a warm , funny , engaging film .",
    "the plot is nothing but boilerplate clichés .",
]
LABELS = np.array([1, 0, 1, 0, 1, 0, 1, 0])


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """A tiny classifier saved as `.keras` with its SentencePiece model beside it."""
    keras.utils.set_random_seed(0)
    directory = tmp_path_factory.mktemp("checkpoint")
    AlbertClassifier(AlbertBackbone(**SIZES), num_classes=2).save(directory / "model.keras")
    shutil.copy(ALBERT_MODEL, directory / "30k-clean.model")
    return directory / "model.keras"


def test_from_preset_attaches_the_tokenizer_beside_the_checkpoint(checkpoint):
    model = AlbertClassifier.from_preset(checkpoint)
    assert isinstance(model.preprocessor, AlbertClassifierPreprocessor)
    assert model.preprocessor.sequence_length == SIZES["max_sequence_length"]
    reference = keras.saving.load_model(checkpoint)
    for ours, theirs in zip(model.weights, reference.weights, strict=True):
        np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))
    # What the preprocessor packs is what the tokenizer and the packer give.
    tokenizer = AlbertTokenizer(ALBERT_MODEL)
    packed = model.preprocessor(tf.constant(SENTENCES[:2]))
    ids = tokenizer.encode(SENTENCES[0])
    expected = [tokenizer.cls_id, *ids, tokenizer.sep_id]
    assert packed["token_ids"].numpy()[0, : len(expected)].tolist() == expected
    assert packed["padding_mask"].numpy()[0].sum() == len(expected)
    assert AlbertClassifier.from_preset(checkpoint, preprocessor=False).preprocessor is None
    backbone = AlbertBackbone.from_preset(checkpoint)
    assert isinstance(backbone, AlbertBackbone) and backbone.count_params() > 0


def test_fit_predict_evaluate_take_sentences_and_equal_the_packed_model(checkpoint):
    model = AlbertClassifier.from_preset(checkpoint)
    model.compile(
        optimizer=keras.optimizers.Adam(3e-3),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    before = model.evaluate(SENTENCES, LABELS, verbose=0)[0]
    history = model.fit(SENTENCES, LABELS, batch_size=4, epochs=10, verbose=0)
    after = model.evaluate(SENTENCES, LABELS, batch_size=4, verbose=0)[0]
    assert after < 0.5 * before, (before, after, history.history["loss"])
    logits = model.predict(SENTENCES, verbose=0)
    # The same model on the token ids the preprocessor packs: the same logits.
    packed = model.preprocessor(tf.constant(SENTENCES))
    np.testing.assert_allclose(logits, np.asarray(model(packed, training=False)), atol=1e-6)
    # Pairs: a tuple of two sentence lists.
    pairs = model.predict((SENTENCES, SENTENCES[::-1]), batch_size=3, verbose=0)
    packed = model.preprocessor((tf.constant(SENTENCES), tf.constant(SENTENCES[::-1])))
    np.testing.assert_allclose(pairs, np.asarray(model(packed, training=False)), atol=1e-6)
    # A dataset of raw batches, with labels.
    dataset = tf.data.Dataset.from_tensor_slices((SENTENCES, LABELS)).batch(4)
    np.testing.assert_allclose(model.evaluate(dataset, verbose=0)[0], after, rtol=1e-6)


def test_saved_model_keeps_its_preprocessor_and_tokenizer(checkpoint, tmp_path):
    model = AlbertClassifier.from_preset(checkpoint, sequence_length=24)
    expected = model.predict(SENTENCES, verbose=0)
    model.save(tmp_path / "with_preprocessor.keras")
    loaded = keras.saving.load_model(tmp_path / "with_preprocessor.keras")
    assert loaded.preprocessor.sequence_length == 24
    assert loaded.preprocessor.tokenizer.encode("a test") == AlbertTokenizer(ALBERT_MODEL).encode(
        "a test"
    )
    np.testing.assert_allclose(loaded.predict(SENTENCES, verbose=0), expected, atol=1e-6)


def test_export_takes_the_model_alone_and_answers_as_predict(checkpoint, tmp_path):
    model = AlbertClassifier.from_preset(checkpoint)
    path = export_for_serving(model, base_dir=tmp_path / "saved_models", name="sst2")
    served = tf.saved_model.load(path).signatures["serving_default"]
    logits = served(text=tf.constant(SENTENCES))["logits"].numpy()
    np.testing.assert_allclose(logits, model.predict(SENTENCES, verbose=0), atol=1e-5)


def test_a_model_without_a_preprocessor_needs_a_tokenizer_to_export(tmp_path):
    model = AlbertClassifier(AlbertBackbone(**SIZES), num_classes=2)
    with pytest.raises(ValueError, match="`tokenizer` must be given.*Received: tokenizer=None"):
        export_for_serving(model, base_dir=tmp_path)
    with pytest.raises(ValueError, match="Received: sequence_length=2"):
        AlbertClassifierPreprocessor(AlbertTokenizer(ALBERT_MODEL), sequence_length=2)


# Cased, accented and punctuated: the preset's tokenizer normalizes as ours does.
KERAS_HUB_SENTENCES = ["Café Müller's AMAZING film!", "A naïve, dull rôle.", "  Twice   spaced  "]


def test_save_to_preset_loads_in_keras_hub_and_here_with_the_same_logits(checkpoint, tmp_path):
    model = AlbertClassifier.from_preset(checkpoint)
    expected = model.predict(KERAS_HUB_SENTENCES, verbose=0)
    model.save_to_preset(tmp_path / "preset")
    theirs = keras_hub.models.AlbertTextClassifier.from_preset(str(tmp_path / "preset"))
    np.testing.assert_allclose(theirs.predict(KERAS_HUB_SENTENCES, verbose=0), expected, atol=1e-5)
    ours = AlbertClassifier.from_preset(tmp_path / "preset")
    np.testing.assert_allclose(ours.predict(KERAS_HUB_SENTENCES, verbose=0), expected, atol=1e-5)
