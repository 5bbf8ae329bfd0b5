"""A driver's output directory as one object, `RunDirectory`: made and probed before work
starts, held by one run at a time (`lock`), finished files written atomically (text, `.keras`
models, copies, `summary.json`), `run.json` (the options that fix a run) checked when the run
resumes, and the resume policy (whether there is a checkpoint, restoring the newest intact one,
the one line that says where an interrupted run stands). Both drivers hold one.
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
from keras_albert.training.run_records import RUN_FILE, read_run_file

LOCK_FILE = "run.lock"
CHECKPOINTS = "checkpoints"


class RunDirectory:
    """The output directory `path` of one run (either driver's).

    directory = RunDirectory(options.output_dir)
    with directory.lock(hold=chief):
        record = RunDirectory.record(options, free=RUN_FREE_OPTIONS)
        directory.check_record(record, directory.has_checkpoint())
        directory.prepare()
        directory.write_record(record)
        directory.restore_latest(checkpoint)  # a resumed run's step, or None
        ...  # train, checkpointing into directory.checkpoints_dir
        directory.write_summary(summary)
    """

    def __init__(self, path: str):
        self.path = path
        self.checkpoints_dir = os.path.join(path, CHECKPOINTS)

    def __repr__(self) -> str:
        return f"RunDirectory({self.path!r})"

    def join(self, name: str) -> str:
        """The path of `name` in the directory."""
        return os.path.join(self.path, name)

    # === The directory and its lock ===

    def check(self) -> None:
        """Fails early (before any work) when the path is an existing file, not a directory."""
        if tf.io.gfile.exists(self.path) and not tf.io.gfile.isdir(self.path):
            raise FileExistsError(
                "`output_dir` must be a directory, not an existing file. Received: "
                f"output_dir={self.path!r}"
            )

    def prepare(self) -> None:
        """Makes the directory and checks that a file can be written there (before any long
        work)."""
        self.check()
        try:
            tf.io.gfile.makedirs(self.path)
            probe = self.join(f".write-probe-{uuid.uuid4().hex}")
            with tf.io.gfile.GFile(probe, "w") as f:
                f.write("ok")
            tf.io.gfile.remove(probe)
        except (OSError, tf.errors.OpError) as error:
            raise _not_writable(self.path, error) from None

    @contextlib.contextmanager
    def lock(self, hold: bool = True) -> Iterator[RunDirectory]:
        """Holds the directory for this process while the block runs: one run per directory.

        The lock is the file `run.lock`, created atomically (`O_EXCL`) with this process's pid
        and host name, and removed when the block ends however it ends. A directory a live
        process holds is refused with one line (`FileExistsError`); a lock whose holder is
        dead (same host, no such pid: a run that was SIGKILLed) is taken over, and said so. A
        lock of another host cannot be checked: it is refused, naming the file to remove. The
        directory is made if needed, and removed again if the block leaves it empty (a run
        that failed its checks leaves nothing behind). `hold=False` (a worker that is not the
        chief) holds nothing. Remote paths (`gs://`) have no atomic create: they are not
        locked.
        """
        if not hold or is_remote(self.path):
            yield self
            return
        made = not os.path.isdir(self.path)
        path = self.join(LOCK_FILE)
        mine = f"{os.getpid()} {socket.gethostname()}\n"
        try:
            os.makedirs(self.path, exist_ok=True)
            _take_lock(path, mine)
        except (FileExistsError, ValueError):
            raise
        except OSError as error:
            raise _not_writable(self.path, error) from None
        try:
            yield self
        finally:
            with contextlib.suppress(OSError):
                with open(path, encoding="utf-8") as file:
                    if file.read() == mine:
                        os.remove(path)
            if made:
                with contextlib.suppress(OSError):
                    os.rmdir(self.path)  # only when empty

    def clear(self, names: tuple[str, ...]) -> list[str]:
        """Removes the files and directories `names` (a run started over); returns those that
        were there."""
        removed = []
        for name in names:
            path = self.join(name)
            if tf.io.gfile.isdir(path):
                tf.io.gfile.rmtree(path)
            elif tf.io.gfile.exists(path):
                tf.io.gfile.remove(path)
            else:
                continue
            removed.append(name)
        return removed

    # === The run record (run.json) ===

    @staticmethod
    def record(options, free: tuple[str, ...]) -> dict:
        """What `run.json` records of a driver's options dataclass: every field but the `free`
        ones (those a resumed run may change: where output goes, how it is logged, on what
        devices), so that a new option fixes the run unless its driver lists it as free. A
        nested options dataclass (fine-tuning's `task_options`) is recorded flat, beside the
        others."""
        record = {}
        for field in dataclasses.fields(options):
            value = getattr(options, field.name)
            if field.name in free:
                continue
            if dataclasses.is_dataclass(value):
                record.update(RunDirectory.record(value, free))
            elif field.metadata.get("path") and isinstance(value, str) and not is_remote(value):
                # A file the run reads (its vocabulary): absolute, so that the record resolves
                # from wherever the run directory is read (an export from another directory).
                record[field.name] = os.path.abspath(value)
            else:
                record[field.name] = value
        return record

    def read_record(self) -> dict | None:
        """The options the run recorded (`run_records.read_run_file`), or None."""
        return read_run_file(self.path)

    def check_record(
        self, current: dict, has_checkpoint: bool, remedy: str = "the same options"
    ) -> None:
        """A run with checkpoints must resume with the run-defining options it started with.

        Options the recorded file does not name (it predates them) are not compared; values
        are compared as JSON records them (a tuple is a list). `remedy` ends the message: what
        else the user may do.
        """
        previous = self.read_record()
        if previous is None or not has_checkpoint:
            return
        if details := _changes(previous, current):
            raise ValueError(
                f"{self.path!r} holds a run with other options ({details}); resuming it with "
                "them would change the data stream or the schedule. Use another `output_dir` "
                f"or {remedy}."
            )

    def check_architecture(self, config: dict, has_checkpoint: bool) -> None:
        """A run with checkpoints must resume with the architecture its `run.json` records
        (the `AlbertConfig` fields); one line names the fields that differ."""
        previous = (self.read_record() or {}).get("config")
        if not has_checkpoint or not isinstance(previous, dict):
            return
        if details := _changes(previous, config):
            raise ValueError(
                f"{self.path!r} holds checkpoints of another architecture ({details}); use "
                "another `output_dir`, or the architecture the run started with."
            )

    def write_record(self, current: dict) -> None:
        """Records the run-defining options, once every input check has passed."""
        self.write_text(RUN_FILE, json.dumps(current, indent=2, sort_keys=True) + "\n")

    # === Resuming ===

    def latest_checkpoint(self) -> str | None:
        """The newest registered checkpoint of `checkpoints/`, or None."""
        return tf.train.latest_checkpoint(self.checkpoints_dir)

    def has_checkpoint(self) -> bool:
        """Whether the run has a checkpoint to resume from."""
        return self.latest_checkpoint() is not None

    def restore_latest(self, checkpoint: tf.train.Checkpoint) -> str | None:
        """Restores the newest checkpoint of `checkpoints/` that reads, and returns it (None:
        there is none).

        A registered checkpoint can still be unreadable: its `.index` or data file cut short
        by a copy, a full disk or a file system that lost the tail. Such a one is skipped for
        the one before it, with one printed line; when none reads, one error names them all. A
        checkpoint that reads but does not fit the model is not skipped: that is a different
        run.
        """
        state = tf.train.get_checkpoint_state(self.checkpoints_dir)
        if state is None or not state.model_checkpoint_path:
            return None
        newest_first = list(reversed(state.all_model_checkpoint_paths)) or [
            state.model_checkpoint_path
        ]
        unreadable = []
        for path in newest_first:
            try:
                restore_training_checkpoint(checkpoint, path)
            # A cut `.index` raises DataLossError ("not an sstable"); a cut data file,
            # IndexError ("Read less bytes than requested").
            except (tf.errors.OpError, IndexError) as error:
                detail = " ".join(str(getattr(error, "message", error)).split())
                unreadable.append(f"{path} ({detail})")
                continue
            if unreadable:
                print(
                    f"keras_albert: {unreadable[0]} is unreadable (truncated or corrupt); "
                    f"resuming from the previous checkpoint {path}."
                )
            return path
        raise ValueError(
            f"No checkpoint of {self.checkpoints_dir} can be read (truncated or corrupt): "
            f"{'; '.join(unreadable)}. Remove them to start over, or restore the files."
        )

    def where_to_resume(self) -> str:
        """Where an interrupted run stands and how to go on (the one line of a Ctrl-C or a
        peer failure, in both drivers)."""
        latest = self.latest_checkpoint()
        if latest is None:
            return (
                f"no checkpoint in {self.checkpoints_dir} yet — rerun the same command to "
                "start over"
            )
        return f"last checkpoint {latest} — rerun the same command to resume"

    def stopped_at(self, step: int, train_steps: int) -> str:
        """The line of a run stopped by a signal after checkpointing `step` (both drivers).
        The chief's path, also in a worker's line: its own copy is temporary."""
        path = os.path.join(self.checkpoints_dir, f"ckpt-{step}")
        return (
            f"stopped after step {step} of {train_steps}; checkpoint {path} written — rerun "
            "the same command to resume"
        )

    # === Finished files, written atomically ===

    def write_text(self, name: str, text: str) -> None:
        """`name` holds `text`, written whole or not at all."""
        write_text_atomically(self.join(name), text)

    def write_summary(self, summary: dict) -> str:
        """`summary.json` (sorted keys, atomic); returns its text."""
        text = json.dumps(summary, indent=2, sort_keys=True)
        self.write_text("summary.json", text + "\n")
        return text

    def copy_in(self, source: str, name: str) -> None:
        """Copies the file `source` to `name`, written whole or not at all."""
        path = self.join(name)
        temporary = f"{path}.tmp-{uuid.uuid4().hex}"
        tf.io.gfile.copy(source, temporary, overwrite=True)
        tf.io.gfile.rename(temporary, path, overwrite=True)

    def save_model(self, model: keras.Model, name: str) -> str:
        """`model.save` to `name` through a temporary `.keras` file (Keras needs the suffix):
        a failed write (a full disk, no permission) leaves the previous file as it was,
        removes the partial one and says what failed. Returns the path."""
        path = self.join(name)
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
        return path


def _not_writable(path: str, error: Exception) -> ValueError:
    detail = getattr(error, "strerror", None) or getattr(error, "message", None) or error
    return ValueError(f"`output_dir` is not a writable directory: {path!r} ({detail}).")


def _changes(previous: dict, current: dict) -> str:
    """ "name: old -> new" for each key of `current` that `previous` records otherwise (values
    compared as JSON records them: a tuple is a list); "" when none."""
    current = json.loads(json.dumps(current))
    return ", ".join(
        f"{key}: {previous[key]!r} -> {value!r}"
        for key, value in current.items()
        if key in previous and not _same(previous[key], value)
    )


def _same(recorded, value) -> bool:
    """Whether a recorded option is `value`: equal, or a path an older run recorded relative to
    where it started (resumed from there) that is now recorded absolute."""
    if recorded == value:
        return True
    return (
        isinstance(recorded, str)
        and isinstance(value, str)
        and os.path.isabs(value)
        and not os.path.isabs(recorded)
        and not is_remote(recorded)
        and os.path.abspath(recorded) == value
    )


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
