"""The run directory: the write probe, atomic writes, run.json under old and new names."""

import json
import os
import socket
import subprocess
import sys

import pytest

from keras_albert.training import run_directory


def test_run_file_is_read_under_todays_names_and_checked(tmp_path):
    current = {"train_steps": 10, "vocabulary": "a.model", "batch_size": 8, "seed": 1}
    run_directory.write_run_file(str(tmp_path), current)
    assert json.loads((tmp_path / "run.json").read_text()) == current
    assert run_directory.read_run_file(str(tmp_path)) == current
    # Nothing to resume (no checkpoint): nothing is compared.
    run_directory.check_run_file(str(tmp_path), {**current, "batch_size": 16}, False)
    with pytest.raises(ValueError, match="batch_size: 8 -> 16"):
        run_directory.check_run_file(str(tmp_path), {**current, "batch_size": 16}, True)

    # A run.json of before the renames, without `seed`: old keys map to new ones, and an
    # option the file does not record is not compared (`sentencepiece_model`: the name of
    # `vocabulary` before WordPiece vocabularies).
    old = {"total_steps": 10, "sentencepiece_model": "a.model", "batch_size": 8}
    (tmp_path / "run.json").write_text(json.dumps(old))
    assert run_directory.read_run_file(str(tmp_path)) == {
        "train_steps": 10, "vocabulary": "a.model", "batch_size": 8,
    }  # fmt: skip
    run_directory.check_run_file(str(tmp_path), {**current, "seed": 99}, True)
    with pytest.raises(ValueError, match="vocabulary: 'a.model' -> 'b.model'"):
        run_directory.check_run_file(str(tmp_path), {**current, "vocabulary": "b.model"}, True)
    assert run_directory.read_run_file(str(tmp_path / "elsewhere")) is None


def test_atomic_writes_leave_no_temporary_file(tmp_path):
    path = tmp_path / "a.txt"
    run_directory.write_text_atomically(str(path), "one\n")
    run_directory.write_text_atomically(str(path), "two\n")
    assert path.read_text() == "two\n"
    run_directory.atomic_copy(str(path), str(tmp_path / "b.txt"))
    text = run_directory.write_summary(str(tmp_path), {"b": 1, "a": [2]})
    assert json.loads((tmp_path / "summary.json").read_text()) == {"a": [2], "b": 1}
    assert text.index('"a"') < text.index('"b"')
    assert sorted(os.listdir(tmp_path)) == ["a.txt", "b.txt", "summary.json"]
    assert (tmp_path / "b.txt").read_text() == "two\n"


def test_output_dir_probe(tmp_path):
    run_directory.prepare_output_dir(str(tmp_path / "new" / "run"))
    assert os.listdir(tmp_path / "new" / "run") == []
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    with pytest.raises(ValueError, match="`output_dir` is not a writable directory"):
        run_directory.prepare_output_dir(str(blocker / "run"))


def test_an_unreadable_latest_checkpoint_falls_back_to_the_one_before(tmp_path, capsys):
    import tensorflow as tf

    value = tf.Variable(0.0)
    checkpoint = tf.train.Checkpoint(value=value)
    manager = tf.train.CheckpointManager(checkpoint, str(tmp_path), max_to_keep=3)
    for step in (1, 2, 3):
        value.assign(float(step))
        manager.save(checkpoint_number=step)
    index = tmp_path / "ckpt-3.index"
    index.write_bytes(index.read_bytes()[:20])  # as a copy cut short leaves it
    value.assign(-1.0)
    restored = run_directory.restore_latest_intact(checkpoint, str(tmp_path))
    assert restored == str(tmp_path / "ckpt-2") and float(value.numpy()) == 2.0
    line = capsys.readouterr().out.strip()
    assert line.startswith(f"keras_albert: {tmp_path / 'ckpt-3'} (")
    assert line.endswith(f"is unreadable (truncated or corrupt); resuming from the previous "
                         f"checkpoint {tmp_path / 'ckpt-2'}.")  # fmt: skip

    # None readable: one error naming each; nothing there: None.
    for step in (1, 2):
        data = tmp_path / f"ckpt-{step}.data-00000-of-00001"
        data.write_bytes(data.read_bytes()[:4])
    with pytest.raises(ValueError, match="No checkpoint of .* can be read") as error:
        run_directory.restore_latest_intact(checkpoint, str(tmp_path))
    assert all(f"ckpt-{step} (" in str(error.value) for step in (1, 2, 3))
    assert run_directory.restore_latest_intact(checkpoint, str(tmp_path / "none")) is None


def test_run_lock_refuses_a_live_or_foreign_holder_takes_over_a_dead_one(tmp_path, capsys):
    output_dir = tmp_path / "run"
    lock = output_dir / run_directory.LOCK_FILE
    with run_directory.run_lock(str(output_dir)):
        assert lock.read_text() == f"{os.getpid()} {socket.gethostname()}\n"
        with pytest.raises(FileExistsError, match=rf"held by another run \(pid {os.getpid()} "):
            with run_directory.run_lock(str(output_dir)):
                pass
        assert lock.exists()  # the refused one leaves the holder's lock alone
    assert not output_dir.exists()  # made for the lock and left empty: removed

    output_dir.mkdir()
    lock.write_text("12345 another-host\n")  # another host's process cannot be asked
    with pytest.raises(FileExistsError, match=r"pid 12345 on another-host.*remove .*run.lock"):
        with run_directory.run_lock(str(output_dir)):
            pass
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    lock.write_text(f"{dead.pid} {socket.gethostname()}\n")
    with run_directory.run_lock(str(output_dir)):
        (output_dir / "kept.txt").write_text("x")
    assert f"taking over the lock of pid {dead.pid} (not running)" in capsys.readouterr().out
    assert not lock.exists() and (output_dir / "kept.txt").exists()
    with run_directory.run_lock(str(output_dir), hold=False):  # a worker that is not the chief
        assert not lock.exists()


def test_clear_run_removes_only_the_named_outputs(tmp_path):
    (tmp_path / "checkpoints").mkdir()
    (tmp_path / "checkpoints" / "ckpt-1.index").write_text("x")
    (tmp_path / "history.csv").write_text("step\n1\n")
    (tmp_path / "notes.txt").write_text("mine")
    removed = run_directory.clear_run(str(tmp_path), ("checkpoints", "history.csv", "logs"))
    assert removed == ["checkpoints", "history.csv"]
    assert sorted(os.listdir(tmp_path)) == ["notes.txt"]


def test_run_file_of_todays_options_keeps_an_old_name_and_compares_tuples_as_lists(tmp_path):
    # A record holding both names is of today's options: `vocabulary` is a field of its own.
    current = {"vocabulary": "vocab.txt", "sentencepiece_model": None, "labels": ("a", "b")}
    run_directory.write_run_file(str(tmp_path), current)
    assert run_directory.read_run_file(str(tmp_path)) == {**current, "labels": ["a", "b"]}
    run_directory.check_run_file(str(tmp_path), current, True)
    with pytest.raises(ValueError, match=r"labels: \['a', 'b'\] -> \['b', 'a'\].*or `force`"):
        run_directory.check_run_file(
            str(tmp_path), {**current, "labels": ("b", "a")}, True, remedy="`force`"
        )


def test_a_failed_write_leaves_the_previous_artifacts_intact(tmp_path, monkeypatch):
    # A full disk in the middle of a write: best.keras, summary.json and the served versions
    # written before are byte-identical afterwards, no partial file is left, and the error
    # says what failed.
    import errno

    import keras

    from keras_albert.export.serving_layout import write_version
    from tests.helpers import tiny_backbone

    model = tiny_backbone()
    best = str(tmp_path / "best.keras")
    run_directory.atomic_save_model(model, best)
    summary = run_directory.write_summary(str(tmp_path), {"step": 1})
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
        run_directory.atomic_save_model(model, best)

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
        run_directory.write_summary(str(tmp_path), {"step": 2})
    monkeypatch.undo()
    for path, content in before.items():
        assert open(path, "rb").read() == content, path
    assert sorted(os.listdir(tmp_path)) == ["best.keras", "served", "summary.json"]
    assert os.listdir(tmp_path / "served") == ["1"]
    assert json.loads(summary) == {"step": 1}
