"""What every driver does around a run, in one place: `started_run` makes the strategy (before
TensorFlow runs any op, as MultiWorkerMirroredStrategy needs), tells the chief, checks the
output directory and holds its lock for the run.

The rest of a run's lifecycle is the engine's too, and both drivers call it:
`run_directory.run_record` / `check_run_file` / `write_run_file` (the run record, one place in
the output directory and one policy for what a resume may change), `strategy.
choose_precision_policy`, `interruption.StopSignals`, `run_directory.restore_latest_intact`,
`strategy.worker_output` and `run_directory.write_summary`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import tensorflow as tf

from keras_albert.training import run_directory
from keras_albert.training.strategy import build_strategy, is_chief


@contextlib.contextmanager
def started_run(
    output_dir: str, strategy: str, tpu_address: str | None = None
) -> Iterator[tuple[tf.distribute.Strategy, bool]]:
    """`(strategy, chief)` for a run writing `output_dir`, which the chief holds (`run_lock`)
    until the block ends; `strategy` and `tpu_address` are the drivers' options of those
    names (`build_strategy`)."""
    run_directory.check_output_dir(output_dir)
    built = build_strategy(strategy, **({"tpu_address": tpu_address} if tpu_address else {}))
    chief = is_chief(built)
    with run_directory.run_lock(output_dir, hold=chief):
        yield built, chief
