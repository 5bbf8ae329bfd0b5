"""One training phase for both drivers: from the step the optimizer is at to `train_steps`, one
stretch of steps at a time.

A stretch is the steps between two history rows: fine-tuning's end in an evaluation
(`num_evaluations` of them), pretraining's every `log_every_steps` steps (some with the
held-out evaluation). Every stretch but the last ends at a multiple of `stretch_steps`.

`TrainingPhase.run` calls the loop's compiled calls a chunk at a time (`steps_per_execution`
steps, landing on the checkpoint steps), so that a signal is honoured between two of them: the
step is checkpointed and `Interrupted` raised (`training.interruption`), its line saying where
to resume. Inside a stretch it checkpoints every `checkpoint_every_steps`; at a stretch's end
it checks the loss (NaN or infinite stops the run), asks the driver's `Stretches.end` (its
evaluation) for the row's other columns, logs the row (`history.csv`, TensorBoard, progress:
the chief's) and checkpoints (before or after the row, as the driver asks) at the checkpoint
steps, the last step, and after every stretch when the driver asks.

    phase = TrainingPhase(loop, manager, directory, hooks, train_steps=..., stretch_steps=...,
                          checkpoint_every=..., chief=chief)
    last_row = phase.run(iterator)

What differs between the drivers is a `Stretches` object (the logs of the steps' sums, the
evaluation, what a checkpoint holds besides the weights) and the progress callbacks.
"""

from __future__ import annotations

import contextlib
import functools
import math
import time
from collections.abc import Sequence

import tensorflow as tf

from keras_albert.training.interruption import StopSignals
from keras_albert.training.logs import HistoryCsv, TensorBoardLogs
from keras_albert.training.loop import TrainingLoop, run_callbacks
from keras_albert.training.progress import StepRate
from keras_albert.training.run_directory import RunDirectory
from keras_albert.training.schedule import learning_rate_at


class Stretches:
    """What a driver does in its phase's stretches; each method has a default."""

    def logs(self, sums: dict[str, float], num_steps: int) -> dict[str, float]:
        """The train logs of `num_steps` steps' sums (`TrainingLoop.train`); `loss` first."""
        return {"loss": sums["loss"] / num_steps}

    def end(self, step: int, index: int, logs: dict, steps_per_second: float | None) -> dict:
        """The stretch `index` ended at `step`, the run at `steps_per_second` so far
        (`StepRate`'s); returns the row's columns besides `step`, `learning_rate` and `logs`
        (an evaluation's `val_` ones)."""
        return {}

    def before_save(self, sums: dict[str, float]) -> None:
        """Called before each checkpoint with the current stretch's sums so far: what the
        checkpoint holds besides the weights (`sums_checkpointed`)."""


class TrainingPhase:
    """The steps of a run from the optimizer's step to `train_steps`, stretch by stretch.

    Args:
        loop: the `TrainingLoop` that trains.
        manager: the `tf.train.CheckpointManager` every worker saves with.
        directory: the chief's `RunDirectory` (`history.csv`, `logs/`, the stopped line).
        stretches: the driver's `Stretches`.
        train_steps: the step the run ends at.
        stretch_steps: the steps of a stretch (the last may be shorter).
        checkpoint_every: steps between checkpoints; None: at the ends of stretches only
            (`checkpoint_each_stretch`).
        checkpoint_each_stretch: also checkpoint after every stretch (fine-tuning: its
            evaluations so far are in the checkpoint).
        sums_checkpointed: the current stretch's sums are in the checkpoint (`before_save`),
            so that a resumed stretch's row averages all its steps; else (pretraining) the
            first row after a resume averages the steps after it.
        checkpoint_before_row: at a stretch's end, the checkpoint is written before the row
            (pretraining: a row in `history.csv` means its step's checkpoint exists); else
            after it (fine-tuning: a run killed before the checkpoint logs the stretch again).
        history_columns: the first columns of `history.csv`.
        callbacks: more loop callbacks (progress): `on_train_begin(step)`,
            `on_stretch_begin(index)`, `on_steps(step, logs)` (`logs()`: the stretch's logs so
            far), `on_log(step, row)`, `on_train_end(step)`; a context manager among them is
            entered for the phase.
        chief: whether this worker writes the history and the logs.
    """

    def __init__(
        self,
        loop: TrainingLoop,
        manager: tf.train.CheckpointManager,
        directory: RunDirectory,
        stretches: Stretches,
        *,
        train_steps: int,
        stretch_steps: int,
        checkpoint_every: int | None,
        checkpoint_each_stretch: bool = False,
        sums_checkpointed: bool = False,
        checkpoint_before_row: bool = False,
        history_columns: tuple[str, ...] = ("step",),
        callbacks: Sequence = (),
        chief: bool = True,
    ):
        self.loop = loop
        self.manager = manager
        self.directory = directory
        self.stretches = stretches
        self.train_steps = train_steps
        self.stretch_steps = stretch_steps
        self.checkpoint_every = checkpoint_every
        self.checkpoint_each_stretch = checkpoint_each_stretch
        self.sums_checkpointed = sums_checkpointed
        self.checkpoint_before_row = checkpoint_before_row
        self.history_columns = history_columns
        self.callbacks = list(callbacks)
        self.chief = chief
        self.sums: dict[str, float] = {}

    def save(self, step: int) -> str:
        """Checkpoints `step` (with what the driver's `before_save` adds)."""
        self.stretches.before_save(self.sums)
        return self.manager.save(checkpoint_number=step)

    def _stopped(self, stop: StopSignals, step: int, saved: bool):
        if not saved:
            self.save(step)
        return stop.interrupted(self.directory.stopped_at(step, self.train_steps))

    def _callbacks(self, start: int) -> list:
        if not self.chief:
            return self.callbacks
        history_path = self.directory.join("history.csv")
        if not start and tf.io.gfile.exists(history_path):  # a run that left no checkpoint
            tf.io.gfile.remove(history_path)
        return [
            HistoryCsv(history_path, self.history_columns),
            TensorBoardLogs(self.directory.join("logs")),
            *self.callbacks,
        ]

    def run(self, iterator, sums: dict[str, float] | None = None) -> dict:
        """Trains from the optimizer's step to `train_steps` on `iterator`'s batches;
        `sums`: the current stretch's sums a resumed run restored (`sums_checkpointed`).
        Returns the last stretch's row (empty when none was left) with its
        `seconds_per_step` (training only) in `self.seconds_per_step` and the run's rate so far
        (`StepRate`'s) in `self.steps_per_second`."""
        loop, every, length = self.loop, self.checkpoint_every, self.stretch_steps
        start = step = int(loop.optimizer.iterations.numpy())
        self.sums = dict(sums or {}) if self.sums_checkpointed else {}
        # The steps the sums hold: a resumed stretch's from its first step, if they were kept.
        counted = step % length if self.sums else 0
        chunk = max(1, loop.steps_per_execution)
        callbacks = self._callbacks(start)
        row: dict = {}
        self.seconds_per_step = self.steps_per_second = None
        step_rate = StepRate()
        step_rate.begin(start)
        run_callbacks(callbacks, "on_train_begin", start)  # drops rows logged past `start`
        with contextlib.ExitStack() as stack:
            stop = stack.enter_context(StopSignals())
            for callback in callbacks:  # an interruption's line starts a line of its own
                if hasattr(callback, "__enter__"):
                    stack.enter_context(callback)
            while step < self.train_steps:
                index = step // length
                end = min((index + 1) * length, self.train_steps)
                run_callbacks(callbacks, "on_stretch_begin", index)
                started = time.perf_counter()
                trained = 0
                while step < end:
                    count = min(chunk, end - step)
                    if every:  # land on the checkpoint steps
                        count = min(count, every - step % every)
                    part = loop.train(iterator, count)
                    self.sums = {key: self.sums.get(key, 0.0) + part[key] for key in part}
                    step, counted, trained = step + count, counted + count, trained + count
                    logs = functools.partial(self.stretches.logs, self.sums, counted)
                    run_callbacks(callbacks, "on_steps", step, logs)
                    if step == end:
                        break  # the stretch's row and checkpoint follow
                    saved = bool(every) and step % every == 0
                    if saved:
                        self.save(step)
                    if stop.agreed(loop.strategy):
                        raise self._stopped(stop, step, saved)
                seconds = time.perf_counter() - started
                self.seconds_per_step = seconds / trained
                logs = self.stretches.logs(self.sums, counted)
                if not math.isfinite(logs["loss"]):
                    raise FloatingPointError(
                        f"The training loss became NaN or infinite by step {step}; the last "
                        f"checkpoint in {self.manager.directory} precedes it."
                    )
                self.steps_per_second = step_rate.mark(step)
                columns = self.stretches.end(step, index, logs, self.steps_per_second)
                # The rate the last update used: the schedule at iterations - 1.
                rate = learning_rate_at(loop.optimizer, step - 1)
                row = {"step": step, "learning_rate": rate, **logs, **columns}
                self.sums, counted = {}, 0
                saved = (
                    self.checkpoint_each_stretch
                    or (bool(every) and step % every == 0)
                    or step >= self.train_steps
                )
                if saved and self.checkpoint_before_row:
                    self.save(step)
                run_callbacks(callbacks, "on_log", step, row)
                if saved and not self.checkpoint_before_row:
                    self.save(step)
                if stop.agreed(loop.strategy) and step < self.train_steps:
                    raise self._stopped(stop, step, saved)
        run_callbacks(callbacks, "on_train_end", step)
        return row
