"""Progress over optimizer steps: one line per stretch of steps with the rate and the time left.

    step 150/2000 · 3.1 steps/s · 10m 12s left · loss 4.812 · mlm_accuracy 0.153

The rate is `StepRate`'s: over the steps of this run since its first line (the first stretch
holds the compilation, so its own rate is reported only until a second line exists).
"""

from __future__ import annotations

import sys
import time
from typing import TextIO


def format_duration(seconds: float) -> str:
    """`3h 05m`, `10m 12s`, `42s`."""
    seconds = max(int(round(seconds)), 0)
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    if hours:
        return f"{hours}h {minutes:02d}m"
    if minutes:
        return f"{minutes}m {seconds:02d}s"
    return f"{seconds}s"


class StepRate:
    """Steps per second of a run: the one definition of "steps/s" the progress lines, the
    evaluation lines and the summaries print. Measured in wall time (evaluations and
    checkpoints included) from the first `mark` after `begin`: the first stretch holds the
    compilation, so its own rate (from `begin`) is given only until a second mark exists."""

    def __init__(self, clock=time.perf_counter):
        self.clock = clock
        self._begin: tuple[int, float] | None = None
        self._first_mark: tuple[int, float] | None = None

    def begin(self, step: int) -> None:
        self._begin = (int(step), self.clock())
        self._first_mark = None

    @property
    def started(self) -> bool:
        """Whether `begin` (or a first `mark`, which starts the count) has been called."""
        return self._begin is not None

    def mark(self, step: int) -> float | None:
        """The rate at `step` (None without a step since the start); `step` becomes the start
        if it is the first mark."""
        now = self.clock()
        if self._begin is None:
            self._begin = (int(step), now)
            return None
        start = self._first_mark if self._first_mark is not None else self._begin
        rate = None
        if step > start[0] and now > start[1]:
            rate = (step - start[0]) / (now - start[1])
        if self._first_mark is None:
            self._first_mark = (int(step), now)
        return rate


class StepProgress:
    """Prints a progress line for a step count; a loop callback (`on_train_begin`, `on_log`).

    Args:
        total_steps: the step the run ends at.
        names: the logs to print after the rate, in this order (absent ones are skipped).
        stream: where to print; defaults to `sys.stdout`.
        clock: a monotonic clock in seconds (tests pass their own).

    Example:

    >>> import io
    >>> from keras_albert.training.progress import StepProgress
    >>> out = io.StringIO()
    >>> ticks = iter([0.0, 10.0, 20.0])
    >>> progress = StepProgress(100, names=("loss",), stream=out, clock=lambda: next(ticks))
    >>> progress.on_train_begin(0)
    >>> progress.on_log(10, {"loss": 2.5})
    >>> progress.on_log(20, {"loss": 2.25})
    >>> print(out.getvalue().strip().splitlines()[-1])
    step 20/100 · 1 steps/s · 1m 20s left · loss 2.250
    """

    def __init__(
        self,
        total_steps: int,
        names: tuple[str, ...] = ("loss",),
        stream: TextIO | None = None,
        clock=time.perf_counter,
    ):
        self.total_steps = int(total_steps)
        self.names = tuple(names)
        self.stream = stream
        self.rate = StepRate(clock)
        self.last_line = ""

    def on_train_begin(self, step: int) -> None:
        self.rate.begin(step)

    def on_log(self, step: int, logs: dict) -> None:
        started = self.rate.started
        rate = self.rate.mark(step)
        if not started:  # the first call starts the count
            return
        parts = [f"step {step}/{self.total_steps}"]
        if rate:
            parts.append(f"{rate:.3g} steps/s")
            left = self.total_steps - step
            parts.append(f"{format_duration(left / rate)} left" if left else "done")
        for name in self.names:
            if name in logs and logs[name] is not None:
                parts.append(f"{name} {float(logs[name]):.3f}")
        self.last_line = " · ".join(parts)
        print(self.last_line, file=self.stream or sys.stdout, flush=True)
