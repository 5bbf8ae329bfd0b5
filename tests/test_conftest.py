"""The suite's own configuration: its explanation of a failed `==` between long sequences
(lengths and the first difference, in linear time: pytest's own diff of two large files does
not end), and the files it schedules first."""

import time
from pathlib import Path

from tests.conftest import LONGEST_FILES_FIRST, ONE_WORKER, pytest_assertrepr_compare

REPO_ROOT = Path(__file__).resolve().parents[1]


def test_long_byte_strings_name_the_first_difference_quickly():
    left = bytes(range(256)) * 4000
    right = bytearray(left)
    right[500_000] = 7
    start = time.monotonic()
    lines = pytest_assertrepr_compare("==", left, bytes(right))
    assert time.monotonic() - start < 5
    assert lines[:2] == ["two bytes of lengths 1024000 and 1024000 differ",
                         "first difference at offset 500000:"]  # fmt: skip


def test_a_longer_list_differs_where_the_shorter_ends_and_short_ones_keep_pytests_diff():
    lines = pytest_assertrepr_compare("==", list(range(20_000)), list(range(20_001)))
    assert lines[1] == "first difference at offset 20000:"
    assert pytest_assertrepr_compare("==", "abc", "abd") is None
    assert pytest_assertrepr_compare("==", b"a" * 20_000, "a" * 20_000) is None


def test_the_files_the_scheduling_names_exist():
    scheduled = (*LONGEST_FILES_FIRST, *ONE_WORKER)
    missing = [path for path in scheduled if not (REPO_ROOT / path).is_file()]
    assert not missing
