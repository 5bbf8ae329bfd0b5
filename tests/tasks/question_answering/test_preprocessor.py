"""The question answerer carries its preprocessor: `from_preset` of a checkpoint gives a model
that `fit`s and `predict`s on (question, context) strings with SQuAD's answers, whose rows are
the first windows of the Python features and of the string-in SavedModel (the SavedModel's
logits and answers equal `predict`'s), and that saves and reloads with its tokenizer."""

import json

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_albert import AlbertBackbone
from keras_albert.export import export_for_serving
from keras_albert.tasks.question_answering.features import (
    SquadExample,
    feature_arrays,
    read_squad_examples,
    squad_features,
)
from keras_albert.tasks.question_answering.model import AlbertQuestionAnswerer
from keras_albert.tasks.question_answering.postprocess import decode_null_span
from keras_albert.tasks.question_answering.preprocessor import AlbertQuestionAnswererPreprocessor
from keras_albert.text.tokenizer import AlbertTokenizer
from tests.helpers import saved_with_vocabulary
from tests.text.text_data import ALBERT_MODEL, DATA

SIZES = dict(
    vocabulary_size=30000,
    embedding_dim=8,
    hidden_dim=16,
    intermediate_dim=32,
    num_layers=1,
    num_heads=2,
    max_sequence_length=64,
)
# (question, context, answer); "" for a question the context does not answer.
EXAMPLES = [
    ("Who wrote the book?", "The book was written by Jane Austen in 1813.", "Jane Austen"),
    ("When was it written?", "The book was written by Jane Austen in 1813.", "1813"),
    ("Where did the cat sit?", "The cat sat on the mat by the door.", "on the mat"),
    ("What color is the sky?", "On a clear day the sky is blue, and the grass green.", "blue"),
    ("How many apples?", "Tom went to the market on Monday and bought three apples.", "three"),
    ("What is the capital?", "Paris is the capital and largest city of France.", "Paris"),
    ("Who found penicillin?", "Penicillin was discovered in 1928 by Alexander Fleming.", "1928"),
    ("Who painted it?", "The cat sat on the mat by the door.", ""),
]
SQUAD = DATA / "squad" / "dev-v2.0-small.json"


def raw(rows):
    """`fit`'s x and y of (question, context, answer) rows, as SQuAD gives answers."""
    x = {"question": [q for q, _, _ in rows], "context": [c for _, c, _ in rows]}
    y = {
        "answer_start": [c.index(a) if a else -1 for _, c, a in rows],
        "answer_text": [a for _, _, a in rows],
    }
    return x, y


def squad_rows(count):
    examples = list(read_squad_examples(SQUAD))[:count]
    return examples, [
        (e.question, e.context, e.answers[0][0] if e.answers else "") for e in examples
    ]


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """A tiny null-span answerer saved as `.keras` with its SentencePiece model beside it."""
    keras.utils.set_random_seed(0)
    model = AlbertQuestionAnswerer(AlbertBackbone(**SIZES))
    # A random head gives near-equal logits; a larger kernel spreads them (distinct answers).
    model.span_dense.kernel.assign(model.span_dense.kernel * 50.0)
    return saved_with_vocabulary(model, tmp_path_factory.mktemp("checkpoint"))


def test_rows_and_labels_are_the_first_windows_of_the_python_features(checkpoint):
    model = AlbertQuestionAnswerer.from_preset(checkpoint)
    preprocessor = model.preprocessor
    assert isinstance(preprocessor, AlbertQuestionAnswererPreprocessor)
    # The window is the backbone's; the question keeps at most half of it.
    assert (preprocessor.sequence_length, preprocessor.max_query_length) == (64, 32)
    tokenizer = AlbertTokenizer(ALBERT_MODEL)
    examples, rows = squad_rows(24)
    python = [
        feature
        for feature in squad_features(examples, tokenizer, 64, doc_stride=16, max_query_length=32)
        if feature.window_index == 0
    ]
    expected = feature_arrays(python)
    x, y = raw(rows)
    inputs, labels = preprocessor((tf.constant(x["question"]), tf.constant(x["context"])), y)
    for name, value in {**inputs, **labels}.items():
        np.testing.assert_array_equal(value.numpy(), expected[name], err_msg=name)
    # Answers inside the window, answers past it and unanswerable questions all occur.
    answerable = np.array([bool(e.answers) for e in examples])
    assert (expected["is_impossible"] == 0).sum() >= 3
    assert (answerable & (expected["is_impossible"] == 1)).sum() >= 3
    assert (~answerable).sum() >= 3
    # The same rows from a dict of the columns, without labels.
    again = preprocessor(
        {"question": tf.constant(x["question"]), "context": tf.constant(x["context"])}
    )
    np.testing.assert_array_equal(again["token_ids"].numpy(), expected["token_ids"])


@pytest.mark.parametrize("answerability", ["null_span", "answer_class"])
@pytest.mark.slow
def test_fit_on_questions_and_answers_lowers_the_loss(checkpoint, answerability):
    if answerability == "null_span":
        model = AlbertQuestionAnswerer.from_preset(checkpoint)
    else:  # the head's own labels: the gold start as an input, `is_impossible` for its class
        preprocessor = AlbertQuestionAnswererPreprocessor(AlbertTokenizer(ALBERT_MODEL), 64)
        backbone = AlbertBackbone(**SIZES)
        model = AlbertQuestionAnswerer(backbone, answerability=answerability)
        model.preprocessor = preprocessor
    model.compile(optimizer=keras.optimizers.Adam(3e-3), **model.training_loss())
    x, y = raw(EXAMPLES)
    before = model.evaluate(x, y, verbose=0, return_dict=True)["loss"]
    # 30 steps in 3 epochs: each epoch starts the tf.data pipeline (its tokenizer) anew.
    repeated = [{name: column * 5 for name, column in part.items()} for part in (x, y)]
    history = model.fit(*repeated, batch_size=4, epochs=3, verbose=0)
    after = model.evaluate(x, y, verbose=0, return_dict=True)["loss"]
    assert after < 0.5 * before, (before, after, history.history["loss"])


def test_predict_equals_the_string_in_saved_model(checkpoint, tmp_path):
    model = AlbertQuestionAnswerer.from_preset(checkpoint)
    _, long_rows = squad_rows(2)  # longer than one window: predict reads the first
    rows = EXAMPLES + long_rows
    x, _ = raw(rows)
    outputs = model.predict(x, batch_size=4, verbose=0)
    assert outputs["start_logits"].shape == (len(rows), 64)
    # No tokenizer, no window options: the preprocessor's.
    path = export_for_serving(
        model, base_dir=tmp_path, name="squad", task_options={"null_score_threshold": None}
    )
    served = tf.saved_model.load(path).signatures
    inputs = model.preprocessor((tf.constant(x["question"]), tf.constant(x["context"])))
    logits = served["serve_token_ids"](**inputs)
    for name in ("start_logits", "end_logits"):
        np.testing.assert_allclose(logits[name].numpy(), outputs[name], rtol=0, atol=1e-5)
    # Where the context fits one window, the string-in answers are the Python decoding of
    # `predict`'s logits.
    count = len(EXAMPLES)
    examples = [SquadExample(str(i), q, c, (), False) for i, (q, c, _) in enumerate(EXAMPLES)]
    features = list(squad_features(examples, AlbertTokenizer(ALBERT_MODEL), 64, 16, 32))
    assert len(features) == count  # one window each
    expected = decode_null_span(
        features,
        outputs["start_logits"][:count],
        outputs["end_logits"][:count],
        version_2=True,
        null_score_threshold=None,
    )
    answers = served["serving_default"](
        question=tf.constant(x["question"][:count]), context=tf.constant(x["context"][:count])
    )
    texts = [answer.decode() for answer in answers["answer"].numpy()]
    assert texts == [expected.best_span[str(i)]["text"] for i in range(count)]
    assert len(set(texts)) > count // 2  # not one answer for all
    for i in range(count):
        np.testing.assert_allclose(
            answers["score"][i], expected.best_span[str(i)]["score"], rtol=0, atol=1e-5
        )
        np.testing.assert_allclose(
            answers["null_odds"][i], expected.null_odds[str(i)], rtol=0, atol=1e-5
        )


def test_saved_and_reloaded_with_its_preprocessor(checkpoint, tmp_path):
    model = AlbertQuestionAnswerer.from_preset(checkpoint, sequence_length=48)
    config = model.preprocessor.get_config()
    assert (config["sequence_length"], config["max_query_length"]) == (48, 24)
    x, _ = raw(EXAMPLES)
    expected = model.predict(x, verbose=0)
    model.save(tmp_path / "answerer.keras")
    loaded = keras.saving.load_model(tmp_path / "answerer.keras")
    assert loaded.preprocessor.get_config() == config
    for name, value in loaded.predict(x, verbose=0).items():
        np.testing.assert_allclose(value, expected[name], rtol=0, atol=1e-6)
    # A preset directory: the model with its preprocessor, and the tokenizer and its
    # normalization beside it for the tools that read a checkpoint's vocabulary.
    model.save_to_preset(tmp_path / "preset")
    summary = json.loads((tmp_path / "preset" / "summary.json").read_text())
    assert summary == {"lowercase": True, "strip_accents": True, "model": "question_answering"}
    again = AlbertQuestionAnswerer.from_preset(tmp_path / "preset")
    assert again.preprocessor.get_config() == config
    for name, value in again.predict(x, verbose=0).items():
        np.testing.assert_allclose(value, expected[name], rtol=0, atol=1e-6)
    assert (
        AlbertQuestionAnswerer.from_preset(tmp_path / "preset", preprocessor=False).preprocessor
        is None
    )
    # Asked for another length, a new preprocessor from the tokenizer beside the model.
    shorter = AlbertQuestionAnswerer.from_preset(tmp_path / "preset", sequence_length=32)
    assert shorter.preprocessor.max_query_length == 16


def test_bad_arguments_and_inputs_are_clear_errors():
    tokenizer = AlbertTokenizer(ALBERT_MODEL)
    with pytest.raises(
        ValueError, match=r"at least max_query_length \+ 4 = 20.*sequence_length=16"
    ):
        AlbertQuestionAnswererPreprocessor(tokenizer, sequence_length=16, max_query_length=16)
    with pytest.raises(ValueError, match=r"`tokenizer` must be a WordPiece tokenizer"):
        AlbertQuestionAnswererPreprocessor(AlbertTokenizer(ALBERT_MODEL, normalize_quotes=True))
    preprocessor = AlbertQuestionAnswererPreprocessor(tokenizer, sequence_length=32)
    questions, contexts = tf.constant(["Who?"]), tf.constant(["Jane wrote it."])
    with pytest.raises(ValueError, match=r"`x` must be a tuple \(question, context\) or a dict"):
        preprocessor(questions)
    with pytest.raises(ValueError, match=r"`y` must be a dict keyed answer_start, answer_text. "):
        preprocessor((questions, contexts), {"start": tf.constant([0])})
    wrong = {"answer_start": tf.constant([1]), "answer_text": tf.constant(["Jane"])}
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"`answer_text` must be the context"):
        preprocessor((questions, contexts), wrong)
