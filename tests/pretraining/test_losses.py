"""The pretraining losses against NumPy: `MaskedLMLoss` (the original's weighted mean), the SOP
loss, the sums, loss and logs the training loop adds up over replicas; and a `pretrainer.keras`
saved when the losses module was `keras_albert.training.losses` still loads."""

import json
import pathlib
import zipfile

import keras
import numpy as np
import tensorflow as tf

from keras_albert import AlbertBackbone, AlbertPretrainer
from keras_albert.pretraining.losses import (
    MaskedLMLoss,
    pretraining_logs,
    pretraining_loss,
    pretraining_sums,
    sentence_order_loss,
)
from keras_albert.pretraining.objective import compile_pretrainer
from keras_albert.training.lamb import Lamb
from keras_albert.training.schedule import WarmupPolynomialDecay
from tests.helpers import random_inputs

# `config.json` of a compiled tiny `pretrainer.keras` (Lamb, WarmupPolynomialDecay, MaskedLMLoss)
# as Keras 3.15 wrote it when the losses module was `keras_albert.training.losses`.
LOSSES_IN_TRAINING = pathlib.Path(__file__).with_name("pretrainer_config_losses_in_training.json")


def log_softmax(logits):
    shifted = logits - logits.max(-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))


def test_masked_lm_loss_is_the_originals_weighted_mean():
    rng = np.random.default_rng(0)
    logits = rng.standard_normal((3, 4, 11)).astype("float32")
    labels = rng.integers(0, 11, (3, 4))
    weights = np.array([[1, 1, 0, 0], [1, 1, 1, 1], [1, 0, 0, 0]], "float32")
    nll = -np.take_along_axis(log_softmax(logits), labels[..., None], -1)[..., 0]
    expected = (weights * nll).sum() / (weights.sum() + 1e-5)
    loss = MaskedLMLoss()(labels, logits, sample_weight=weights)
    np.testing.assert_allclose(float(loss), expected, rtol=1e-6)
    # Keras's own reduction would divide by all 12 slots: a different number.
    assert abs(expected - (weights * nll).sum() / 12) > 0.1
    # No real prediction: 0, not NaN (the 1e-5).
    assert float(MaskedLMLoss()(labels, logits, sample_weight=np.zeros_like(weights))) == 0.0
    assert MaskedLMLoss.from_config(MaskedLMLoss().get_config()).get_config() == {
        "name": "masked_lm_loss",
        "dtype": "float32",
    }


def test_sentence_order_loss_is_the_mean_cross_entropy():
    rng = np.random.default_rng(1)
    logits = rng.standard_normal((5, 2)).astype("float32")
    labels = np.array([0, 1, 1, 0, 1])
    expected = -np.take_along_axis(log_softmax(logits), labels[:, None], -1).mean()
    np.testing.assert_allclose(float(sentence_order_loss()(labels, logits)), expected, rtol=1e-6)


def test_pretraining_sums_and_loss_against_numpy():
    """Split into two shares with different numbers of real predictions, the shares' losses
    (each normalized by the global counts) add up to the original's loss of the whole batch."""
    rng = np.random.default_rng(0)
    mlm_logits = rng.standard_normal((6, 3, 7))
    sop_logits = rng.standard_normal((6, 2))
    mlm_labels = rng.integers(0, 7, (6, 3))
    sop_labels = rng.integers(0, 2, 6)
    counts = np.array([1, 1, 1, 3, 3, 2])
    mlm_weights = (np.arange(3)[None] < counts[:, None]).astype(np.float64)

    def sums(rows):
        return pretraining_sums(
            {"mlm_logits": mlm_labels[rows], "sop_logits": sop_labels[rows]},
            {
                "mlm_logits": tf.constant(mlm_logits[rows]),
                "sop_logits": tf.constant(sop_logits[rows]),
            },
            {"mlm_logits": mlm_weights[rows], "sop_logits": np.ones(len(sop_labels[rows]))},
        )

    halves = [sums(slice(0, 3)), sums(slice(3, 6))]
    totals = {key: halves[0][key] + halves[1][key] for key in halves[0]}
    loss = sum(float(pretraining_loss(half, totals, 2.0)) for half in halves)

    mlm_nll = -np.take_along_axis(log_softmax(mlm_logits), mlm_labels[..., None], -1)[..., 0]
    sop_nll = -np.take_along_axis(log_softmax(sop_logits), sop_labels[:, None], -1)[:, 0]
    mlm = (mlm_weights * mlm_nll).sum() / (mlm_weights.sum() + 1e-5)
    np.testing.assert_allclose(loss, mlm + 2.0 * sop_nll.mean(), rtol=1e-12)
    logs = pretraining_logs({key: float(value) for key, value in totals.items()}, 2.0)
    hits = (mlm_logits.argmax(-1) == mlm_labels) * mlm_weights
    np.testing.assert_allclose(logs["mlm_loss"], (mlm_weights * mlm_nll).sum() / 11, rtol=1e-12)
    np.testing.assert_allclose(logs["mlm_accuracy"], hits.sum() / 11, rtol=1e-12)
    np.testing.assert_allclose(logs["sop_loss"], sop_nll.mean(), rtol=1e-12)
    np.testing.assert_allclose(logs["loss"], logs["mlm_loss"] + 2.0 * logs["sop_loss"])
    # Each share normalized by its own count (the original per TPU core) would differ.
    per_share = sum(float(pretraining_loss(half, half, 2.0)) for half in halves) / 2
    assert abs(per_share - loss) > 1e-2


def test_a_pretrainer_saved_with_the_losses_in_training_still_loads(tmp_path):
    """Keras finds a saved object by its registered name (`keras_albert>MaskedLMLoss`, kept),
    not by the `module` a file records: moving a module breaks no saved file."""
    config_json = LOSSES_IN_TRAINING.read_text(encoding="utf-8")
    assert '"module": "keras_albert.training.losses"' in config_json
    backbone = json.loads(config_json)["config"]["backbone"]["config"]
    model = AlbertPretrainer(AlbertBackbone.from_config(backbone))
    compile_pretrainer(model, Lamb(WarmupPolynomialDecay(1e-3, 1, 10)))
    model.optimizer.build(model.trainable_variables)  # as after training: its slots are saved
    saved = tmp_path / "saved.keras"
    model.save(saved)
    # The same archive with the old layout's config.json (the weights do not name modules).
    old = tmp_path / "old.keras"
    with zipfile.ZipFile(saved) as source, zipfile.ZipFile(old, "w") as target:
        for item in source.infolist():
            is_config = item.filename == "config.json"
            target.writestr(item, config_json if is_config else source.read(item))

    loaded = keras.models.load_model(old)
    assert isinstance(loaded.loss["mlm_logits"], MaskedLMLoss)
    assert isinstance(loaded.optimizer, Lamb)
    inputs = random_inputs(num_masked=2)
    np.testing.assert_array_equal(loaded(inputs)["mlm_logits"], model(inputs)["mlm_logits"])
