"""What every driver does around a run, in one place: `started_run` makes the strategy (before
TensorFlow runs any op, as MultiWorkerMirroredStrategy needs), tells the chief, checks the
output directory and holds its lock for the run.

The rest of a run's lifecycle is the engine's too, and both drivers call it: the output
directory's `run_directory.RunDirectory` (the run record, one place in the output directory and
one policy for what a resume may change; restoring the newest intact checkpoint; the summary),
`strategy.choose_precision_policy`, `phase.TrainingPhase` (the steps, stop signals and
checkpoints) and `strategy.worker_output`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import tensorflow as tf

from keras_albert.training.run_directory import RunDirectory
from keras_albert.training.strategy import build_strategy, is_chief


@contextlib.contextmanager
def started_run(
    output_dir: str, strategy: str, tpu_address: str | None = None
) -> Iterator[tuple[tf.distribute.Strategy, bool, RunDirectory]]:
    """`(strategy, chief, directory)` for a run writing `output_dir` (`directory`), which the
    chief holds (`RunDirectory.lock`) until the block ends; `strategy` and `tpu_address` are
    the drivers' options of those names (`build_strategy`)."""
    directory = RunDirectory(output_dir)
    directory.check()
    built = build_strategy(strategy, **({"tpu_address": tpu_address} if tpu_address else {}))
    chief = is_chief(built)
    with directory.lock(hold=chief):
        yield built, chief, directory
