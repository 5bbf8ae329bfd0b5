"""The token classifier carries its preprocessor: `from_preset` of a checkpoint gives a model
that `fit`s on real WNUT sentences (words and label ids) and `predict`s on words or texts; its
logits at each word's first piece equal the string-in SavedModel's probabilities, and
`save_to_preset` (a `.keras` file: keras-hub has no token classifier) and `.keras` round trips
keep its predictions."""

import os
import shutil

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_albert import AlbertBackbone
from keras_albert.export import export_for_serving
from keras_albert.tasks.token_classification.features import (
    IGNORE_LABEL,
    label_list,
    read_conll,
    tag_ids,
)
from keras_albert.tasks.token_classification.model import AlbertTokenClassifier
from keras_albert.tasks.token_classification.preprocessor import (
    AlbertTokenClassifierPreprocessor,
)
from keras_albert.text.tokenizer import AlbertTokenizer
from tests.text._paths import DATA_DIR
from tests.text.text_data import ALBERT_MODEL
from tests.tiny import TINY_30K

SEQUENCE_LENGTH = 48
SIZES = {**TINY_30K, "max_sequence_length": SEQUENCE_LENGTH}


@pytest.fixture(scope="module")
def sentences():
    """Eight real WNUT 2017 dev sentences that fit the packed length, and their label ids."""
    dev = read_conll(os.path.join(DATA_DIR, "ner", "wnut17_dev.conll"))
    labels = label_list(dev.tags)
    ids = tag_ids(dev, labels)
    tokenizer = AlbertTokenizer(ALBERT_MODEL)
    chosen = [
        index
        for index, words in enumerate(dev.words)
        if sum(max(len(tokenizer.encode(word)), 1) for word in words) <= SEQUENCE_LENGTH - 2
        and any(tag != "O" for tag in dev.tags[index])
    ][:8]
    return [dev.words[i] for i in chosen], [ids[i] for i in chosen], labels


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory, sentences):
    """A tiny token classifier saved as `.keras` with its SentencePiece model beside it."""
    keras.utils.set_random_seed(0)
    directory = tmp_path_factory.mktemp("checkpoint")
    labels = sentences[2]
    model = AlbertTokenClassifier(AlbertBackbone(**SIZES), num_classes=len(labels), labels=labels)
    model.save(directory / "model.keras")
    shutil.copy(ALBERT_MODEL, directory / "30k-clean.model")
    return directory / "model.keras"


def first_pieces(words):
    """Each word's first piece position, from the Python tokenizer (an independent count)."""
    tokenizer = AlbertTokenizer(ALBERT_MODEL)
    positions, position = [], 1
    for word in words:
        positions.append(position)
        position += max(len(tokenizer.encode(word)), 1)  # a word of no piece gets <unk>
    return positions


def compiled(model):
    model.compile(
        optimizer=keras.optimizers.Adam(3e-3),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=-100),
    )
    return model


def test_labels_go_to_each_word_first_piece(checkpoint, sentences):
    words, ids, _ = sentences
    model = AlbertTokenClassifier.from_preset(checkpoint)
    assert isinstance(model.preprocessor, AlbertTokenClassifierPreprocessor)
    assert model.preprocessor.sequence_length == SEQUENCE_LENGTH
    x, y = model.preprocessor(tf.ragged.constant(words[:3]), tf.ragged.constant(ids[:3]))
    tokenizer = AlbertTokenizer(ALBERT_MODEL)
    for row, (sentence, labels) in enumerate(zip(words[:3], ids[:3], strict=True)):
        expected = np.full(SEQUENCE_LENGTH, IGNORE_LABEL)
        expected[first_pieces(sentence)] = labels
        np.testing.assert_array_equal(y.numpy()[row], expected)
        pieces = [piece for word in sentence for piece in tokenizer.encode(word) or [1]]
        packed = [tokenizer.cls_id, *pieces, tokenizer.sep_id]
        assert x["token_ids"].numpy()[row, : len(packed)].tolist() == packed
    with pytest.raises(tf.errors.InvalidArgumentError, match="one label per word"):
        model.preprocessor(tf.ragged.constant(words[:1]), tf.ragged.constant([ids[0][:-1]]))


@pytest.mark.slow
def test_fit_on_words_and_predict_as_the_saved_model(checkpoint, sentences, tmp_path):
    words, ids, labels = sentences
    model = compiled(AlbertTokenClassifier.from_preset(checkpoint))
    history = model.fit(words, ids, batch_size=4, epochs=12, verbose=0).history["loss"]
    assert history[-1] < 0.5 * history[0], history
    logits = model.predict(words, batch_size=3, verbose=0)
    assert logits.shape == (len(words), SEQUENCE_LENGTH, len(labels))
    # Texts are split into the same words (WNUT's words hold no whitespace).
    texts = [" ".join(sentence) for sentence in words]
    np.testing.assert_allclose(model.predict(texts, verbose=0), logits, atol=1e-6)

    path = export_for_serving(model, base_dir=tmp_path / "saved_models", name="ner")
    served = tf.saved_model.load(path).signatures["serving_default"](text=tf.constant(texts))
    probabilities = tf.nn.softmax(logits, axis=-1).numpy()
    for row, sentence in enumerate(words):
        expected = probabilities[row, first_pieces(sentence)]  # (words, labels)
        count = served["num_words"].numpy()[row]
        assert count == len(sentence)
        np.testing.assert_allclose(
            served["probabilities"].numpy()[row, :count], expected, atol=1e-5, rtol=0
        )
        tags = [labels[i] for i in expected.argmax(-1)]
        assert [t.decode() for t in served["tags"].numpy()[row, :count]] == tags


@pytest.mark.slow
def test_save_and_preset_round_trips_keep_the_preprocessor(checkpoint, sentences, tmp_path):
    words = sentences[0]
    model = AlbertTokenClassifier.from_preset(checkpoint, sequence_length=40)
    expected = model.predict(words, verbose=0)
    model.save_to_preset(tmp_path / "preset")
    assert sorted(os.listdir(tmp_path / "preset")) == [
        "model.keras",
        "summary.json",
        "tokenizer.model",
    ]
    for loaded in (
        AlbertTokenClassifier.from_preset(tmp_path / "preset"),
        keras.saving.load_model(tmp_path / "preset" / "model.keras"),
    ):
        assert isinstance(loaded.preprocessor, AlbertTokenClassifierPreprocessor)
        assert loaded.preprocessor.sequence_length == 40
        assert loaded.labels == model.labels
        np.testing.assert_allclose(loaded.predict(words, verbose=0), expected, atol=1e-6)
    # Without a preprocessor, token ids in, as before.
    plain = AlbertTokenClassifier.from_preset(checkpoint, preprocessor=False)
    assert plain.preprocessor is None
    packed = model.preprocessor(tf.ragged.constant(words))
    np.testing.assert_allclose(
        plain.predict(packed, verbose=0), model.predict(words, verbose=0), atol=1e-6
    )
