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
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import multiprocessing
import os
import sys
import time
from collections.abc import Callable, Sequence

from keras_albert import validation
from keras_albert.finetuning.options import FinetuningOptions

LOG_NAME = "finetune.log"


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
    # The workers read their thread counts from the environment they are started with: importing
    # keras_albert there (to unpickle the task) already starts TensorFlow's runtime.
    with (
        _environment(TF_NUM_INTRAOP_THREADS=threads, TF_NUM_INTEROP_THREADS=threads),
        (
            concurrent.futures.ProcessPoolExecutor(
                max_workers=processes, mp_context=multiprocessing.get_context("spawn")
            )
        ) as pool,
    ):
        futures = {pool.submit(_finetune_logged, run): index for index, run in enumerate(runs)}
        for future in concurrent.futures.as_completed(futures):
            index = futures[future]
            try:
                summary, seconds = future.result()
            except Exception as error:
                for other in futures:
                    other.cancel()
                log = os.path.join(runs[index].output_dir, LOG_NAME)
                raise RuntimeError(
                    f"Fine-tuning run {index} (output_dir={runs[index].output_dir!r}) failed: "
                    f"{error}. Its output: {log}"
                ) from error
            summaries[index] = summary
            on_finish(index, summary, seconds)
    return summaries


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


def _finetune_logged(options: FinetuningOptions) -> tuple[dict, float]:
    """`finetune(options)` with this process's output (Python's and TensorFlow's) in the run's
    log file; returns the summary and the seconds it took."""
    from keras_albert.finetuning.driver import finetune

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
