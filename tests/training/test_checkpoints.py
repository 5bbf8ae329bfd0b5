"""`training_checkpoint` holds the dropout layers' seed generators, so a restored model draws
the masks it would have drawn; a checkpoint written without them (pretraining's, before) still
restores, with one line."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_albert import AlbertPretrainer
from keras_albert.training.checkpoints import restore_training_checkpoint, training_checkpoint
from tests.helpers import random_inputs, tiny_backbone

INPUTS = random_inputs(num_masked=2)


def pretrainer_and_optimizer(**changes):
    keras.utils.set_random_seed(1)
    model = AlbertPretrainer(tiny_backbone(dropout=0.1, attention_dropout=0.1, **changes))
    model(INPUTS)
    optimizer = keras.optimizers.SGD(0.1)
    optimizer.build(model.trainable_variables)
    return model, optimizer


def seed_states(model):
    return [v.numpy() for v in model.variables if v.name == "seed_generator_state"]


def test_a_restored_model_draws_the_masks_it_would_have_drawn(tmp_path):
    model, optimizer = pretrainer_and_optimizer()
    # Embedding, attention probabilities, attention output, feed-forward output.
    assert len(seed_states(model)) == 4
    model(INPUTS, training=True)  # the generators advance
    path = training_checkpoint(model, optimizer).save(str(tmp_path / "ckpt"))
    saved = seed_states(model)
    expected = model(INPUTS, training=True)["mlm_logits"]
    model(INPUTS, training=True)  # moves on past the checkpoint

    restore_training_checkpoint(training_checkpoint(model, optimizer), path)
    for actual, state in zip(seed_states(model), saved, strict=True):
        np.testing.assert_array_equal(actual, state)
    np.testing.assert_array_equal(model(INPUTS, training=True)["mlm_logits"], expected)


def test_a_checkpoint_without_the_generators_restores_with_one_line(tmp_path, capsys):
    model, optimizer = pretrainer_and_optimizer()
    model(INPUTS, training=True)
    # As pretraining wrote its checkpoints before they held the generators.
    path = tf.train.Checkpoint(model=model, optimizer=optimizer).save(str(tmp_path / "ckpt"))

    fresh, fresh_optimizer = pretrainer_and_optimizer()
    for weight in fresh.trainable_variables:
        weight.assign(tf.zeros_like(weight))
    states = seed_states(fresh)
    restore_training_checkpoint(training_checkpoint(fresh, fresh_optimizer), path)
    lines = capsys.readouterr().out.splitlines()
    assert lines == [
        f"keras_albert: {path} holds no dropout state (written by an older keras_albert): the "
        "resumed run draws other dropout masks than an uninterrupted run would."
    ]
    for expected, actual in zip(model.get_weights(), fresh.get_weights(), strict=True):
        np.testing.assert_array_equal(actual, expected)
    for actual, state in zip(seed_states(fresh), states, strict=True):
        np.testing.assert_array_equal(actual, state)  # fresh, not the saved model's

    # Everything else is still checked: an optimizer with slots the checkpoint lacks fails.
    adam = keras.optimizers.Adam()
    adam.build(fresh.trainable_variables)
    with pytest.raises(AssertionError, match="not bound to checkpointed values"):
        restore_training_checkpoint(training_checkpoint(fresh, adam), path)
