"""A task's `Objective` in the training loop equals Keras's `compile` + `fit` with the same loss
and metrics: the loss, the metrics, and the weights after several AdamW steps (one device)."""

import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_albert.finetuning.driver import build_optimizer
from keras_albert.tasks.classification.model import AlbertClassifier
from keras_albert.tasks.question_answering.model import AlbertQuestionAnswerer
from keras_albert.training.loop import TrainingLoop
from keras_albert.training.objective import Objective
from tests.helpers import ner_task, random_inputs, tiny_backbone
from tests.text._paths import DATA_DIR

BATCH, LENGTH = 6, 12


def ner_objective():
    """NER's objective, as `TokenClassificationTask` gives it: first-piece cross-entropy and
    accuracy."""
    return ner_task(os.path.join(DATA_DIR, "ner", "wnut17_dev.conll")).objective(None)


def classifier_objective():
    return Objective(
        keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=[keras.metrics.SparseCategoricalAccuracy(name="accuracy")],
    )


def make_classifier(seed=0):
    keras.utils.set_random_seed(seed)
    return AlbertClassifier(tiny_backbone(), num_classes=3, dropout=0.0)


def test_loop_with_the_objective_trains_as_fit_does():
    """Same initial weights, same 4 batches: `TrainingLoop` with `objective.replica_fn` and
    `model.fit` (compiled with `objective.compile_kwargs()`) end with the same weights, and the
    loop's logs are fit's (mean loss over the steps, accuracy over every example)."""
    rng = np.random.default_rng(1)
    batches = [
        (random_inputs(batch_size=BATCH, sequence_length=LENGTH, seed=s), rng.integers(0, 3, BATCH))
        for s in range(4)
    ]
    xs = {k: np.concatenate([x[k] for x, _ in batches]) for k in batches[0][0]}
    ys = np.concatenate([y for _, y in batches])

    fitted = make_classifier()
    fitted.compile(
        optimizer=build_optimizer(1e-2, 10, 2, 0.01), **classifier_objective().compile_kwargs()
    )
    history = fitted.fit(xs, ys, batch_size=BATCH, epochs=1, shuffle=False, verbose=0)

    looped = make_classifier()
    optimizer = build_optimizer(1e-2, 10, 2, 0.01)
    optimizer.build(looped.trainable_variables)
    objective = classifier_objective()
    loop = TrainingLoop(tf.distribute.get_strategy(), looped, optimizer, objective.replica_fn)
    dataset = tf.data.Dataset.from_tensor_slices((xs, ys)).batch(BATCH)
    logs = objective.logs(loop.train(loop.iterator(lambda context: dataset), 4), 4)

    for a, b in zip(fitted.get_weights(), looped.get_weights(), strict=True):
        np.testing.assert_allclose(b, a, atol=1e-6)
    assert logs["accuracy"] == pytest.approx(history.history["accuracy"][0], abs=1e-6)
    assert logs["loss"] == pytest.approx(history.history["loss"][0], rel=1e-5)
    assert objective.names == ("loss", "accuracy")


def test_multi_output_loss_with_weights_equals_keras_compute_loss():
    """The SQuAD answer-class head: three outputs, weights 0.5 each, as `compile` computes."""
    keras.utils.set_random_seed(0)
    model = AlbertQuestionAnswerer(tiny_backbone(), answerability="answer_class", dropout=0.0)
    rng = np.random.default_rng(2)
    x = random_inputs(batch_size=BATCH, sequence_length=LENGTH, seed=3)
    arrays = {
        **x,
        "start_positions": rng.integers(1, 6, BATCH).astype("int32"),
        "end_positions": rng.integers(6, 10, BATCH).astype("int32"),
        "is_impossible": rng.integers(0, 2, BATCH).astype("float32"),
    }
    x, y = model.training_targets(arrays)
    objective = Objective(**model.training_loss())
    model.compile(optimizer="sgd", **objective.compile_kwargs())
    loss, sums = objective.replica_fn(model, (x, y), False)
    expected = model.compute_loss(x, y, model(x, training=False), training=False)
    np.testing.assert_allclose(float(loss), float(expected), rtol=1e-6)
    assert sums == {}


def test_metric_state_adds_up_over_batches():
    """NER's first-piece accuracy (ignored positions -100): the summed state of two batches
    gives the accuracy over both, as one stateful metric would."""
    objective = ner_objective()
    rng = np.random.default_rng(4)
    y = rng.integers(0, 3, (2, 4, 5))
    y[:, :, ::2] = -100
    logits = rng.normal(size=(2, 4, 5, 3)).astype("float32")
    totals = {"loss": 0.0}
    for batch in range(2):
        model = lambda x, training, b=batch: tf.constant(logits[b])  # noqa: E731
        _, sums = objective.replica_fn(model, (None, y[batch]), True)
        for key, value in sums.items():
            totals[key] = totals.get(key, 0.0) + float(value)
    labeled = y != -100
    expected = (logits.argmax(-1) == y)[labeled].mean()
    assert objective.logs(totals, 2)["word_accuracy"] == pytest.approx(expected)


def test_bad_objectives_are_clear_errors():
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    with pytest.raises(ValueError, match="`loss_weights` must be given only with a dict"):
        Objective(loss, loss_weights={"a": 1.0})
    with pytest.raises(ValueError, match="`metrics` must keep scalar state.*shapes"):
        Objective(loss, metrics=[keras.metrics.AUC(name="auc")])


def test_replica_shares_of_a_masked_loss_sum_to_the_global_mean(monkeypatch):
    """NER's loss (ignored label -100) split over 2 replicas holding different numbers of
    labeled tokens: each share is its sum over the GLOBAL labeled count, so the shares add up
    to the one-device mean (not to the mean of the replicas' means)."""
    objective = ner_objective()
    rng = np.random.default_rng(5)
    y = rng.integers(0, 3, (4, 6))
    y[:2, 1:] = -100  # replica 0: 2 labeled tokens; replica 1: 12
    logits = rng.normal(size=(4, 6, 3)).astype("float32")
    whole = float(objective.loss(y, logits))  # one device: Keras's mean over labeled tokens
    labeled = float((y != -100).sum())
    import keras_albert.training.objective as objective_module

    monkeypatch.setattr(objective_module, "global_sum", lambda count: tf.constant(labeled))
    shares = [
        float(objective.loss_share(objective.loss, y[rows], logits[rows]))
        for rows in (slice(0, 2), slice(2, 4))
    ]
    assert sum(shares) == pytest.approx(whole, rel=1e-6)
    per_replica_means = [float(objective.loss(y[r], logits[r])) for r in (slice(0, 2), slice(2, 4))]
    assert abs(np.mean(per_replica_means) - whole) > 1e-3  # what averaging means would give
