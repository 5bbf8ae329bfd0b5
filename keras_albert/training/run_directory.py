"""A driver's output directory: made and probed before work starts, finished files written
atomically (text, `.keras` models, copies, `summary.json`), and `run.json`, the options that fix
a pretraining run, checked when the run resumes. Every path goes through `tf.io.gfile`: an
output directory may be local or on any file system TensorFlow registers (`gs://...`)."""

from __future__ import annotations

import json
import os
import uuid

import keras
import tensorflow as tf

from keras_albert.text.files import write_text_atomically

RUN_FILE = "run.json"
# Names an earlier run.json used → today's (so runs started before the renames resume).
_RENAMED_RUN_KEYS = {"total_steps": "train_steps", "sentencepiece_model": "vocabulary"}


def check_output_dir(path: str) -> None:
    """Fails early (before any work) when `path` is an existing file, not a directory."""
    if tf.io.gfile.exists(path) and not tf.io.gfile.isdir(path):
        raise FileExistsError(
            f"`output_dir` must be a directory, not an existing file. Received: output_dir={path!r}"
        )


def prepare_output_dir(path: str) -> None:
    """Makes `path` and checks that a file can be written there (before any long work)."""
    check_output_dir(path)
    try:
        tf.io.gfile.makedirs(path)
        probe = os.path.join(path, f".write-probe-{uuid.uuid4().hex}")
        with tf.io.gfile.GFile(probe, "w") as f:
            f.write("ok")
        tf.io.gfile.remove(probe)
    except (OSError, tf.errors.OpError) as error:
        detail = getattr(error, "strerror", None) or getattr(error, "message", None) or error
        raise ValueError(
            f"`output_dir` is not a writable directory: {path!r} ({detail})."
        ) from None


def atomic_copy(source: str, path: str) -> None:
    temporary = f"{path}.tmp-{uuid.uuid4().hex}"
    tf.io.gfile.copy(source, temporary, overwrite=True)
    tf.io.gfile.rename(temporary, path, overwrite=True)


def atomic_save_model(model: keras.Model, path: str) -> None:
    """`model.save(path)` through a temporary `.keras` file (Keras needs the suffix)."""
    temporary = f"{path[: -len('.keras')]}-tmp-{uuid.uuid4().hex}.keras"
    model.save(temporary)
    tf.io.gfile.rename(temporary, path, overwrite=True)


def write_summary(output_dir: str, summary: dict) -> str:
    """`summary.json` (sorted keys, atomic); returns its text."""
    text = json.dumps(summary, indent=2, sort_keys=True)
    write_text_atomically(os.path.join(output_dir, "summary.json"), text + "\n")
    return text


def read_run_file(directory: str) -> dict | None:
    """The options recorded in `directory/run.json` under today's names, or None."""
    path = os.path.join(directory, RUN_FILE)
    if not tf.io.gfile.exists(path) or tf.io.gfile.isdir(path):
        return None
    with tf.io.gfile.GFile(path, "r") as f:
        recorded = json.load(f)
    return {_RENAMED_RUN_KEYS.get(key, key): value for key, value in recorded.items()}


def check_run_file(output_dir: str, current: dict, has_checkpoint: bool) -> None:
    """A run with checkpoints must resume with the run-defining options it started with.

    Options the recorded file does not name (it predates them) are not compared.
    """
    previous = read_run_file(output_dir)
    if previous is None or not has_checkpoint:
        return
    changed = {
        key: (previous[key], value)
        for key, value in current.items()
        if key in previous and previous[key] != value
    }
    if changed:
        details = ", ".join(f"{k}: {old!r} -> {new!r}" for k, (old, new) in changed.items())
        raise ValueError(
            f"{output_dir!r} holds a run with other options ({details}); resuming it with them "
            "would change the data stream or the schedule. Use another `output_dir` or the "
            "same options."
        )


def write_run_file(output_dir: str, current: dict) -> None:
    """Records the run-defining options, once every input check has passed."""
    text = json.dumps(current, indent=2, sort_keys=True) + "\n"
    write_text_atomically(os.path.join(output_dir, RUN_FILE), text)
