"""`ReplicaDropout`: on one replica the masks of Keras's `Dropout`, bit for bit; under
MirroredStrategy (2 logical CPUs) and MultiWorkerMirroredStrategy (2 local workers) each replica
draws its own masks, the same again from the same seed, and replica r the same on either."""

import contextlib
import re
from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_albert import (
    AlbertClassifier,
    AlbertMultipleChoice,
    AlbertPretrainer,
    AlbertQuestionAnswerer,
    AlbertTokenClassifier,
)
from keras_albert.layers import ReplicaDropout
from tests.helpers import check_layer_roundtrips, tiny_backbone
from tests.training.test_strategy import assert_succeeded, run_helpers, run_workers

HELPER = Path(__file__).with_name("replica_dropout_run.py")
X = np.random.default_rng(0).standard_normal((4, 16)).astype("float32")
# Cases of replica_dropout_run.py in which the model draws masks (`no_dropout` draws none).
DROPOUT_CASES = ("layer", "hidden", "attention", "classifier")


@pytest.mark.parametrize("context", ["eager", "function", "one_device"])
def test_one_replica_draws_the_masks_of_keras_dropout(context):
    strategy = tf.distribute.OneDeviceStrategy("/cpu:0")
    with strategy.scope() if context == "one_device" else contextlib.nullcontext():
        layers = ReplicaDropout(0.3, seed=5), keras.layers.Dropout(0.3, seed=5)

    def drawer(layer):
        def draw():
            return layer(X, training=True)

        if context == "eager":
            return draw
        if context == "function":
            return tf.function(draw)
        return tf.function(lambda: strategy.run(draw))

    ours, theirs = (drawer(layer) for layer in layers)
    for _ in range(3):  # the generators advance alike
        actual, expected = ours(), theirs()
        np.testing.assert_array_equal(actual, expected)
    assert 0 < np.mean(actual == 0) < 1  # a mask was drawn


def test_replica_dropout_config_and_arguments(tmp_path):
    layer = ReplicaDropout(0.2, seed=1, name="dropout")
    assert layer.get_config()["rate"] == 0.2
    check_layer_roundtrips(layer, (X,), tmp_path)
    np.testing.assert_array_equal(layer(X, training=False), X)
    for rate in (1.0, -0.1, True):
        expected = f"`rate` must be a float in [0, 1). Received: rate={rate!r}"
        with pytest.raises(ValueError, match=re.escape(expected)):
            ReplicaDropout(rate)
    with pytest.raises(ValueError, match=re.escape("Received: noise_shape=(None, 1)")):
        ReplicaDropout(0.1, noise_shape=(None, 1))


def test_every_dropout_of_the_models_draws_per_replica():
    def backbone():
        return tiny_backbone(dropout=0.1, attention_dropout=0.1)

    models = [
        AlbertPretrainer(backbone()),
        AlbertClassifier(backbone(), num_classes=2),
        AlbertMultipleChoice(backbone()),
        AlbertTokenClassifier(backbone(), num_classes=3),
        AlbertQuestionAnswerer(backbone(), answerability="answer_class"),
    ]
    for model in models:
        dropouts = [
            layer
            for layer in model._flatten_layers(include_self=False)
            if isinstance(layer, keras.layers.Dropout)
        ]
        # Embedding, attention probabilities, attention output, feed-forward output (+ head).
        assert len(dropouts) >= 4, model.name
        assert all(type(layer) is ReplicaDropout for layer in dropouts), model.name


def draws(results, case, run=0, draw=0):
    """The case's outputs of one call, by replica id."""
    prefix = f"{case}/run{run}/draw{draw}/replica"
    return {int(key[len(prefix) :]): results[key] for key in results if key.startswith(prefix)}


def differing(a, b):
    return float(np.mean(a != b))


def assert_replicas_draw_their_own_masks(results, case):
    first, second = (draws(results, case, draw=draw) for draw in range(2))
    for call in (first, second):
        # The same inputs meet other masks on the other replica (Keras's Dropout: equal).
        assert differing(call[0], call[1]) > 0.25, (case, differing(call[0], call[1]))
    for replica in (0, 1):  # the generator advances: the next call draws other masks
        assert differing(first[replica], second[replica]) > 0.25, (case, replica)
    if case == "layer":  # rate 0.5 on each replica
        for mask in first.values():
            assert 0.3 < np.mean(mask == 0) < 0.7


def assert_the_same_seed_draws_the_same_masks(results):
    names = {key.split("/")[0] for key in results if "/" in key}
    for name in names:
        for draw in range(2):
            again = draws(results, name, run=1, draw=draw)
            for replica, output in draws(results, name, draw=draw).items():
                np.testing.assert_array_equal(again[replica], output, err_msg=name)


@pytest.mark.slow  # a MirroredStrategy over logical CPUs in a subprocess: ≈ 16 s (CI runs it)
def test_mirrored_replicas_draw_their_own_reproducible_masks(tmp_path):
    output = tmp_path / "mirrored.npz"
    assert_succeeded(run_helpers([(["mirrored", output, "--logical-cpus", 2], {})], helper=HELPER))
    results = np.load(output)
    assert int(results["num_replicas"]) == 2
    for case in DROPOUT_CASES:
        assert_replicas_draw_their_own_masks(results, case)
    # Without dropout the replicas compute the same outputs: the masks made the difference.
    no_dropout = draws(results, "no_dropout")
    np.testing.assert_array_equal(no_dropout[0], no_dropout[1])
    assert_the_same_seed_draws_the_same_masks(results)


@pytest.mark.slow  # two worker processes (CI runs it)
def test_workers_draw_by_global_replica_id_as_mirrored_replicas_do(tmp_path):
    """Worker i's replica is replica i of the whole strategy: the masks of 2 workers are
    those of 2 mirrored replicas (a function of the seed, the call and the replica id), and
    an XLA-compiled call draws them too."""
    outputs = [tmp_path / "worker0.npz", tmp_path / "worker1.npz", tmp_path / "mirrored.npz"]
    assert_succeeded(
        run_workers(
            [["multi_worker", outputs[i]] for i in range(2)],
            [(["mirrored", outputs[2], "--logical-cpus", 2], {})],
            helper=HELPER,
        )
    )
    workers = [np.load(path) for path in outputs[:2]]
    mirrored = np.load(outputs[2])
    results = {key: worker[key] for worker in workers for key in worker.files if "/" in key}
    assert sorted(draws(results, "layer")) == [0, 1]  # worker i holds replica i
    for case in (*DROPOUT_CASES, "layer_xla"):
        assert_replicas_draw_their_own_masks(results, case)
    assert_the_same_seed_draws_the_same_masks(results)
    for key in mirrored.files:
        if "/" in key:
            np.testing.assert_array_equal(results[key], mirrored[key], err_msg=key)
