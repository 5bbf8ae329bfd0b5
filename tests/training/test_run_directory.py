"""The run directory: the write probe, atomic writes, run.json under old and new names."""

import json
import os
import socket
import subprocess
import sys

import pytest

from keras_albert.text.files import write_text_atomically
from keras_albert.training.run_directory import LOCK_FILE, RunDirectory


def test_run_file_is_read_under_todays_names_and_checked(tmp_path):
    current = {"train_steps": 10, "vocabulary": "a.model", "batch_size": 8, "seed": 1}
    directory = RunDirectory(str(tmp_path))
    directory.write_record(current)
    assert json.loads((tmp_path / "run.json").read_text()) == current
    assert directory.read_record() == current
    # Nothing to resume (no checkpoint): nothing is compared.
    directory.check_record({**current, "batch_size": 16}, False)
    with pytest.raises(ValueError, match="batch_size: 8 -> 16"):
        directory.check_record({**current, "batch_size": 16}, True)

    # A run.json of before the renames, without `seed`: old keys map to new ones, and an
    # option the file does not record is not compared (`sentencepiece_model`: the name of
    # `vocabulary` before WordPiece vocabularies).
    old = {"total_steps": 10, "sentencepiece_model": "a.model", "batch_size": 8}
    (tmp_path / "run.json").write_text(json.dumps(old))
    assert directory.read_record() == {
        "train_steps": 10, "vocabulary": "a.model", "batch_size": 8,
    }  # fmt: skip
    directory.check_record({**current, "seed": 99}, True)
    with pytest.raises(ValueError, match="vocabulary: 'a.model' -> 'b.model'"):
        directory.check_record({**current, "vocabulary": "b.model"}, True)
    assert RunDirectory(str(tmp_path / "elsewhere")).read_record() is None


def test_the_vocabulary_is_recorded_absolute_and_an_older_relative_record_still_resumes(
    tmp_path, monkeypatch
):
    from keras_albert.convert.vocabulary import find_vocabulary
    from keras_albert.pretraining.options import PretrainingOptions

    started, elsewhere = tmp_path / "started_here", tmp_path / "elsewhere"
    (started / "tokenizer").mkdir(parents=True)
    elsewhere.mkdir()
    (started / "tokenizer" / "sp.model").write_bytes(b"not read here")
    monkeypatch.chdir(started)
    options = PretrainingOptions(
        train_data="records", output_dir="run", train_steps=10, batch_size=8,
        preset="albert_base_v2",
        vocabulary="tokenizer/sp.model",
    )  # fmt: skip
    record = RunDirectory.record(options, free=("output_dir",))
    absolute = str(started / "tokenizer" / "sp.model")
    assert record["vocabulary"] == absolute and record["train_data"] == "records"
    directory = RunDirectory(str(started / "run"))
    directory.write_record(record)
    # An export started in another directory finds the vocabulary the run recorded (beside
    # a model file the run wrote; the format is told by its name).
    (started / "run" / "final.keras").write_bytes(b"")
    monkeypatch.chdir(elsewhere)
    assert find_vocabulary(str(started / "run" / "final.keras")) == absolute

    # A run.json written before (the relative path) resumes from where it started; another
    # file is still another option.
    monkeypatch.chdir(started)
    (started / "run" / "run.json").write_text(
        json.dumps({**record, "vocabulary": "tokenizer/sp.model"})
    )
    directory.check_record(record, True)
    with pytest.raises(ValueError, match="vocabulary: 'tokenizer/sp.model' -> '/"):
        directory.check_record({**record, "vocabulary": str(started / "other.model")}, True)


def test_atomic_writes_leave_no_temporary_file(tmp_path):
    path = tmp_path / "a.txt"
    directory = RunDirectory(str(tmp_path))
    write_text_atomically(str(path), "one\n")
    directory.write_text("a.txt", "two\n")
    assert path.read_text() == "two\n"
    directory.copy_in(str(path), "b.txt")
    text = directory.write_summary({"b": 1, "a": [2]})
    assert json.loads((tmp_path / "summary.json").read_text()) == {"a": [2], "b": 1}
    assert text.index('"a"') < text.index('"b"')
    assert sorted(os.listdir(tmp_path)) == ["a.txt", "b.txt", "summary.json"]
    assert (tmp_path / "b.txt").read_text() == "two\n"


def test_output_dir_probe(tmp_path):
    RunDirectory(str(tmp_path / "new" / "run")).prepare()
    assert os.listdir(tmp_path / "new" / "run") == []
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    with pytest.raises(ValueError, match="`output_dir` is not a writable directory"):
        RunDirectory(str(blocker / "run")).prepare()


def test_an_unreadable_latest_checkpoint_falls_back_to_the_one_before(tmp_path, capsys):
    import tensorflow as tf

    value = tf.Variable(0.0)
    checkpoint = tf.train.Checkpoint(value=value)
    directory = RunDirectory(str(tmp_path))
    manager = tf.train.CheckpointManager(checkpoint, directory.checkpoints_dir, max_to_keep=3)
    for step in (1, 2, 3):
        value.assign(float(step))
        manager.save(checkpoint_number=step)
    checkpoints = tmp_path / "checkpoints"
    index = checkpoints / "ckpt-3.index"
    index.write_bytes(index.read_bytes()[:20])  # as a copy cut short leaves it
    value.assign(-1.0)
    restored = directory.restore_latest(checkpoint)
    assert restored == str(checkpoints / "ckpt-2") and float(value.numpy()) == 2.0
    line = capsys.readouterr().out.strip()
    assert line.startswith(f"keras_albert: {checkpoints / 'ckpt-3'} (")
    assert line.endswith(f"is unreadable (truncated or corrupt); resuming from the previous "
                         f"checkpoint {checkpoints / 'ckpt-2'}.")  # fmt: skip

    # None readable: one error naming each; nothing there: None.
    for step in (1, 2):
        data = checkpoints / f"ckpt-{step}.data-00000-of-00001"
        data.write_bytes(data.read_bytes()[:4])
    with pytest.raises(ValueError, match="No checkpoint of .* can be read") as error:
        directory.restore_latest(checkpoint)
    assert all(f"ckpt-{step} (" in str(error.value) for step in (1, 2, 3))
    assert RunDirectory(str(tmp_path / "none")).restore_latest(checkpoint) is None


def test_run_lock_refuses_a_live_or_foreign_holder_takes_over_a_dead_one(tmp_path, capsys):
    output_dir = tmp_path / "run"
    lock = output_dir / LOCK_FILE
    directory = RunDirectory(str(output_dir))
    with directory.lock():
        assert lock.read_text() == f"{os.getpid()} {socket.gethostname()}\n"
        with pytest.raises(FileExistsError, match=rf"held by another run \(pid {os.getpid()} "):
            with RunDirectory(str(output_dir)).lock():
                pass
        assert lock.exists()  # the refused one leaves the holder's lock alone
    assert not output_dir.exists()  # made for the lock and left empty: removed

    output_dir.mkdir()
    lock.write_text("12345 another-host\n")  # another host's process cannot be asked
    with pytest.raises(FileExistsError, match=r"pid 12345 on another-host.*remove .*run.lock"):
        with directory.lock():
            pass
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    lock.write_text(f"{dead.pid} {socket.gethostname()}\n")
    with directory.lock():
        (output_dir / "kept.txt").write_text("x")
    assert f"taking over the lock of pid {dead.pid} (not running)" in capsys.readouterr().out
    assert not lock.exists() and (output_dir / "kept.txt").exists()
    with directory.lock(hold=False):  # a worker that is not the chief
        assert not lock.exists()


def test_clear_run_removes_only_the_named_outputs(tmp_path):
    (tmp_path / "checkpoints").mkdir()
    (tmp_path / "checkpoints" / "ckpt-1.index").write_text("x")
    (tmp_path / "history.csv").write_text("step\n1\n")
    (tmp_path / "notes.txt").write_text("mine")
    removed = RunDirectory(str(tmp_path)).clear(("checkpoints", "history.csv", "logs"))
    assert removed == ["checkpoints", "history.csv"]
    assert sorted(os.listdir(tmp_path)) == ["notes.txt"]


def test_run_file_of_todays_options_keeps_an_old_name_and_compares_tuples_as_lists(tmp_path):
    # A record holding both names is of today's options: `vocabulary` is a field of its own.
    current = {"vocabulary": "vocab.txt", "sentencepiece_model": None, "labels": ("a", "b")}
    directory = RunDirectory(str(tmp_path))
    directory.write_record(current)
    assert directory.read_record() == {**current, "labels": ["a", "b"]}
    directory.check_record(current, True)
    with pytest.raises(ValueError, match=r"labels: \['a', 'b'\] -> \['b', 'a'\].*or `force`"):
        directory.check_record({**current, "labels": ("b", "a")}, True, remedy="`force`")


def test_a_failed_write_leaves_the_previous_artifacts_intact(tmp_path, monkeypatch):
    # A full disk in the middle of a write: best.keras, summary.json and the served versions
    # written before are byte-identical afterwards, no partial file is left, and the error
    # says what failed.
    import errno

    import keras

    from keras_albert.export.serving_layout import write_version
    from tests.helpers import tiny_backbone

    model = tiny_backbone()
    directory = RunDirectory(str(tmp_path))
    best = directory.save_model(model, "best.keras")
    assert best == str(tmp_path / "best.keras")
    summary = directory.write_summary({"step": 1})
    version_1 = write_version(tmp_path / "served", lambda d: open(f"{d}/model", "w").write("1"))
    before = {
        path: open(path, "rb").read()
        for path in (best, str(tmp_path / "summary.json"), f"{version_1}/model")
    }

    def disk_full(self, filepath, *args, **kwargs):
        with open(filepath, "wb") as file:
            file.write(b"PK\x03\x04 half a zip")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(keras.Model, "save", disk_full)
    kept = r"Could not write .*best\.keras \(.*No space left on device\); the previous one is kept"
    with pytest.raises(OSError, match=kept):
        directory.save_model(model, "best.keras")

    def half_written(directory):
        open(f"{directory}/model", "w").write("partial")
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(OSError, match="No space left on device"):
        write_version(tmp_path / "served", half_written)

    def rename_fails(*args, **kwargs):  # the new text is written whole, the rename fails
        raise OSError(errno.ENOSPC, "No space left on device")

    # A local path is renamed by os.replace (a remote one by tf.io.gfile.rename).
    monkeypatch.setattr(os, "replace", rename_fails)
    with pytest.raises(OSError, match="No space left on device"):
        directory.write_summary({"step": 2})
    monkeypatch.undo()
    for path, content in before.items():
        assert open(path, "rb").read() == content, path
    assert sorted(os.listdir(tmp_path)) == ["best.keras", "served", "summary.json"]
    assert os.listdir(tmp_path / "served") == ["1"]
    assert json.loads(summary) == {"step": 1}
