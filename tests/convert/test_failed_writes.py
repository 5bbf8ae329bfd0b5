"""A conversion that fails midway leaves nothing that loads: no destination, no temporary.

Each writer is made to fail after it has written part of its files (keras-hub preset, Hugging
Face directory, `.keras`, `.weights.h5`); a WordPiece vocabulary for a keras-hub preset, a
SentencePiece `.vocab` for its `.model` and a destination that holds files are refused before
anything is written.
"""

import os

import pytest

import keras_albert.convert.huggingface as huggingface
import keras_albert.convert.keras_hub as keras_hub_writer
from keras_albert import AlbertBackbone, AlbertClassifier
from keras_albert.convert import load_checkpoint, save_checkpoint
from tests.helpers import tiny_config
from tests.test_tool_errors import load_tool
from tests.text.test_tokenizer import text_vocabulary
from tests.text.text_data import ALBERT_MODEL, DATA


class DiskFull(OSError):
    pass


@pytest.fixture(scope="module")
def classifier():
    return AlbertClassifier(AlbertBackbone.from_albert_config(tiny_config()), num_classes=2)


def fail_on_call(number: int, function):
    """`function`, but its `number`-th call raises (after the earlier ones wrote)."""
    calls = []

    def failing(*args, **kwargs):
        calls.append(None)
        if len(calls) == number:
            raise DiskFull("No space left on device")
        return function(*args, **kwargs)

    return failing


def assert_nothing_left(parent, before=()):
    assert sorted(os.listdir(parent)) == sorted(before)


def test_keras_hub_preset_failing_at_its_task_weights(tmp_path, classifier, monkeypatch):
    # model.weights.h5, config.json, metadata.json and the tokenizer are written by then.
    writes = fail_on_call(2, keras_hub_writer.write_weights_file)
    monkeypatch.setattr(keras_hub_writer, "write_weights_file", writes)
    with pytest.raises(DiskFull):
        save_checkpoint(
            classifier, tmp_path / "preset", format="keras_hub", vocabulary=ALBERT_MODEL
        )
    assert_nothing_left(tmp_path)


def test_keras_hub_preset_with_a_wordpiece_vocabulary_is_refused_first(tmp_path, classifier):
    with pytest.raises(ValueError, match="`vocabulary` must be a SentencePiece model"):
        save_checkpoint(
            classifier,
            tmp_path / "preset",
            format="keras_hub",
            vocabulary=DATA / "zh" / "vocab_chinese.txt",
        )
    assert_nothing_left(tmp_path)


def test_hf_directory_failing_at_its_weights(tmp_path, classifier, monkeypatch):
    # config.json is written by then.
    monkeypatch.setattr(
        huggingface, "hf_weights_from_model", fail_on_call(1, huggingface.hf_weights_from_model)
    )
    with pytest.raises(DiskFull):
        save_checkpoint(classifier, tmp_path / "hf", format="hf")
    assert_nothing_left(tmp_path)


@pytest.mark.parametrize("name", ["model.keras", "model.weights.h5"])
def test_keras_files_failing_midway_keep_the_previous_file(tmp_path, classifier, name):
    save_checkpoint(classifier, tmp_path / name)
    before = (tmp_path / name).read_bytes()
    other = AlbertClassifier(AlbertBackbone.from_albert_config(tiny_config()), num_classes=2)

    def half_a_file(path, *args, **kwargs):
        with open(path, "wb") as file:
            file.write(b"PK\x03\x04 half")
        raise DiskFull("No space left on device")

    other.save = other.save_weights = half_a_file
    with pytest.raises(DiskFull):
        save_checkpoint(other, tmp_path / name)
    assert (tmp_path / name).read_bytes() == before
    assert_nothing_left(tmp_path, [name])
    assert load_checkpoint(tmp_path / name, config=tiny_config(), num_classes=2) is not None


def test_a_destination_that_holds_files_is_refused_before_writing(tmp_path, classifier):
    (tmp_path / "hf").mkdir()
    (tmp_path / "hf" / "notes.txt").write_text("mine")
    with pytest.raises(FileExistsError) as error:
        save_checkpoint(classifier, tmp_path / "hf", format="keras_hub")
    assert str(error.value).startswith("`destination` must be a new or empty directory")
    assert str(error.value).endswith("which holds notes.txt")
    assert_nothing_left(tmp_path / "hf", ["notes.txt"])


def test_a_sentencepiece_text_vocabulary_through_the_tool_names_the_model(tmp_path, classifier):
    classifier.save(tmp_path / "best.keras")
    text_vocabulary(tmp_path / "30k-clean.vocab")
    (tmp_path / "30k-clean.model").write_bytes(ALBERT_MODEL.read_bytes())
    argv = [str(tmp_path / "best.keras"), str(tmp_path / "preset"), "--to", "keras_hub"]
    with pytest.raises(ValueError) as error:
        load_tool("convert_checkpoint").main(
            [*argv, "--vocabulary", str(tmp_path / "30k-clean.vocab")]
        )
    assert str(error.value).endswith(
        f"not its model: did you mean the .model beside it, '{tmp_path / '30k-clean.model'}'?"
    )
    assert_nothing_left(tmp_path, ["best.keras", "30k-clean.vocab", "30k-clean.model"])
