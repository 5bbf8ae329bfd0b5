"""NER end to end on a tiny model: real WNUT sentences → model.fit → entity F1, predictions."""

import os

import keras

from keras_albert.finetuning.ner.features import (
    ConllSentences,
    label_list,
    make_ner_dataset,
    read_conll,
)
from keras_albert.finetuning.ner.task import build_ner_model, compile_ner_model, evaluate_ner
from keras_albert.text.tokenizer import AlbertTokenizer
from tests.helpers import tiny_backbone
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
    sentences = ConllSentences(
        dev.path,
        [dev.words[row] for row in rows],
        [dev.tags[row] for row in rows],
        [dev.line_numbers[row] for row in rows],
    )
    labels = label_list(dev.tags)
    backbone = tiny_backbone(**SIZES, vocabulary_size=tokenizer.vocabulary_size)
    model = build_ner_model(backbone, labels, dropout=0.0)
    compile_ner_model(model, keras.optimizers.Adam(3e-3))
    train = make_ner_dataset(
        sentences, tokenizer, labels, sequence_length=64, batch_size=8, training=True
    )
    history = model.fit(train, steps_per_epoch=40, epochs=3, verbose=0)
    assert history.history["word_accuracy"][-1] > 0.95  # the last epoch

    path = tmp_path / "predictions.conll"
    metrics = evaluate_ner(
        model, sentences, tokenizer, labels, sequence_length=64, predictions_path=path
    )
    assert metrics["f1"] == 1.0 and metrics["num_cut_words"] == 0
    written = read_conll(path)
    assert written.words == sentences.words and written.tags == sentences.tags


def test_loss_and_accuracy_count_only_first_pieces():
    import numpy as np

    from keras_albert.finetuning.ner.task import FirstPieceAccuracy, ner_loss

    rng = np.random.default_rng(0)
    logits = rng.normal(size=(3, 7, 5)).astype("float32")
    labels = rng.integers(0, 5, size=(3, 7)).astype("int32")
    labels[rng.random((3, 7)) < 0.5] = -100
    keep = labels != -100
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    expected = -np.take_along_axis(log_probs, np.maximum(labels, 0)[..., None], -1)[..., 0]
    loss = float(ner_loss()(labels, logits))
    np.testing.assert_allclose(loss, expected[keep].mean(), rtol=1e-5)

    metric = FirstPieceAccuracy()
    metric.update_state(labels, logits)
    np.testing.assert_allclose(
        float(metric.result()), (logits.argmax(-1) == labels)[keep].mean(), rtol=1e-6
    )
