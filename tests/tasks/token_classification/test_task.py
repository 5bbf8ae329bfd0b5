"""NER end to end on a tiny model through `TokenClassificationTask`: real WNUT sentences →
model.fit → entity F1, predictions."""

import os

import keras
import numpy as np

from keras_albert.tasks.token_classification.features import read_conll
from keras_albert.tasks.token_classification.task import NER_RECIPE, FirstPieceAccuracy
from keras_albert.text.tokenizer import AlbertTokenizer
from tests.helpers import ner_task, tiny_backbone
from tests.text._paths import ALBERT_SPM, DATA_DIR

DEV = os.path.join(DATA_DIR, "ner", "wnut17_dev.conll")


# Big enough to memorize a handful of real examples in a few dozen steps.
SIZES = dict(
    embedding_dim=16, hidden_dim=32, intermediate_dim=64, num_layers=2, max_sequence_length=64
)


def test_a_tiny_model_overfits_real_wnut_sentences(tmp_path):
    # Seed before the tokenizer: seeding clears the kernel cache and its SentencePiece resource.
    # Not 0: a global seed of 0 breaks the pretraining streams' tensor op seeds later on.
    keras.utils.set_random_seed(1)
    tokenizer = AlbertTokenizer(ALBERT_SPM)
    dev = read_conll(DEV)
    rows = [
        row
        for row, tags in enumerate(dev.tags)
        if any(tag != "O" for tag in tags) and len(dev.words[row]) <= 20
    ][:8]
    data = tmp_path / "train.conll"
    data.write_text(
        "\n\n".join(
            "\n".join(
                f"{word}\t{tag}" for word, tag in zip(dev.words[row], dev.tags[row], strict=True)
            )
            for row in rows
        )
        + "\n",
        encoding="utf-8",
    )
    task = ner_task(str(data), tokenizer, sequence_length=64, dropout=0.0)
    sentences = task.train
    assert sentences.words == [dev.words[row] for row in rows]
    assert sentences.tags == [dev.tags[row] for row in rows]
    model = task.build_model(tiny_backbone(**SIZES, vocabulary_size=tokenizer.vocabulary_size))
    assert model.labels == task.labels
    task.compile(model, keras.optimizers.Adam(3e-3))
    train = task.train_dataset(8, seed=None)
    history = model.fit(train, steps_per_epoch=40, epochs=3, verbose=0)
    assert history.history["word_accuracy"][-1] > 0.95  # the last epoch

    metrics = task.evaluate(model, batch_size=32, output_dir=str(tmp_path))
    assert metrics["f1"] == 1.0 and metrics["num_cut_words"] == 0
    written = read_conll(tmp_path / "eval_predictions.conll")  # the last column: predicted
    assert written.words == sentences.words and written.tags == sentences.tags
    assert task.recipe() is NER_RECIPE


def test_loss_and_accuracy_count_only_first_pieces():
    objective = ner_task(DEV).objective(None)
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(3, 7, 5)).astype("float32")
    labels = rng.integers(0, 5, size=(3, 7)).astype("int32")
    labels[rng.random((3, 7)) < 0.5] = -100
    keep = labels != -100
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    expected = -np.take_along_axis(log_probs, np.maximum(labels, 0)[..., None], -1)[..., 0]
    loss = float(objective.loss(labels, logits))
    np.testing.assert_allclose(loss, expected[keep].mean(), rtol=1e-5)

    [[metric]] = objective.metrics.values()
    assert isinstance(metric, FirstPieceAccuracy)
    metric.update_state(labels, logits)
    np.testing.assert_allclose(
        float(metric.result()), (logits.argmax(-1) == labels)[keep].mean(), rtol=1e-6
    )
