"""Elastic-depth fine-tuning: the loss is the mean over depths, each depth a real K-pass model."""

import keras
import numpy as np
import pytest

from keras_albert import AlbertClassifier
from keras_albert.finetuning.elastic_depth import (
    check_depths,
    elastic_logits,
    enable_elastic_depth,
    parse_depths,
)
from tests.helpers import random_inputs, tiny_backbone
from tests.models.test_backbone import randomize


@pytest.fixture(scope="module")
def data():
    inputs = random_inputs(batch_size=8, seed=3)
    labels = np.random.default_rng(4).integers(0, 3, size=8)
    return inputs, labels


def classifier():
    model = AlbertClassifier(tiny_backbone(num_layers=4), num_classes=3, dropout=0.0)
    randomize(model, 0.3)
    return model


def cross_entropy(logits, labels):
    logits = logits - logits.max(-1, keepdims=True)
    log_probabilities = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    return -log_probabilities[np.arange(len(labels)), labels].mean()


def test_elastic_logits_are_the_classifier_at_that_depth(data):
    inputs, _ = data
    model = classifier()
    for depth, logits in zip((1, 3), elastic_logits(model, inputs, (1, 3)), strict=True):
        shallower = AlbertClassifier(model.backbone.at_depth(depth), num_classes=3, dropout=0.0)
        shallower.set_weights(model.get_weights())
        np.testing.assert_allclose(logits, shallower(inputs), atol=1e-5, rtol=0)


def test_fit_minimizes_the_mean_loss_over_depths(data):
    inputs, labels = data
    model = classifier()
    expected = np.mean(
        [
            cross_entropy(np.asarray(model(inputs)), labels),
            *(cross_entropy(np.asarray(x), labels) for x in elastic_logits(model, inputs, (1, 2))),
        ]
    )
    model.compile(
        optimizer=keras.optimizers.SGD(0.0),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    assert enable_elastic_depth(model, (2, 1)) == (1, 2)
    history = model.fit(inputs, labels, batch_size=8, epochs=1, verbose=0, shuffle=False)
    np.testing.assert_allclose(history.history["loss"][0], expected, rtol=1e-5)
    # Evaluation is the full depth's loss alone; the model's config is unchanged.
    evaluated = model.evaluate(inputs, labels, batch_size=8, verbose=0)
    np.testing.assert_allclose(evaluated, cross_entropy(np.asarray(model(inputs)), labels), 1e-5)
    assert model.get_config()["backbone"]["config"]["num_layers"] == 4


@pytest.mark.parametrize(
    "depths, message",
    [
        ((0,), "Received: num_layers=0"),
        ((4,), "shallower than the trained depth"),
        ((5,), "Received: num_layers=5"),
        ((2, 2), "must not repeat"),
        ((), "at least one depth"),
    ],
)
def test_bad_depths_are_clear_errors(depths, message):
    with pytest.raises(ValueError, match=message):
        check_depths(classifier(), depths)


def test_parse_depths():
    assert parse_depths("6, 3,1") == (6, 3, 1)
    with pytest.raises(ValueError, match="Received: elastic_depths='6,x'"):
        parse_depths("6,x")
