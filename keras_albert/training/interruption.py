"""Stopping a training loop cleanly on SIGTERM or SIGINT: finish the step, checkpoint, exit.

Schedulers send SIGTERM before they kill (Kubernetes at `terminationGracePeriodSeconds`
before SIGKILL, default 30 s; SLURM at the time limit, or `--signal=TERM@seconds` before it;
GCE/Spot VMs about 30 s before preemption). The handler only sets a flag; the drivers' loops
read it between compiled calls (`steps_per_execution` steps), save a checkpoint at the current
step and raise `Interrupted`, which `keras_albert.cli.run_tool` turns into ONE line and the
exit status a shell reports for the signal: 143 for SIGTERM, 130 for SIGINT (128 + the signal
number). A second signal while the first is being honoured stops at once (`KeyboardInterrupt`,
no checkpoint): the way out when the step or the save hangs.

Under `MultiWorkerMirroredStrategy` a signal may reach one worker only, but a checkpoint is a
collective save every worker must join at the same step: `StopSignals.agreed(strategy)` adds
up the workers' flags (one small all-reduce per check, only when there are several workers),
so that every worker stops after the same step.

    with StopSignals() as stop:
        while step < train_steps:
            ...  # one compiled call
            if stop.agreed(strategy):
                manager.save(checkpoint_number=step)
                raise stop.interrupted(f"checkpoint ckpt-{step} written; rerun to resume")
"""

from __future__ import annotations

import signal
import threading

import tensorflow as tf

from keras_albert.training.strategy import num_workers

# The exit status of a run stopped by each signal: 128 + its number, as shells report it.
EXIT_STATUS = {signal.SIGTERM: 128 + signal.SIGTERM, signal.SIGINT: 128 + signal.SIGINT}


class Interrupted(KeyboardInterrupt):
    """A run stopped by a signal after saving a checkpoint; the message says how to resume.

    A `KeyboardInterrupt` (not an `Exception`): nothing on the way out may swallow it;
    `run_tool` prints it as one line and exits with `exit_status`.
    """

    def __init__(self, message: str, exit_status: int):
        super().__init__(message)
        self.exit_status = exit_status

    def __reduce__(self):
        # A run in a worker process (`finetuning.parallel_runs`) sends it back pickled; the
        # default rebuilds it from `args` alone, without `exit_status`.
        return type(self), (str(self), self.exit_status)


class StopSignals:
    """Turns SIGTERM and SIGINT into a flag for the block it guards (a context manager).

    Outside the main thread (signal handlers cannot be set there) it sets none and never
    reports a signal. The previous handlers come back when the block ends.
    """

    def __init__(self, signals: tuple[int, ...] = (signal.SIGTERM, signal.SIGINT)):
        self.signals = signals
        self.received: int | None = None
        self._previous: dict = {}
        self._agree = None

    def __enter__(self) -> StopSignals:
        if threading.current_thread() is threading.main_thread():
            for number in self.signals:
                self._previous[number] = signal.signal(number, self._handle)
        return self

    def __exit__(self, *exc_info) -> None:
        for number, handler in self._previous.items():
            signal.signal(number, handler)
        self._previous.clear()

    def _handle(self, number, frame) -> None:
        # No work here: the loop checks the flag between steps. A second signal is the user
        # (or the scheduler) insisting: stop now.
        if self.received is not None:
            raise KeyboardInterrupt(f"{signal.Signals(number).name} again: stopped at once")
        self.received = number

    @property
    def requested(self) -> bool:
        """Whether this process got a signal."""
        return self.received is not None

    def agreed(self, strategy: tf.distribute.Strategy) -> bool:
        """Whether any worker of `strategy`'s cluster got a signal (this process alone, when
        there is one worker). Every worker must call it at the same steps."""
        if num_workers(strategy) == 1:
            return self.requested
        if self._agree is None:

            @tf.function
            def agree(flag):
                # Each replica contributes its worker's flag; the sum is > 0 when any got one.
                values = strategy.run(lambda: tf.identity(flag))
                return strategy.reduce(tf.distribute.ReduceOp.SUM, values, axis=None)

            self._agree = agree
        total = self._agree(tf.constant(1.0 if self.requested else 0.0))
        if float(total) > 0 and self.received is None:
            self.received = signal.SIGTERM  # a peer's signal: stop as it does
        return float(total) > 0

    def interrupted(self, message: str) -> Interrupted:
        """The exception to raise once the checkpoint is written: `message` says where the run
        stands and how to resume; the exit status is the signal's."""
        number = self.received or signal.SIGTERM
        name = signal.Signals(number).name
        return Interrupted(f"{name}: {message}", EXIT_STATUS.get(number, 128 + number))
