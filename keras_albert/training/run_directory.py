"""A driver's output directory: made and probed before work starts, held by one run at a time
(`run_lock`), finished files written atomically (text, `.keras` models, copies,
`summary.json`), and `run.json`, the options that fix a run, checked when the run resumes.
Every path goes through `tf.io.gfile`: an output directory may be local or on any file system
TensorFlow registers (`gs://...`)."""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import json
import os
import socket
import uuid
from collections.abc import Iterator

import keras
import tensorflow as tf

from keras_albert.text.files import is_remote, write_text_atomically
from keras_albert.training.checkpoints import restore_training_checkpoint
from keras_albert.training.run_records import (  # noqa: F401  (their home; read here too)
    RUN_FILE,
    read_record,
    read_run_file,
)

LOCK_FILE = "run.lock"


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
        raise _not_writable(path, error) from None


def _not_writable(path: str, error: Exception) -> ValueError:
    detail = getattr(error, "strerror", None) or getattr(error, "message", None) or error
    return ValueError(f"`output_dir` is not a writable directory: {path!r} ({detail}).")


def atomic_copy(source: str, path: str) -> None:
    temporary = f"{path}.tmp-{uuid.uuid4().hex}"
    tf.io.gfile.copy(source, temporary, overwrite=True)
    tf.io.gfile.rename(temporary, path, overwrite=True)


def atomic_save_model(model: keras.Model, path: str) -> None:
    """`model.save(path)` through a temporary `.keras` file (Keras needs the suffix): a failed
    write (a full disk, no permission) leaves the previous `path` as it was, removes the
    partial file and says what failed."""
    temporary = f"{path[: -len('.keras')]}-tmp-{uuid.uuid4().hex}.keras"
    try:
        model.save(temporary)
        tf.io.gfile.rename(temporary, path, overwrite=True)
    except (OSError, tf.errors.OpError) as error:
        if tf.io.gfile.exists(temporary):
            tf.io.gfile.remove(temporary)
        kept = "the previous one is kept" if tf.io.gfile.exists(path) else "nothing was written"
        detail = " ".join(str(error).split())
        raise OSError(f"Could not write {path} ({detail}); {kept}.") from error


def write_summary(output_dir: str, summary: dict) -> str:
    """`summary.json` (sorted keys, atomic); returns its text."""
    text = json.dumps(summary, indent=2, sort_keys=True)
    write_text_atomically(os.path.join(output_dir, "summary.json"), text + "\n")
    return text


def run_record(options, free: tuple[str, ...]) -> dict:
    """What `run.json` records of a driver's options dataclass: every field but the `free` ones
    (those a resumed run may change: where output goes, how it is logged, on what devices), so
    that a new option fixes the run unless its driver lists it as free. A nested options
    dataclass (fine-tuning's `task_options`) is recorded flat, beside the others."""
    record = {}
    for field in dataclasses.fields(options):
        value = getattr(options, field.name)
        if field.name in free:
            continue
        if dataclasses.is_dataclass(value):
            record.update(run_record(value, free))
        else:
            record[field.name] = value
    return record


def check_run_file(
    output_dir: str, current: dict, has_checkpoint: bool, remedy: str = "the same options"
) -> None:
    """A run with checkpoints must resume with the run-defining options it started with.

    Options the recorded file does not name (it predates them) are not compared; values are
    compared as JSON records them (a tuple is a list). `remedy` ends the message: what else
    the user may do.
    """
    previous = read_run_file(output_dir)
    if previous is None or not has_checkpoint:
        return
    if details := _changes(previous, current):
        raise ValueError(
            f"{output_dir!r} holds a run with other options ({details}); resuming it with them "
            f"would change the data stream or the schedule. Use another `output_dir` or {remedy}."
        )


def check_architecture(output_dir: str, config: dict, has_checkpoint: bool) -> None:
    """A run with checkpoints must resume with the architecture its `run.json` records (the
    `AlbertConfig` fields); one line names the fields that differ."""
    previous = (read_run_file(output_dir) or {}).get("config")
    if not has_checkpoint or not isinstance(previous, dict):
        return
    if details := _changes(previous, config):
        raise ValueError(
            f"{output_dir!r} holds checkpoints of another architecture ({details}); use "
            "another `output_dir`, or the architecture the run started with."
        )


def _changes(previous: dict, current: dict) -> str:
    """ "name: old -> new" for each key of `current` that `previous` records otherwise (values
    compared as JSON records them: a tuple is a list); "" when none."""
    current = json.loads(json.dumps(current))
    return ", ".join(
        f"{key}: {previous[key]!r} -> {value!r}"
        for key, value in current.items()
        if key in previous and previous[key] != value
    )


def write_run_file(output_dir: str, current: dict) -> None:
    """Records the run-defining options, once every input check has passed."""
    text = json.dumps(current, indent=2, sort_keys=True) + "\n"
    write_text_atomically(os.path.join(output_dir, RUN_FILE), text)


def restore_latest_intact(checkpoint: tf.train.Checkpoint, checkpoints_dir: str) -> str | None:
    """Restores the newest checkpoint of `checkpoints_dir` that reads, and returns it (None:
    there is none).

    A registered checkpoint can still be unreadable: its `.index` or data file cut short by a
    copy, a full disk or a file system that lost the tail. Such a one is skipped for the one
    before it, with one printed line; when none reads, one error names them all. A checkpoint
    that reads but does not fit the model is not skipped: that is a different run.
    """
    state = tf.train.get_checkpoint_state(checkpoints_dir)
    if state is None or not state.model_checkpoint_path:
        return None
    newest_first = list(reversed(state.all_model_checkpoint_paths)) or [state.model_checkpoint_path]
    unreadable = []
    for path in newest_first:
        try:
            restore_training_checkpoint(checkpoint, path)
        # A cut `.index` raises DataLossError ("not an sstable"); a cut data file, IndexError
        # ("Read less bytes than requested").
        except (tf.errors.OpError, IndexError) as error:
            detail = " ".join(str(getattr(error, "message", error)).split())
            unreadable.append(f"{path} ({detail})")
            continue
        if unreadable:
            print(
                f"keras_albert: {unreadable[0]} is unreadable (truncated or corrupt); resuming "
                f"from the previous checkpoint {path}."
            )
        return path
    raise ValueError(
        f"No checkpoint of {checkpoints_dir} can be read (truncated or corrupt): "
        f"{'; '.join(unreadable)}. Remove them to start over, or restore the files."
    )


@contextlib.contextmanager
def run_lock(output_dir: str, hold: bool = True) -> Iterator[None]:
    """Holds `output_dir` for this process while the block runs: one run per directory.

    The lock is the file `output_dir/run.lock`, created atomically (`O_EXCL`) with this
    process's pid and host name, and removed when the block ends however it ends. A directory
    a live process holds is refused with one line (`FileExistsError`); a lock whose holder is
    dead (same host, no such pid: a run that was SIGKILLed) is taken over, and said so. A lock
    of another host cannot be checked: it is refused, naming the file to remove. The directory
    is made if needed, and removed again if the block leaves it empty (a run that failed its
    checks leaves nothing behind). `hold=False` (a worker that is not the chief) holds nothing.
    Remote paths (`gs://`) have no atomic create: they are not locked.
    """
    if not hold or is_remote(output_dir):
        yield
        return
    made = not os.path.isdir(output_dir)
    path = os.path.join(output_dir, LOCK_FILE)
    mine = f"{os.getpid()} {socket.gethostname()}\n"
    try:
        os.makedirs(output_dir, exist_ok=True)
        _take_lock(path, mine)
    except (FileExistsError, ValueError):
        raise
    except OSError as error:
        raise _not_writable(output_dir, error) from None
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            with open(path, encoding="utf-8") as file:
                if file.read() == mine:
                    os.remove(path)
        if made:
            with contextlib.suppress(OSError):
                os.rmdir(output_dir)  # only when empty


def _take_lock(path: str, mine: str) -> None:
    for _ in range(2):  # a stale lock is removed once, then created anew
        try:
            descriptor = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            holder = _read_holder(path)
            if holder is None or not _is_dead(*holder):
                break
            print(f"keras_albert: {path}: taking over the lock of pid {holder[0]} (not running)")
            with contextlib.suppress(FileNotFoundError):
                os.remove(path)
            continue
        with os.fdopen(descriptor, "w", encoding="utf-8") as file:
            file.write(mine)
        return
    holder = _read_holder(path)
    who = f"pid {holder[0]} on {holder[1]}" if holder else "an unknown process"
    raise FileExistsError(
        f"`output_dir` is held by another run ({who}, {path}): wait for it, stop it, or use "
        f"another `output_dir`; if that run is gone, remove {path}"
    )


def _read_holder(path: str) -> tuple[int, str] | None:
    try:
        with open(path, encoding="utf-8") as file:
            pid, host = file.read().split()
        return int(pid), host
    except (OSError, ValueError):
        return None


def _is_dead(pid: int, host: str) -> bool:
    """Whether the lock's holder is known not to run: only a process of this host can be
    asked."""
    if host != socket.gethostname():
        return False
    try:
        os.kill(pid, 0)
    except OSError as error:
        return error.errno == errno.ESRCH
    return False


def clear_run(output_dir: str, names: tuple[str, ...]) -> list[str]:
    """Removes the files and directories `names` of `output_dir` (a run started over);
    returns those that were there."""
    removed = []
    for name in names:
        path = os.path.join(output_dir, name)
        if tf.io.gfile.isdir(path):
            tf.io.gfile.rmtree(path)
        elif tf.io.gfile.exists(path):
            tf.io.gfile.remove(path)
        else:
            continue
        removed.append(name)
    return removed


def where_to_resume(checkpoints_dir: str) -> str:
    """Where an interrupted run stands and how to go on (the one line of a Ctrl-C or a peer
    failure, in both drivers)."""
    latest = tf.train.latest_checkpoint(checkpoints_dir)
    if latest is None:
        return f"no checkpoint in {checkpoints_dir} yet — rerun the same command to start over"
    return f"last checkpoint {latest} — rerun the same command to resume"


def stopped_at(output_dir: str, step: int, train_steps: int) -> str:
    """The line of a run stopped by a signal after checkpointing `step` (both drivers). The
    chief's path, also in a worker's line: its own copy is temporary."""
    path = os.path.join(output_dir, "checkpoints", f"ckpt-{step}")
    return (
        f"stopped after step {step} of {train_steps}; checkpoint {path} written — rerun the "
        "same command to resume"
    )
