"""The masked LM carries its preprocessor: `from_preset` of a checkpoint gives a model that
`predict`s on texts holding "[MASK]"; the softmax of its logits at the masks equals the
string-in SavedModel's answers (a text without a mask: no masks in both), the graph and the
Python paths pack alike, `fill_mask` answers from the same inputs, and `.keras` and
`save_to_preset` round trips keep the predictions. Without TensorFlow (JAX, the tokenizer's
Python path) `predict` gives the same logits: tests/backends/test_without_tensorflow.py."""

import shutil

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_albert import AlbertBackbone, fill_mask
from keras_albert.export import export_for_serving
from keras_albert.tasks.fill_mask.model import AlbertMaskedLM
from keras_albert.tasks.fill_mask.options import FillMaskServingOptions
from keras_albert.tasks.fill_mask.preprocessor import AlbertMaskedLMPreprocessor
from keras_albert.text.tokenizer import AlbertTokenizer
from tests.text.text_data import ALBERT_MODEL
from tests.tiny import TINY_30K

SIZES = TINY_30K
TEXTS = [
    "The capital of France is [MASK].",
    "a gorgeous , witty , [MASK] movie .",
    "A text without a mask.",
    "[MASK] [MASK] went to the market on Monday.",
    "the film is strictly [MASK] .",
    "[MASK]s are 2,000[MASK]",
    "one of the year 's best [MASK] .",
]
TOP_K = 3


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """A tiny masked LM saved as `.keras` with its SentencePiece model beside it."""
    keras.utils.set_random_seed(0)
    directory = tmp_path_factory.mktemp("checkpoint")
    AlbertMaskedLM(AlbertBackbone(**SIZES)).save(directory / "model.keras")
    shutil.copy(ALBERT_MODEL, directory / "30k-clean.model")
    return directory / "model.keras"


def masks_of(texts):
    """The number of masks of each text, counted in Python."""
    return [text.count("[MASK]") for text in texts]


def test_predict_on_texts_answers_as_the_saved_model(checkpoint, tmp_path):
    model = AlbertMaskedLM.from_preset(checkpoint)
    assert isinstance(model.preprocessor, AlbertMaskedLMPreprocessor)
    logits = model.predict(TEXTS, batch_size=3, verbose=0)
    width = model.preprocessor.mask_selection_length
    assert logits.shape == (len(TEXTS), width, SIZES["vocabulary_size"])
    probabilities = tf.nn.softmax(logits, axis=-1).numpy()

    options = FillMaskServingOptions(top_k=TOP_K)
    path = export_for_serving(
        model, base_dir=tmp_path / "models", name="fill", task_options=options
    )
    served = tf.saved_model.load(path).signatures["serving_default"](text=tf.constant(TEXTS))
    assert served["num_masks"].numpy().tolist() == masks_of(TEXTS)  # 0 for the text without
    for row, count in enumerate(masks_of(TEXTS)):
        ids = served["token_ids"].numpy()[row, :count]  # (count, TOP_K)
        expected = np.take_along_axis(probabilities[row, :count], ids, axis=-1)
        np.testing.assert_allclose(
            served["probabilities"].numpy()[row, :count], expected, atol=1e-5, rtol=0
        )
        np.testing.assert_array_equal(
            ids, np.argsort(-probabilities[row, :count], axis=-1)[:, :TOP_K]
        )
    # `fill_mask` is the preprocessor's Python path and the model: the same answers.
    answers = fill_mask(model, model.preprocessor.tokenizer, TEXTS, top_k=TOP_K)
    assert [len(masks) for masks in answers] == masks_of(TEXTS)
    for row, masks in enumerate(answers):
        for mask, candidates in enumerate(masks):
            assert [c["token_id"] for c in candidates] == served["token_ids"].numpy()[
                row, mask
            ].tolist()
            np.testing.assert_allclose(
                [c["probability"] for c in candidates],
                served["probabilities"].numpy()[row, mask],
                atol=1e-5,
                rtol=0,
            )


def test_the_graph_and_python_paths_pack_alike(checkpoint):
    preprocessor = AlbertMaskedLM.from_preset(checkpoint).preprocessor
    python = preprocessor(TEXTS)
    graph = preprocessor(tf.constant(TEXTS))
    tokenizer = AlbertTokenizer(ALBERT_MODEL)
    for name in ("token_ids", "segment_ids", "padding_mask", "mask_positions"):
        np.testing.assert_array_equal(python[name], graph[name].numpy(), err_msg=name)
    for row, count in enumerate(masks_of(TEXTS)):
        positions = python["mask_positions"][row]
        assert (python["token_ids"][row, positions[:count]] == tokenizer.mask_id).all()
        assert (positions[count:] == 0).all()
    with pytest.raises(ValueError, match=r"mask_selection_length=8 masks. Received: texts\[1\]"):
        preprocessor(["[MASK]", "[MASK] " * 9])
    with pytest.raises(tf.errors.InvalidArgumentError, match="mask_selection_length=8"):
        preprocessor(tf.constant(["[MASK] " * 9]))
    with pytest.raises(ValueError, match=r"max_sequence_length=32 tokens.*texts\[0\]"):
        preprocessor(["[MASK] " + "word " * 40])
    with pytest.raises(tf.errors.InvalidArgumentError, match="AlbertMaskedLMPreprocessor: a text"):
        preprocessor(tf.constant(["[MASK] " + "word " * 40]))


@pytest.mark.slow
def test_save_and_preset_round_trips_keep_the_preprocessor(checkpoint, tmp_path):
    model = AlbertMaskedLM.from_preset(checkpoint, sequence_length=24)
    expected = model.predict(TEXTS, verbose=0)
    model.save(tmp_path / "with_preprocessor.keras")
    loaded = keras.saving.load_model(tmp_path / "with_preprocessor.keras")
    assert loaded.preprocessor.get_config() == model.preprocessor.get_config()
    np.testing.assert_allclose(loaded.predict(TEXTS, verbose=0), expected, atol=1e-6)
    narrow = AlbertMaskedLMPreprocessor(model.preprocessor.tokenizer, 24, mask_selection_length=3)
    copy = AlbertMaskedLMPreprocessor.from_config(narrow.get_config())
    assert copy.get_config()["mask_selection_length"] == 3
    # A keras-hub `AlbertMaskedLM` preset, its tokenizer beside: the same logits.
    model.save_to_preset(tmp_path / "preset")
    ours = AlbertMaskedLM.from_preset(tmp_path / "preset", sequence_length=24)
    np.testing.assert_allclose(ours.predict(TEXTS, verbose=0), expected, atol=1e-5)
    # Without a preprocessor, token ids in, as before.
    plain = AlbertMaskedLM.from_preset(checkpoint, preprocessor=False)
    assert plain.preprocessor is None
    packed = model.preprocessor(TEXTS)
    np.testing.assert_allclose(plain.predict(packed, verbose=0), expected, atol=1e-5)
