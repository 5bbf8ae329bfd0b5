"""The multiple-choice model carries its preprocessor: `from_preset` of a checkpoint gives a
model that `fit`s and `predict`s on (article, question, options) strings with the right
option's index, whose features are the fine-tuning datasets' (`make_race_dataset`), whose
logits equal the string-in SavedModel's, and that saves and reloads with its tokenizer."""

import json

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_albert import AlbertBackbone
from keras_albert.export import export_for_serving
from keras_albert.export.modules import serving_module
from keras_albert.tasks.multiple_choice.features import make_race_dataset, read_race
from keras_albert.tasks.multiple_choice.model import AlbertMultipleChoice
from keras_albert.tasks.multiple_choice.preprocessor import AlbertMultipleChoicePreprocessor
from keras_albert.text.tokenizer import AlbertTokenizer
from tests.helpers import saved_with_vocabulary
from tests.text.text_data import ALBERT_MODEL, DATA
from tests.tiny import TINY_30K

# Big enough to memorize a handful of real questions in a few dozen steps (as the task test).
SIZES = {**TINY_30K, "max_sequence_length": 64, "dropout": 0.0}
RACE = str(DATA / "race" / "expmrc-race-dev-sample.json")


def race_questions(count=8, pad=False):
    """The first `count` questions of the RACE sample (some with 2 or 3 options), as read for
    fine-tuning, and `fit`'s raw x (named columns) and y (the right option's index). `pad`:
    every question gets 4 options, "" for those it lacks (what `predict` needs to concatenate
    its batches, and the SavedModel's request)."""
    examples = read_race(RACE)
    rows = range(count)
    options = [examples.options[i] for i in rows]
    x = {
        "article": [examples.articles[i] for i in rows],
        "question": [examples.questions[i] for i in rows],
        "options": [row + [""] * (4 - len(row)) for row in options] if pad else options,
    }
    return examples, x, examples.labels[:count]


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """A tiny multiple-choice model saved as `.keras` with its SentencePiece model beside it."""
    keras.utils.set_random_seed(0)
    model = AlbertMultipleChoice(AlbertBackbone(**SIZES), dropout=0.0)
    return saved_with_vocabulary(model, tmp_path_factory.mktemp("checkpoint"))


def test_features_are_the_fine_tuning_datasets(checkpoint):
    model = AlbertMultipleChoice.from_preset(checkpoint)
    preprocessor = model.preprocessor
    assert isinstance(preprocessor, AlbertMultipleChoicePreprocessor)
    assert (preprocessor.sequence_length, preprocessor.max_qa_length) == (64, 128)
    examples, x, labels = race_questions(len(read_race(RACE)))
    dataset = make_race_dataset(examples, AlbertTokenizer(ALBERT_MODEL), 64, batch_size=200)
    expected, expected_labels = next(iter(dataset))
    # A ragged tensor of options, as the sample's questions have 2 to 4.
    options = tf.ragged.constant(x["options"])
    inputs, y = preprocessor(
        (tf.constant(x["article"]), tf.constant(x["question"]), options), tf.constant(labels)
    )
    assert inputs["token_ids"].shape == (len(labels), 4, 64)
    for name, value in inputs.items():
        np.testing.assert_array_equal(value.numpy(), expected[name].numpy(), err_msg=name)
    np.testing.assert_array_equal(y.numpy(), expected_labels.numpy())
    # A missing option is an all-padding row (the model scores it -1e9).
    absent = np.array([[choice >= len(row) for choice in range(4)] for row in x["options"]])
    assert absent.sum() >= 20
    assert not inputs["padding_mask"].numpy()[absent].any()
    # Options padded with "" and named columns: the same features.
    _, padded, _ = race_questions(len(labels), pad=True)
    again = preprocessor(padded)
    np.testing.assert_array_equal(again["token_ids"].numpy(), expected["token_ids"].numpy())


@pytest.mark.slow
def test_fit_on_questions_and_options_lowers_the_loss(checkpoint):
    model = AlbertMultipleChoice.from_preset(checkpoint)
    model.compile(
        optimizer=keras.optimizers.Adam(3e-3),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    _, x, labels = race_questions(4)  # one with 3 options
    before = model.evaluate(x, labels, verbose=0, return_dict=True)["loss"]
    # 32 steps in 4 epochs: each epoch starts the tf.data pipeline (its tokenizer) anew.
    repeated = {name: column * 8 for name, column in x.items()}
    history = model.fit(repeated, np.tile(labels, 8), batch_size=4, epochs=4, verbose=0)
    after = model.evaluate(x, labels, verbose=0, return_dict=True)["loss"]
    # Measured: 1.31 → 0.84 with TensorFlow's Eigen kernels (oneDNN off, as on an AVX2-only
    # CPU), lower with oneDNN's; the per-epoch losses are noisy at 4 questions a batch.
    assert after < 0.8 * before, (before, after, history.history["loss"])


def test_predict_equals_the_string_in_saved_model(checkpoint, tmp_path):
    model = AlbertMultipleChoice.from_preset(checkpoint)
    _, x, _ = race_questions(pad=True)
    logits = model.predict(x, batch_size=3, verbose=0)
    assert logits.shape == (8, 4)
    path = export_for_serving(model, base_dir=tmp_path, name="race")  # no tokenizer
    served = tf.saved_model.load(path).signatures
    columns = {name: tf.constant(value) for name, value in x.items()}
    answers = served["serving_default"](**columns)
    np.testing.assert_allclose(answers["logits"].numpy(), logits, rtol=0, atol=1e-5)
    token_logits = served["serve_token_ids"](**model.preprocessor(columns))["logits"]
    np.testing.assert_allclose(token_logits.numpy(), logits, rtol=0, atol=1e-5)


@pytest.mark.slow
def test_saved_and_reloaded_with_its_preprocessor(checkpoint, tmp_path):
    model = AlbertMultipleChoice.from_preset(checkpoint)
    model.preprocessor = AlbertMultipleChoicePreprocessor(
        model.preprocessor.tokenizer, sequence_length=48, max_qa_length=12
    )
    config = model.preprocessor.get_config()
    _, x, _ = race_questions(pad=True)
    expected = model.predict(x, verbose=0)
    model.save(tmp_path / "race.keras")
    loaded = keras.saving.load_model(tmp_path / "race.keras")
    assert loaded.preprocessor.get_config() == config
    np.testing.assert_allclose(loaded.predict(x, verbose=0), expected, rtol=0, atol=1e-6)
    model.save_to_preset(tmp_path / "preset")
    summary = json.loads((tmp_path / "preset" / "summary.json").read_text())
    assert summary == {"lowercase": True, "strip_accents": True, "model": "multiple_choice"}
    again = AlbertMultipleChoice.from_preset(tmp_path / "preset")
    assert again.preprocessor.get_config() == config
    np.testing.assert_allclose(again.predict(x, verbose=0), expected, rtol=0, atol=1e-6)
    # The export packs as the preprocessor does, unless told otherwise.
    module = serving_module(again)
    assert (module.max_sequence_length, module.max_qa_length) == (48, 12)
    module = serving_module(again, max_sequence_length=32, task_options={"max_qa_length": 7})
    assert (module.max_sequence_length, module.max_qa_length) == (32, 7)


def test_bad_arguments_and_inputs_are_clear_errors():
    tokenizer = AlbertTokenizer(ALBERT_MODEL)
    with pytest.raises(ValueError, match=r"Received: sequence_length=4"):
        AlbertMultipleChoicePreprocessor(tokenizer, sequence_length=4)
    with pytest.raises(ValueError, match=r"Received: max_qa_length=0"):
        AlbertMultipleChoicePreprocessor(tokenizer, sequence_length=16, max_qa_length=0)
    preprocessor = AlbertMultipleChoicePreprocessor(tokenizer, sequence_length=16)
    with pytest.raises(ValueError, match=r"`x` must be a tuple \(article, question, options\)"):
        preprocessor((tf.constant(["An article."]), tf.constant(["Which?"])))
    with pytest.raises(ValueError, match=r"`options` must be a \(batch, num_choices\) string"):
        preprocessor((tf.constant(["An article."]), tf.constant(["Which?"]), tf.constant(["a"])))
