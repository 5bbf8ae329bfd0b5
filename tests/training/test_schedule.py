"""WarmupPolynomialDecay against ALBERT optimization.py's formula, transcribed in Python."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_albert.training.schedule import WarmupPolynomialDecay


def albert_learning_rate(
    step, init_lr, num_train_steps, num_warmup_steps, end_lr=0.0, power=1.0, start_warmup_step=0
):
    """optimization.create_optimizer: tf.train.polynomial_decay(cycle=False) over
    the global step, replaced by init_lr * (step - start_warmup_step) / num_warmup_steps
    while step - start_warmup_step < num_warmup_steps."""
    decay_step = min(step, num_train_steps)
    learning_rate = (init_lr - end_lr) * (1 - decay_step / num_train_steps) ** power + end_lr
    if num_warmup_steps:
        is_warmup = float(step - start_warmup_step < num_warmup_steps)
        warmup_learning_rate = init_lr * ((step - start_warmup_step) / num_warmup_steps)
        learning_rate = (1.0 - is_warmup) * learning_rate + is_warmup * warmup_learning_rate
    return learning_rate


CASES = [
    # (peak, warmup, total, end, power)
    (1e-3, 100, 1000, 0.0, 1.0),
    (0.00176, 3125, 125000, 0.0, 1.0),  # ALBERT-base pretraining
    (5e-4, 10, 50, 1e-5, 2.0),
    (1e-3, 0, 100, 0.0, 1.0),
    (1e-3, 100, 100, 0.0, 0.5),
]


@pytest.mark.parametrize("peak, warmup, total, end, power", CASES)
def test_matches_albert_formula(peak, warmup, total, end, power):
    schedule = WarmupPolynomialDecay(peak, warmup, total, end_learning_rate=end, power=power)
    checkpoints = {
        "start": 0,
        "first": 1,
        "mid_warmup": warmup // 2,
        "last_warmup": max(warmup - 1, 0),
        "end_of_warmup": warmup,
        "mid_decay": (warmup + total) // 2,
        "end": total,
        "beyond": total + 17,
        "far_beyond": 10 * total,
    }
    for label, step in checkpoints.items():
        expected = albert_learning_rate(step, peak, total, warmup, end, power)
        actual = float(schedule(step))
        assert actual == pytest.approx(expected, rel=1e-5, abs=1e-12), (label, step)


@pytest.mark.parametrize("start", [5, 40])
def test_warmup_from_a_later_step_matches_albert_formula_from_that_step_on(start):
    peak, warmup, total, power = 1e-3, 20, 200, 2.0
    schedule = WarmupPolynomialDecay(peak, warmup, total, power=power, start_warmup_step=start)
    for step in (start, start + 1, start + warmup // 2, start + warmup - 1, start + warmup,
                 (start + total) // 2, total, total + 3):  # fmt: skip
        expected = albert_learning_rate(step, peak, total, warmup, power=power,
                                        start_warmup_step=start)  # fmt: skip
        assert float(schedule(step)) == pytest.approx(expected, rel=1e-5, abs=1e-12), step
    # Before the warmup starts the original's rate is negative; ours is 0.
    assert albert_learning_rate(start - 1, peak, total, warmup, start_warmup_step=start) < 0
    assert float(schedule(start - 1)) == 0.0 and float(schedule(0)) == 0.0
    with pytest.raises(ValueError, match="start_warmup_step=-1"):
        WarmupPolynomialDecay(peak, warmup, total, start_warmup_step=-1)


def test_landmark_values_by_hand():
    schedule = WarmupPolynomialDecay(1e-3, warmup_steps=100, total_steps=1000)
    assert float(schedule(0)) == 0.0  # the first update of a warmup has rate 0
    assert float(schedule(50)) == pytest.approx(5e-4)
    assert float(schedule(99)) == pytest.approx(9.9e-4)
    # Decay counts from step 0, so the end of warmup is already 10% down.
    assert float(schedule(100)) == pytest.approx(9e-4)
    assert float(schedule(550)) == pytest.approx(4.5e-4)
    assert float(schedule(1000)) == 0.0
    assert float(schedule(5000)) == 0.0


def test_accepts_the_optimizer_step_variable_in_a_compiled_function():
    schedule = WarmupPolynomialDecay(1e-3, warmup_steps=4, total_steps=8)
    step = tf.Variable(0, dtype=tf.int64)
    compiled = tf.function(lambda: schedule(step), jit_compile=True)
    values = []
    for _ in range(10):
        values.append(float(compiled()))
        step.assign_add(1)
    expected = [albert_learning_rate(s, 1e-3, 8, 4) for s in range(10)]
    np.testing.assert_allclose(values, expected, rtol=1e-6, atol=1e-12)


def test_drives_the_optimizer_learning_rate():
    schedule = WarmupPolynomialDecay(1e-2, warmup_steps=2, total_steps=4)
    optimizer = keras.optimizers.SGD(learning_rate=schedule)
    variable = keras.Variable(np.zeros(1, "float32"))
    seen = []
    for _ in range(5):
        seen.append(float(optimizer.learning_rate))
        optimizer.apply([tf.ones(1)], [variable])
    assert seen == pytest.approx([albert_learning_rate(s, 1e-2, 4, 2) for s in range(5)])
    # SGD moved by exactly the sum of the rates used.
    assert float(variable[0]) == pytest.approx(-sum(seen))


def test_config_round_trip():
    schedule = WarmupPolynomialDecay(
        3e-4, warmup_steps=7, total_steps=70, end_learning_rate=1e-6, power=2.0, name="lr"
    )
    config = schedule.get_config()
    assert config == {
        "peak_learning_rate": 3e-4,
        "warmup_steps": 7,
        "total_steps": 70,
        "end_learning_rate": 1e-6,
        "power": 2.0,
        "name": "lr",
        "start_warmup_step": 0,
    }
    restored = keras.optimizers.schedules.deserialize(
        keras.optimizers.schedules.serialize(schedule)
    )
    assert isinstance(restored, WarmupPolynomialDecay)
    assert restored.get_config() == config
    for step in (0, 3, 7, 40, 70, 100):
        assert float(restored(step)) == float(schedule(step))


def test_numpy_integer_steps_are_accepted():
    schedule = WarmupPolynomialDecay(1e-3, np.int64(10), np.int32(100))
    assert schedule.get_config()["warmup_steps"] == 10
    assert type(schedule.get_config()["total_steps"]) is int


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"peak_learning_rate": 0.0}, "peak_learning_rate=0.0"),
        ({"total_steps": 0}, "total_steps=0"),
        ({"total_steps": 10.5}, "total_steps=10.5"),
        ({"warmup_steps": -1}, "warmup_steps=-1"),
        ({"warmup_steps": 2000}, r"warmup_steps=2000"),
        ({"warmup_steps": True}, "warmup_steps=True"),
        ({"end_learning_rate": -1e-4}, "end_learning_rate=-0.0001"),
        ({"end_learning_rate": 1.0}, "end_learning_rate=1.0"),
        ({"power": 0.0}, "power=0.0"),
    ],
)
def test_invalid_arguments_name_the_value(kwargs, message):
    arguments = {"peak_learning_rate": 1e-3, "warmup_steps": 10, "total_steps": 1000}
    arguments.update(kwargs)
    with pytest.raises(ValueError, match=message):
        WarmupPolynomialDecay(**arguments)
