"""Independent fine-tuning runs side by side on a CPU host, its cores split between them.

A small model does not keep several cores busy in one process: its matrix products are too
small to split well between threads, and every step pays Python and dispatch costs on one core.
Several runs at once, each in its own process with its share of the cores, get through more
steps per second than the same runs one after another with all the cores each. Measured on this
project's 2-core AVX2 host (SST-2, hidden 128, batch 32, dynamic padding, XLA): two 400-step
runs side by side, one thread each, took 126 s and 129 s; one after another with two threads,
95 s each, 190 s in all (1.5x). The runs' results are the same: thread counts change only how
work is split, and `finetune` seeds every run.

Each run is `finetune(options)` in a fresh process (`spawn`, so no TensorFlow state is shared);
its output goes to a log file (`finetune.log` in its `output_dir` by default) so that the runs'
lines do not interleave, and an error in a run is raised here with the run named. Use it on CPU
hosts: on an accelerator the runs would share the device and its memory.

SIGTERM or SIGINT sent to this process (by `timeout`, systemd or a container runtime, which
signal the main process only, or Ctrl-C) is forwarded to the running runs, which stop as a
single run does (`training.interruption`: the current steps finish, a checkpoint is written);
no other run starts, and this process returns only once its workers have ended, raising
`Interrupted` with each run's line: a rerun resumes them. A worker still running
`STOP_GRACE_SECONDS` after the first signal (stuck in a step or a save) is killed. The workers
have a process group of their own, so that a terminal's Ctrl-C (or `timeout`, which signals its
whole group) reaches them once, through this process, not twice (the second would stop them at
once, without a checkpoint).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import multiprocessing
import os
import signal
import sys
import time
from collections.abc import Callable, Sequence

from keras_albert import validation
from keras_albert.finetuning.options import FinetuningOptions
from keras_albert.training.interruption import EXIT_STATUS, Interrupted, StopSignals

LOG_NAME = "finetune.log"
# How long the runs have, after the first SIGTERM or SIGINT, to finish their steps, write their
# checkpoints and end before their processes are killed. A checkpoint of a small model takes
# seconds; Kubernetes' default grace period is 30 s, after which it kills every process anyway.
STOP_GRACE_SECONDS = 60
# The signals forwarded to the runs: those `training.interruption.StopSignals` honours.
FORWARDED_SIGNALS = (signal.SIGTERM, signal.SIGINT)
NOT_STARTED = "not started — rerun the same command to start it"


def available_cores() -> int:
    """The cores this process may run on (its affinity where the platform tells it)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def finetune_runs(
    runs: Sequence[FinetuningOptions],
    processes: int = 1,
    on_finish: Callable[[int, dict, float], None] | None = None,
) -> list[dict]:
    """`finetune` for each of `runs`, `processes` at a time; their summaries in `runs`' order.

    Args:
        runs: one `FinetuningOptions` per run; their `output_dir`s must differ.
        processes: runs at once. 1 runs them one after another in this process (its output
            printed as usual); more runs each in a fresh process with
            `available_cores() // processes` threads (at least one), its output in
            `<output_dir>/finetune.log`.
        on_finish: called as `on_finish(index, summary, seconds)` when run `index` finishes.
    """
    validation.require_int("processes", processes, 1)
    output_dirs = [os.path.abspath(run.output_dir) for run in runs]
    if len(set(output_dirs)) < len(output_dirs):
        raise ValueError(
            "`runs` must each have their own `output_dir`. "
            f"Received: output_dirs={[run.output_dir for run in runs]}"
        )
    on_finish = on_finish or (lambda index, summary, seconds: None)
    if processes == 1:
        import keras

        from keras_albert.finetuning.driver import finetune

        summaries = []
        for index, run in enumerate(runs):
            started = time.perf_counter()
            summaries.append(finetune(run))
            keras.backend.clear_session()  # the next run does not carry this one's graphs
            on_finish(index, summaries[-1], time.perf_counter() - started)
        return summaries
    threads = max(1, available_cores() // processes)
    summaries: list[dict | None] = [None] * len(runs)
    stopped: dict[int, str] = {}  # the runs stopped (or kept from starting): their lines
    context = multiprocessing.get_context("spawn")
    stopping = _Stopping(context.Event())
    # The workers read their thread counts from the environment they are started with: importing
    # keras_albert there (to unpickle the task) already starts TensorFlow's runtime.
    with (
        stopping,  # outermost: a signal while the pool waits for its workers is forwarded too
        _environment(TF_NUM_INTRAOP_THREADS=threads, TF_NUM_INTEROP_THREADS=threads),
        concurrent.futures.ProcessPoolExecutor(
            max_workers=processes,
            mp_context=context,
            initializer=_start_worker,
            initargs=(stopping.event,),
        ) as pool,
    ):
        stopping.pool = pool
        # `submit` starts the workers: born with the signals blocked, they take them only once
        # their own handlers are in place (`_start_worker`), never with Python's defaults.
        with _blocked(FORWARDED_SIGNALS):
            futures = {pool.submit(_finetune_logged, run): index for index, run in enumerate(runs)}
        pending = set(futures)
        while pending:
            # A timeout, so that the grace period is watched while the runs stop.
            done, pending = concurrent.futures.wait(
                pending, timeout=1.0, return_when=concurrent.futures.FIRST_COMPLETED
            )
            for future in done:
                index = futures[future]
                try:
                    summary, seconds = future.result()
                except concurrent.futures.CancelledError:
                    stopped[index] = NOT_STARTED
                except KeyboardInterrupt as interrupt:  # `Interrupted` after its checkpoint
                    stopped[index] = str(interrupt) or "stopped"
                    if stopping.received is None:  # a signal sent to this run's process alone:
                        # the job cannot finish; the others go on, but no run starts
                        status = getattr(interrupt, "exit_status", EXIT_STATUS[signal.SIGINT])
                        stopping.received = status - 128
                        stopping.event.set()
                except Exception as error:
                    if stopping.received is not None:  # killed, or failed while it stopped
                        stopped[index] = stopping.killed_line() or str(error)
                        continue
                    for other in futures:
                        other.cancel()
                    log = os.path.join(runs[index].output_dir, LOG_NAME)
                    raise RuntimeError(
                        f"Fine-tuning run {index} (output_dir={runs[index].output_dir!r}) "
                        f"failed: {error}. Its output: {log}"
                    ) from error
                else:
                    summaries[index] = summary
                    on_finish(index, summary, seconds)
            if stopping.event.is_set():
                for future in pending:
                    future.cancel()  # those not handed to a worker yet
            if stopping.overdue():
                stopping.kill_workers()
    if stopping.requested:
        raise stopping.ended(runs, stopped)
    return summaries


class _Stopping(StopSignals):
    """The parent's side of SIGTERM and SIGINT while the runs are under way (a context
    manager, as `StopSignals`, whose handler it replaces): a signal sets `event` (no run starts
    after it) and is forwarded to the pool's workers; the grace period starts with the first."""

    def __init__(self, event):
        super().__init__(FORWARDED_SIGNALS)
        self.event = event
        self.pool: concurrent.futures.ProcessPoolExecutor | None = None
        self.killed = False
        self._deadline: float | None = None

    def _handle(self, number, frame) -> None:
        # Every signal is forwarded: a second one stops the runs at once, as it stops a single
        # run, and this process still waits for them. Cancelling the queued runs is the main
        # loop's (the pool's locks may be held by the code this handler interrupted).
        if self.received is None:
            self.received = number
            self._deadline = time.monotonic() + STOP_GRACE_SECONDS
        self.event.set()
        for process in self._workers():
            with contextlib.suppress(ProcessLookupError):  # ended meanwhile
                os.kill(process.pid, number)

    def _workers(self) -> list:
        # `ProcessPoolExecutor` keeps its processes in `_processes` (None once shut down) and
        # offers no public way to signal them.
        return list((getattr(self.pool, "_processes", None) or {}).values())

    def overdue(self) -> bool:
        """Whether the grace period after the first signal is over (the workers not killed)."""
        return not self.killed and self._deadline is not None and time.monotonic() > self._deadline

    def kill_workers(self) -> None:
        self.killed = True
        for process in self._workers():
            process.kill()

    def killed_line(self) -> str | None:
        """A killed run's line (None when no worker was killed)."""
        if not self.killed:
            return None
        return (
            f"still running {STOP_GRACE_SECONDS} s after the signal: killed — rerun the same "
            "command to resume from its last checkpoint"
        )

    def ended(self, runs: Sequence[FinetuningOptions], stopped: dict[int, str]) -> Interrupted:
        """The exception that ends the job once its workers have ended: each stopped run's
        line; the exit status is the signal's."""
        if not stopped:
            return self.interrupted(
                f"the {len(runs)} fine-tuning runs had finished — rerun the same command to go on"
            )
        lines = "; ".join(
            f"run {index} ({runs[index].output_dir}): {stopped[index]}" for index in sorted(stopped)
        )
        return self.interrupted(
            f"{len(stopped)} of {len(runs)} fine-tuning runs stopped, their processes ended — "
            f"{lines}"
        )


@contextlib.contextmanager
def _blocked(signals: tuple[int, ...]):
    """`signals` held back from this thread inside the block (delivered when it ends); the
    processes it starts inherit the mask."""
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, signals)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


@contextlib.contextmanager
def _environment(**values):
    """`os.environ` with `values` set (as strings) inside the block, as it was after it."""
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update({name: str(value) for name, value in values.items()})
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


# In a worker: the parent's stop event (set once a signal stopped the job), and whether a run is
# under way (a signal then stops it).
_stop_event = None
_in_run = False


def _start_worker(stop_event) -> None:
    """A worker's start (the pool's initializer): its own process group (a terminal's Ctrl-C
    reaches it through the parent only), its signal handlers, then the signals the parent
    blocked while starting it."""
    global _stop_event
    _stop_event = stop_event
    os.setpgrp()
    for number in FORWARDED_SIGNALS:
        signal.signal(number, _on_signal)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, FORWARDED_SIGNALS)


def _on_signal(number, frame) -> None:
    # Inside the training loop `StopSignals`' handler takes the signal (the run checkpoints
    # and raises `Interrupted`). Elsewhere in a run there is nothing to checkpoint: it stops at
    # once, as Ctrl-C stops a single run. Between runs the worker waits for the pool's next
    # call (the parent's stop event keeps it from starting a run).
    if _in_run:
        raise KeyboardInterrupt(f"{signal.Signals(number).name}: stopped outside its training loop")


@contextlib.contextmanager
def _interruptible():
    """In a worker: a run inside the block, stopped by a signal; none once the job stops."""
    global _in_run
    _in_run = True  # before the check: a signal the parent sends after setting the event stops it
    try:
        if _stop_event is not None and _stop_event.is_set():
            raise KeyboardInterrupt(NOT_STARTED)
        yield
    finally:
        _in_run = False


def _finetune_logged(options: FinetuningOptions) -> tuple[dict, float]:
    """`finetune(options)` with this process's output (Python's and TensorFlow's) in the run's
    log file; returns the summary and the seconds it took."""
    from keras_albert.finetuning.driver import finetune

    with _interruptible():
        os.makedirs(options.output_dir, exist_ok=True)
        started = time.perf_counter()
        with open(os.path.join(options.output_dir, LOG_NAME), "a", encoding="utf-8") as log:
            with _redirected(log):
                summary = finetune(options)
    return summary, time.perf_counter() - started


@contextlib.contextmanager
def _redirected(log):
    """File descriptors 1 and 2 (so C++ logs too) and `sys.stdout`/`sys.stderr` into `log`."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    os.dup2(log.fileno(), 1)
    os.dup2(log.fileno(), 2)
    try:
        with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
            yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        log.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in saved:
            os.close(fd)
