"""The fine-tuning driver's progress over the training loop's steps: a heading per stretch of
steps between two evaluations, then (verbose 1) Keras's progress bar over its steps.

    evaluation 2/4: steps 101-200 of 400, about 3m 10s left
    100/100 ━━━━━━━━━━━━━━━━━━━━ 35s 350ms/step - accuracy: 0.8125 - loss: 0.4410

An "evaluation" is the stretch of steps before an evaluation, not a pass over the data (not
Keras's "Epoch k/n").
"""

from __future__ import annotations

import time

import keras

from keras_albert.training.progress import format_duration


class EvaluationProgress:
    """Progress of a fine-tuning run of `train_steps` steps, evaluated every `steps_per_epoch`.

    Args:
        steps_per_epoch: steps between two evaluations.
        train_steps: the steps of the run.
        verbose: 0: nothing; 1: the heading and a progress bar; 2: the heading only.
        names: the logs the bar shows (means over the stretch so far, shown as given).
        clock: a monotonic clock in seconds (tests pass their own).
    """

    def __init__(
        self,
        steps_per_epoch: int,
        train_steps: int,
        verbose: int,
        names: tuple[str, ...] = ("loss",),
        clock=time.perf_counter,
    ):
        self.steps_per_epoch = steps_per_epoch
        self.train_steps = train_steps
        self.verbose = verbose
        self.names = tuple(names)
        self.clock = clock
        self._started = None
        self._first_step = 0
        self._bar = None

    def on_train_begin(self, step: int = 0) -> None:
        """`step`: where this process starts (a resumed run: the time left counts from it)."""
        self._started = self.clock()
        self._first_step = step

    def on_epoch_begin(self, epoch: int) -> None:
        if not self.verbose:
            return
        epochs = -(-self.train_steps // self.steps_per_epoch)
        first = epoch * self.steps_per_epoch + 1
        last = min(self.train_steps, (epoch + 1) * self.steps_per_epoch)
        line = f"evaluation {epoch + 1}/{epochs}: steps {first}-{last} of {self.train_steps}"
        if first - 1 > self._first_step:  # the time so far (evaluations included) per step
            per_step = (self.clock() - self._started) / (first - 1 - self._first_step)
            line += f", about {format_duration(per_step * (self.train_steps - first + 1))} left"
        print(line, flush=True)
        if self.verbose == 1:
            self._bar = keras.utils.Progbar(last - first + 1, stateful_metrics=self.names)

    @property
    def showing_bar(self) -> bool:
        """Whether a progress bar is open (then `on_steps` wants the running logs)."""
        return self._bar is not None

    def on_steps(self, done: int, logs: dict) -> None:
        """`done` steps of the current stretch are trained; `logs` are their means."""
        if self._bar is not None:
            shown = [(name, logs[name]) for name in self.names if name in logs]
            self._bar.update(done, values=shown)  # finishes its line at the stretch's end
            if done >= self._bar.target:
                self._bar = None
