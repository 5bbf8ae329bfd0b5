"""The training phase both drivers run, on a stand-in loop (each step's loss is its number):
the compiled calls land on the checkpoint steps, a row per stretch, a signal checkpoints and
stops, a NaN loss stops, a resumed stretch's row averages the steps its sums hold."""

import csv
import math
import os
import signal

import pytest
import tensorflow as tf

from keras_albert.training.interruption import Interrupted
from keras_albert.training.phase import Stretches, TrainingPhase
from keras_albert.training.run_directory import RunDirectory


class Optimizer:
    _learning_rate = 0.5

    def __init__(self, step):
        self.iterations = tf.Variable(step, dtype=tf.int64)


class Loop:
    """`TrainingLoop`'s face: step k's loss is k (or `loss_at(k)`)."""

    def __init__(self, start=0, steps_per_execution=2, loss_at=float, on_call=None):
        self.optimizer = Optimizer(start)
        self.steps_per_execution = steps_per_execution
        self.strategy = tf.distribute.get_strategy()
        self.loss_at, self.on_call = loss_at, on_call
        self.calls = []

    def train(self, iterator, num_steps):
        first = int(self.optimizer.iterations.numpy()) + 1
        self.calls.append(num_steps)
        self.optimizer.iterations.assign_add(num_steps)
        if self.on_call is not None:
            self.on_call(first + num_steps - 1)
        return {"loss": sum(self.loss_at(k) for k in range(first, first + num_steps))}


class Manager:
    directory = "checkpoints"

    def __init__(self, history=None):
        self.saved, self.history, self.rows_then = [], history, []

    def save(self, checkpoint_number):
        self.saved.append(checkpoint_number)
        if self.history is not None and self.history.exists():  # the rows when it saved
            self.rows_then.append(len(self.history.read_text().splitlines()) - 1)
        return f"ckpt-{checkpoint_number}"


def phase(loop, tmp_path, stretches=None, **options):
    options = {"train_steps": 10, "stretch_steps": 4, "checkpoint_every": 3, **options}
    manager = Manager(tmp_path / "history.csv")
    directory = RunDirectory(str(tmp_path))
    return TrainingPhase(loop, manager, directory, stretches or Stretches(), **options), manager


def rows(tmp_path):
    with open(tmp_path / "history.csv") as file:
        return list(csv.DictReader(file))


def test_calls_land_on_checkpoint_steps_and_each_stretch_ends_in_a_row(tmp_path):
    loop = Loop()
    training, manager = phase(loop, tmp_path)
    last = training.run(iterator=None)
    assert loop.calls == [2, 1, 1, 2, 2, 1, 1]
    assert manager.saved == [3, 6, 9, 10]  # every 3 steps and the last
    assert manager.rows_then == [0, 1, 2, 3]  # the last step's after its row
    assert [(row["step"], float(row["loss"])) for row in rows(tmp_path)] == [
        ("4", 2.5), ("8", 6.5), ("10", 9.5),
    ]  # fmt: skip
    assert last == {"step": 10, "learning_rate": 0.5, "loss": 9.5}
    assert os.path.isdir(tmp_path / "logs")


def test_each_stretch_checkpointed_and_a_resumed_stretch_averages_its_kept_sums(tmp_path):
    class Kept(Stretches):
        def __init__(self):
            self.saved_sums = []

        def before_save(self, sums):
            self.saved_sums.append(dict(sums))

    kept = Kept()
    loop = Loop(start=5)  # resumed after step 5; the sums kept: step 5's
    training, manager = phase(
        loop, tmp_path, kept, checkpoint_every=None, checkpoint_each_stretch=True,
        sums_checkpointed=True,
    )  # fmt: skip
    training.run(iterator=None, sums={"loss": 5.0})
    assert manager.saved == [8, 10] and kept.saved_sums == [{}, {}]
    assert manager.rows_then == [1, 2]
    assert [float(row["loss"]) for row in rows(tmp_path)] == [6.5, 9.5]  # steps 5-8, 9-10

    # Not kept (pretraining's): the first row averages the steps after the resume.
    loop = Loop(start=5)
    training, manager = phase(loop, tmp_path / "b", checkpoint_every=4, checkpoint_before_row=True)
    training.run(iterator=None, sums={"loss": 5.0})
    assert [float(row["loss"]) for row in rows(tmp_path / "b")] == [7.0, 9.5]
    assert manager.saved == [8, 10] and manager.rows_then == [0, 1]  # each before its row


def test_a_signal_checkpoints_the_step_and_stops(tmp_path):
    def signal_at(step):
        if step == 6:  # inside the second stretch
            os.kill(os.getpid(), signal.SIGTERM)

    loop = Loop(on_call=signal_at)
    training, manager = phase(loop, tmp_path, checkpoint_every=None)
    with pytest.raises(Interrupted) as stopped:
        training.run(iterator=None)
    assert manager.saved == [6]
    checkpoint = tmp_path / "checkpoints" / "ckpt-6"
    assert str(stopped.value) == (
        f"SIGTERM: stopped after step 6 of 10; checkpoint {checkpoint} written — rerun the "
        "same command to resume"
    )
    assert stopped.value.exit_status == 143
    assert signal.getsignal(signal.SIGTERM) is not None  # the handler put back


def test_a_nan_loss_stops_the_run(tmp_path):
    loop = Loop(loss_at=lambda k: math.nan if k == 6 else float(k))
    training, manager = phase(loop, tmp_path)
    with pytest.raises(FloatingPointError, match="NaN or infinite by step 8; the last check"):
        training.run(iterator=None)
    assert manager.saved == [3, 6]
