"""The run directory: the write probe, atomic writes, run.json under old and new names."""

import json
import os

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
