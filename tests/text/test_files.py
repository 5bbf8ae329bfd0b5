"""write_atomically: a file or directory appears whole at its path, or not at all."""

import os

import pytest

from keras_albert.text.files import umask, write_atomically


class Interrupted(Exception):
    pass


def fill(directory: str) -> None:
    with open(os.path.join(directory, "config.json"), "w") as file:
        file.write("{}")
    os.mkdir(os.path.join(directory, "assets"))


def fail_midway(directory: str) -> None:
    fill(directory)
    raise Interrupted("the disk is full")


def fail_midway_file(path: str) -> None:
    assert path.endswith(".keras")  # a writer that reads the suffix gets it
    with open(path, "w") as file:
        file.write("half")
    raise Interrupted("the disk is full")


def test_a_directory_appears_whole(tmp_path):
    path = tmp_path / "new" / "preset"
    assert write_atomically(path, fill, directory=True) == str(path)
    assert sorted(os.listdir(path)) == ["assets", "config.json"]
    assert os.listdir(tmp_path / "new") == ["preset"]
    assert os.stat(path).st_mode & 0o777 == 0o777 & ~umask()  # not mkdtemp's 0o700


def test_a_failed_write_leaves_neither_the_path_nor_a_temporary(tmp_path):
    with pytest.raises(Interrupted):
        write_atomically(tmp_path / "preset", fail_midway, directory=True)
    assert os.listdir(tmp_path) == []
    with pytest.raises(Interrupted):
        write_atomically(tmp_path / "model.keras", fail_midway_file, directory=False)
    assert os.listdir(tmp_path) == []


def test_an_empty_directory_is_filled_and_a_full_one_refused_before_writing(tmp_path):
    (tmp_path / "empty").mkdir()
    write_atomically(tmp_path / "empty", fill, directory=True)
    assert sorted(os.listdir(tmp_path / "empty")) == ["assets", "config.json"]
    calls = []
    with pytest.raises(FileExistsError) as error:
        write_atomically(tmp_path / "empty", calls.append, directory=True, name="destination")
    assert str(error.value) == (
        "`destination` must be a new or empty directory (it is written whole, then renamed "
        f"into place). Received: destination='{tmp_path / 'empty'}', which holds assets, "
        "config.json"
    )
    assert calls == []


def test_a_file_replaces_a_file_and_a_failure_keeps_the_old_one(tmp_path):
    path = tmp_path / "model.keras"
    path.write_text("old")
    with pytest.raises(Interrupted):
        write_atomically(path, fail_midway_file, directory=False)
    assert path.read_text() == "old" and os.listdir(tmp_path) == ["model.keras"]
    write_atomically(path, lambda temporary: open(temporary, "w").write("new"), directory=False)
    assert path.read_text() == "new" and os.listdir(tmp_path) == ["model.keras"]


def test_wrong_kinds_of_path_are_named(tmp_path):
    taken = tmp_path / "taken"
    taken.write_text("keep me")
    with pytest.raises(NotADirectoryError) as error:
        write_atomically(taken, fill, directory=True, name="export_dir")
    assert str(error.value) == (
        f"`export_dir` must be a directory (or a path where one can be made), but '{taken}' is "
        f"a file. Received: export_dir='{taken}'"
    )
    with pytest.raises(NotADirectoryError, match=f"but '{taken}' is a file. Received: "):
        write_atomically(taken / "a" / "b", fill, directory=True, name="export_dir")
    with pytest.raises(NotADirectoryError) as error:
        write_atomically(taken / "model.keras", fill, directory=False, name="destination")
    assert str(error.value) == (
        f"`destination` must be a path below a directory, but '{taken}' is a file. "
        f"Received: destination='{taken / 'model.keras'}'"
    )
    with pytest.raises(ValueError, match="`destination` must be a file name, not a directory"):
        write_atomically(tmp_path, fill, directory=False, name="destination")
    assert taken.read_text() == "keep me" and os.listdir(tmp_path) == ["taken"]
