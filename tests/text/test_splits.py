"""The seeded train/dev split of one labeled CSV (tools/split_dataset.py)."""

import csv
import importlib.util
import os

import pytest

from keras_albert.text.splits import CsvSplitOptions, split_csv
from tests.text.text_data import DATA
from tests.tool_flags import check_tool_flags

REVIEWS = str(DATA / "zh" / "chnsenticorp_htl_first300.csv")


def read(path):
    with open(path, encoding="utf-8", newline="") as file:
        return list(csv.reader(file))


def test_a_seeded_split_keeps_every_row_once_and_dev_texts_out_of_train_txt(tmp_path):
    counts = split_csv(CsvSplitOptions(REVIEWS, str(tmp_path / "a"), text_column="review"))
    assert counts == {"train": 270, "dev": 30, "texts": 270}
    original = read(REVIEWS)
    train, dev = read(tmp_path / "a" / "train.csv"), read(tmp_path / "a" / "dev.csv")
    assert train[0] == dev[0] == original[0] == ["label", "review"]
    assert sorted(train[1:] + dev[1:]) == sorted(original[1:])
    # Each split in file order.
    position = {tuple(row): i for i, row in enumerate(original)}
    assert [position[tuple(row)] for row in dev[1:]] == sorted(position[tuple(r)] for r in dev[1:])
    texts = (tmp_path / "a" / "train.txt").read_text(encoding="utf-8").split("\n\n")
    assert len(texts) == 270 and not {row[1] for row in dev[1:]} & {t.strip() for t in texts}

    split_csv(CsvSplitOptions(REVIEWS, str(tmp_path / "b")))
    assert read(tmp_path / "b" / "dev.csv") == dev  # the same seed, the same split
    assert not (tmp_path / "b" / "train.txt").exists()
    split_csv(CsvSplitOptions(REVIEWS, str(tmp_path / "c"), seed=1))
    assert read(tmp_path / "c" / "dev.csv") != dev


def test_bad_options_name_what_was_received(tmp_path):
    with pytest.raises(ValueError, match="`dev_fraction` must be"):
        CsvSplitOptions(REVIEWS, str(tmp_path), dev_fraction=1.5)
    with pytest.raises(ValueError, match="Received: text_column='text'"):
        split_csv(CsvSplitOptions(REVIEWS, str(tmp_path), text_column="text"))


def test_the_tool_has_one_flag_per_option():
    path = os.path.join(os.path.dirname(REVIEWS), "..", "..", "..", "tools", "split_dataset.py")
    spec = importlib.util.spec_from_file_location("split_dataset", path)
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    check_tool_flags(tool.build_parser(), CsvSplitOptions)
