"""The fine-tuning driver's callbacks: the task evaluation, the best model and step progress.
(Pretraining runs on `keras_albert.training.loop`, with its own callbacks.)"""

from __future__ import annotations

import time

import keras
import numpy as np

from keras_albert.training.finetuning_task import FinetuningTask
from keras_albert.training.progress import format_duration
from keras_albert.training.run_directory import atomic_save_model


class TaskEvaluation(keras.callbacks.Callback):
    """After each epoch: `task.evaluate(model)`, added to the logs as `val_<metric>`.

    Put it before callbacks that read those logs (`BestModel`, TensorBoard, CSVLogger): Keras
    hands the same `logs` dict to each callback in turn.
    """

    def __init__(self, task: FinetuningTask, batch_size: int):
        super().__init__()
        self.task = task
        self.batch_size = batch_size
        self.history: list[dict] = []

    def on_epoch_end(self, epoch, logs=None):
        results = self.task.evaluate(self.model, self.batch_size)
        if logs is not None:
            logs.update({f"val_{name}": value for name, value in results.items()})
        self.history.append({"epoch": epoch + 1, **results})
        shown = ", ".join(f"{name}={value:.4g}" for name, value in results.items())
        end_of_bar = "\n" if self.params.get("verbose") == 1 else ""  # Keras's bar lacks one
        print(f"{end_of_bar}{self.task.name} eval after evaluation {epoch + 1}: {shown}")


class EvaluationProgress(keras.callbacks.ProgbarLogger):
    """Keras's progress bar over the steps between two evaluations, headed by a line
    `evaluation k/n: steps a-b of N, about T left` (not Keras's "Epoch k/n": an epoch here is
    the stretch of steps before an evaluation, not a pass over the data)."""

    def __init__(self, steps_per_epoch: int, train_steps: int):
        super().__init__()
        self.steps_per_epoch = steps_per_epoch
        self.train_steps = train_steps
        self._started = None

    def on_train_begin(self, logs=None):
        super().on_train_begin(logs)
        self._started = time.perf_counter()

    def on_epoch_begin(self, epoch, logs=None):
        self._reset_progbar()
        self._maybe_init_progbar()
        if not self.verbose:
            return
        first = epoch * self.steps_per_epoch + 1
        last = min(self.train_steps, (epoch + 1) * self.steps_per_epoch)
        line = f"evaluation {epoch + 1}/{self.epochs}: steps {first}-{last} of {self.train_steps}"
        if epoch:  # the time so far (evaluations included) per step, times the steps left
            per_step = (time.perf_counter() - self._started) / (first - 1)
            line += f", about {format_duration(per_step * (self.train_steps - first + 1))} left"
        print(line, flush=True)


class BestModel(keras.callbacks.Callback):
    """Saves the model to `path` (atomically) after each epoch whose `monitor` log is the
    highest so far."""

    def __init__(self, path: str, monitor: str):
        super().__init__()
        self.path = path
        self.monitor = monitor
        self.best = -np.inf

    def on_epoch_end(self, epoch, logs=None):
        value = (logs or {}).get(self.monitor)
        if value is None:
            raise ValueError(
                f"`monitor` must name a log of the epoch. Received: monitor={self.monitor!r} "
                f"(logs: {sorted(logs or {})})"
            )
        if value > self.best:
            self.best = value
            atomic_save_model(self.model, self.path)
