"""The fine-tuning driver's progress over the training loop's steps: a heading per stretch of
steps between two evaluations, then (verbose 1) its steps: Keras's progress bar on a terminal,
elsewhere (a log file, a pipe) one line every `line_interval` steps, as pretraining prints
them (`keras_albert.training.progress.StepProgress`).

    evaluation 2/4: steps 41-80 of 160, about 1m 05s left
    step 45/160 · 3.1 steps/s · 37s left · loss 0.693 · accuracy 0.500        (no terminal)
    40/40 ━━━━━━━━━━━━━━━━━━━━ 13s 325ms/step - accuracy: 0.8125 - loss: 0.4410  (terminal)

Keras's bar redraws its line with "\\r", "\\b" and ANSI escapes, and Keras draws it that way
on every POSIX system, terminal or not: in a log file it is kilobytes of bar per stretch. The
lines' rate and time left are wall time (evaluations included), as the headings'. A resumed
run's heading starts at the first step it trains ("steps 63-160" after a checkpoint at 62).

An "evaluation" is the stretch of steps before an evaluation, not a pass over the data (not
Keras's "Epoch k/n").
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

import keras

from keras_albert.training.progress import StepProgress, format_duration

# At most about this many step lines per stretch (its last step is the evaluation's line).
LINES_PER_STRETCH = 10


def line_interval(steps_per_epoch: int) -> int:
    """The steps between two lines: the smallest of 1, 2, 5, 10, 20, 50, 100, ... that gives
    at most `LINES_PER_STRETCH` lines per stretch (1000 steps: every 100, pretraining's
    default `log_every_steps`)."""
    scale = 1
    while True:
        for interval in (scale, 2 * scale, 5 * scale):
            if interval * LINES_PER_STRETCH >= steps_per_epoch:
                return interval
        scale *= 10


class EvaluationProgress:
    """Progress of a fine-tuning run of `train_steps` steps, evaluated after every
    `steps_per_epoch` steps and after the last (the last stretch may be shorter).

    A context manager: when its block ends, however it ends (an interruption, an error), an
    unfinished bar's line is ended, so that what is printed next starts a line of its own.

    Args:
        steps_per_epoch: steps between two evaluations.
        train_steps: the steps of the run.
        verbose: 0: nothing; 1: the heading, then the bar (terminal) or the step lines;
            2: the heading only.
        names: the logs the bar and lines show (means over the stretch so far, shown as given).
        clock: a monotonic clock in seconds (tests pass their own).
        terminal: whether stdout is a terminal (draws the bar); None: `sys.stdout.isatty()`.
    """

    def __init__(
        self,
        steps_per_epoch: int,
        train_steps: int,
        verbose: int,
        names: tuple[str, ...] = ("loss",),
        clock=time.perf_counter,
        terminal: bool | None = None,
    ):
        self.steps_per_epoch = steps_per_epoch
        self.train_steps = train_steps
        self.verbose = verbose
        self.names = tuple(names)
        self.clock = clock
        self.terminal = sys.stdout.isatty() if terminal is None else terminal
        self.interval = line_interval(steps_per_epoch)
        self._lines = None
        if verbose == 1 and not self.terminal:
            self._lines = StepProgress(train_steps, self.names, clock=clock)
        self._started = None
        self._first_step = self._step = 0
        self._stretch = (1, 0)  # the current stretch's first and last step
        self._bar = None
        self._bar_drawn = False

    def __enter__(self) -> EvaluationProgress:
        return self

    def __exit__(self, *exc_info) -> None:
        if self._bar is not None and self._bar_drawn:
            print(flush=True)  # the bar leaves its line open until its last step
        self._bar = None

    def on_train_begin(self, step: int = 0) -> None:
        """`step`: where this process starts (a resumed run: the time left counts from it)."""
        self._started = self.clock()
        self._first_step = self._step = step
        if self._lines is not None:
            self._lines.on_train_begin(step)

    def on_stretch_begin(self, index: int) -> None:
        """Stretch `index` (from 0) begins: its heading."""
        num_stretches = -(-self.train_steps // self.steps_per_epoch)
        # A resumed run starts inside a stretch: its heading names the steps it trains.
        first = max(index * self.steps_per_epoch, self._first_step) + 1
        last = min(self.train_steps, (index + 1) * self.steps_per_epoch)
        self._stretch = (first, last)
        if not self.verbose:
            return
        line = f"evaluation {index + 1}/{num_stretches}: steps {first}-{last} of {self.train_steps}"
        if first - 1 > self._first_step:  # the time so far (evaluations included) per step
            per_step = (self.clock() - self._started) / (first - 1 - self._first_step)
            line += f", about {format_duration(per_step * (self.train_steps - first + 1))} left"
        print(line, flush=True)
        if self.verbose == 1 and self.terminal:
            self._bar = keras.utils.Progbar(last - first + 1, stateful_metrics=self.names)
            self._bar_drawn = False

    def on_steps(self, step: int, logs: Callable[[], dict]) -> None:
        """The run is at `step` (of the current stretch); `logs()` gives the stretch's means
        (called only when they are shown)."""
        previous, self._step = self._step, step
        if self._bar is not None:
            shown = [(name, value) for name, value in logs().items() if name in self.names]
            done = step - self._stretch[0] + 1
            self._bar.update(done, values=shown)  # finishes its line at the stretch's end
            self._bar_drawn = True
            if done >= self._bar.target:
                self._bar = None
        # A line when the steps pass a multiple of the interval (`steps_per_execution` may
        # step over it), but not on the stretch's last step: the evaluation's line follows.
        elif (
            self._lines is not None
            and step // self.interval > previous // self.interval
            and step < self._stretch[1]
        ):
            self._lines.on_log(step, logs())
