"""The option binder: a field is a flag, the default is the dataclass's, help is its doc."""

from __future__ import annotations

import argparse
import dataclasses
from typing import Literal

import pytest

from keras_albert.cli import (
    add_options,
    field_docs,
    flag_name,
    options_from_args,
    parse_bool_or_auto,
)
from tests.tool_flags import check_tool_flags


@dataclasses.dataclass(frozen=True)
class _Options:
    """Example options.

    Args:
        output_dir: where things go.
        sequence_length: packed length,
            continued on a second line.
        learning_rate, batch_size: override the recipe.
        deterministic: deterministic ops.
        labels: class names.
        task: which pairs.
        jit_compile: XLA or not.
        hidden: set by the tool.

    Returns nothing: this line ends the section.
    """

    output_dir: str
    sequence_length: int = 512
    learning_rate: float | None = None
    batch_size: int | None = None
    deterministic: bool = False
    labels: tuple[str, ...] | None = None
    task: Literal["sop", "nsp"] = "sop"
    jit_compile: bool | str = dataclasses.field(
        default="auto", metadata={"parse": parse_bool_or_auto}
    )
    hidden: int = dataclasses.field(default=3, metadata={"flag": False})


def _parser(**kwargs):
    parser = argparse.ArgumentParser()
    add_options(parser, _Options, **kwargs)
    return parser


def test_field_docs_reads_the_args_section():
    docs = field_docs(_Options)
    assert docs["sequence_length"] == "packed length, continued on a second line."
    assert docs["learning_rate"] == docs["batch_size"] == "override the recipe."
    assert "Returns" not in " ".join(docs.values())
    assert set(docs) == {f.name for f in dataclasses.fields(_Options)}


def test_flags_types_defaults_and_aliases():
    parser = _parser(aliases={"sequence_length": ("--max_seq_length",)})
    check_tool_flags(parser, _Options, aliases={"sequence_length": ("--max_seq_length",)})
    args = parser.parse_args(
        "--output-dir o --max_seq_length 64 --learning-rate 1e-3 --deterministic "
        "--labels a,b --task nsp --jit-compile false".split()
    )
    options = options_from_args(args, _Options, hidden=7)
    assert options == _Options("o", 64, 1e-3, None, True, ("a", "b"), "nsp", False, 7)
    defaults = options_from_args(parser.parse_args(["--output-dir", "o"]), _Options)
    assert defaults == _Options("o")
    assert flag_name("max_predictions_per_sequence") == "--max-predictions-per-sequence"


def test_required_choices_and_help():
    parser = _parser()
    with pytest.raises(SystemExit):
        parser.parse_args([])  # --output-dir is required
    with pytest.raises(SystemExit):
        parser.parse_args(["--output-dir", "o", "--task", "mlm"])
    with pytest.raises(SystemExit):
        parser.parse_args(["--output-dir", "o", "--jit-compile", "maybe"])
    text = parser.format_help()
    assert "packed length, continued on a second line. (default: 512)" in " ".join(text.split())


def test_check_tool_flags_fails_on_a_second_spelling_or_a_changed_default():
    parser = _parser()
    parser.add_argument("--seq-len", dest="sequence_length", type=int)
    with pytest.raises(AssertionError):
        check_tool_flags(parser, _Options)
    parser = _parser()
    parser.set_defaults(sequence_length=128)
    with pytest.raises(AssertionError):
        check_tool_flags(parser, _Options)


def test_unknown_alias_is_refused():
    with pytest.raises(ValueError, match="aliases"):
        _parser(aliases={"seq_len": ("--max_seq_length",)})
