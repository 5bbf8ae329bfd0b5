"""Logs of a training run: `history.csv` (one row per logged step, also after a resume),
TensorBoard scalars over the optimizer step, and Keras's log names → ours.

The losses logged per pretraining task are the exact weighted means of the `*_mean_loss`
metrics (the original's eval metrics: `tf.metrics.mean(loss, weights)`), not Keras's per-output
loss trackers, which average batches equally whatever their size; those are dropped.
"""

from __future__ import annotations

import csv
import io
import os

import numpy as np
import tensorflow as tf

from keras_albert.text.files import write_text_atomically

# `compile_pretrainer`'s metric names (output name + metric name) → ours.
_LOG_NAMES = {
    "mlm_logits_mlm_mean_loss": "mlm_loss",
    "sop_logits_sop_mean_loss": "sop_loss",
    "mlm_logits_mlm_accuracy": "mlm_accuracy",
    "sop_logits_sop_accuracy": "sop_accuracy",
}
_DROPPED_LOGS = ("mlm_logits_loss", "sop_logits_loss")


def with_our_names(logs: dict) -> dict:
    """Keras's logs (`val_` ones too) under our names, without Keras's per-output losses."""
    renamed = {}
    for key, value in logs.items():
        prefix = "val_" if key.startswith("val_") else ""
        keras_name = key.removeprefix(prefix)
        if keras_name not in _DROPPED_LOGS:
            renamed[prefix + _LOG_NAMES.get(keras_name, keras_name)] = value
    return renamed


def as_floats(logs: dict) -> dict:
    """`with_our_names`, each value a Python float (for JSON)."""
    return {key: float(np.asarray(value)) for key, value in with_our_names(logs).items()}


class HistoryCsv:
    """`history.csv`: one row per logged step; a loop callback (`on_train_begin`, `on_log`).

    When a run resumes at step `s`, the rows past `s` (logged after the checkpoint it resumes
    from, before the run stopped) are dropped, and said so: those steps are trained again and
    logged anew, so the file holds one row per step. The columns are `columns` then any new
    log names; a file written with other columns keeps them (missing values are empty).
    """

    def __init__(self, path: str, columns: tuple[str, ...] = ("step",)):
        self.path = path
        self.columns = list(columns)

    def _read(self) -> tuple[list[str], list[dict]]:
        if not tf.io.gfile.exists(self.path):
            return [], []
        with tf.io.gfile.GFile(self.path, "r") as f:
            reader = csv.DictReader(io.StringIO(f.read()))
            return list(reader.fieldnames or []), list(reader)

    def _write(self, columns: list[str], rows: list[dict]) -> None:
        text = io.StringIO()
        writer = csv.DictWriter(text, columns, restval="", lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
        write_text_atomically(self.path, text.getvalue())

    def on_train_begin(self, step: int) -> None:
        columns, rows = self._read()
        kept = [row for row in rows if _step_of(row) <= step]
        if len(kept) < len(rows):
            print(
                f"keras_albert: {self.path}: {len(rows) - len(kept)} row(s) past step {step} "
                "(logged after the last checkpoint) dropped: those steps run again"
            )
        self.columns = columns + [c for c in self.columns if c not in columns]
        self._write(self.columns, kept)

    def on_log(self, step: int, logs: dict) -> None:
        """Adds a row: the file is rewritten whole (atomically; object stores such as `gs://`
        cannot append), a few hundred rows at most per run."""
        columns, rows = self._read()
        self.columns = (columns or self.columns) + [
            key for key in logs if key not in (columns or self.columns)
        ]
        row = {key: _cell(value) for key, value in logs.items()}
        self._write(self.columns, [*rows, row])


def _step_of(row: dict) -> int:
    try:
        return int(float(row.get("step") or 0))
    except ValueError:
        return 0


def _cell(value):
    return value if isinstance(value, (int, str)) else float(value)


class TensorBoardLogs:
    """TensorBoard scalars with the optimizer step as x-axis: `logs/train` gets the train logs,
    `logs/validation` the `val_` ones (without the prefix); a loop callback (`on_log`)."""

    def __init__(self, log_dir: str):
        self.log_dir = log_dir
        self._writers: dict[str, tf.summary.SummaryWriter] = {}

    def _writer(self, name: str) -> tf.summary.SummaryWriter:
        if name not in self._writers:
            self._writers[name] = tf.summary.create_file_writer(os.path.join(self.log_dir, name))
        return self._writers[name]

    def on_log(self, step: int, logs: dict) -> None:
        for key, value in logs.items():
            if key in ("step", "epoch") or value is None:
                continue
            split, name = ("validation", key[4:]) if key.startswith("val_") else ("train", key)
            with self._writer(split).as_default(step=step):
                tf.summary.scalar(name, float(value))
        for writer in self._writers.values():
            writer.flush()

    def on_train_end(self, step: int) -> None:
        for writer in self._writers.values():
            writer.close()
