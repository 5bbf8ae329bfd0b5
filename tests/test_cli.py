"""The option binder: a field is a flag, the default is the dataclass's, help is its doc."""

from __future__ import annotations

import argparse
import dataclasses
import os
from typing import Literal

import pytest

from keras_albert.cli import (
    VOCABULARY_METADATA,
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


TOOLS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tools")


@pytest.mark.parametrize(
    "tool, argv",
    [
        ("train_tokenizer", ["--inputs", "a.txt"]),
        ("create_pretraining_data", ["--inputs", "a.txt", "--output-dir", "out"]),
        ("pretrain", ["--train-data", "d", "--output-dir", "o", "--train-steps", "1",
                      "--batch-size", "1", "--preset", "albert_base_v2"]),
        ("finetune", ["--dataset", "SST-2", "--train-data", "t", "--eval-data", "e",
                      "--output-dir", "o"]),
        ("export_saved_model", ["run/best.keras"]),
    ],
)  # fmt: skip
def test_every_tool_takes_the_vocabulary_under_its_one_name_and_the_old_one(tool, argv):
    import importlib.util

    spec = importlib.util.spec_from_file_location(tool, os.path.join(TOOLS, f"{tool}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    parser = module.build_parser()
    for flag in ("--vocabulary", "--sentencepiece-model"):
        assert parser.parse_args([*argv, flag, "vocab_chinese.txt"]).vocabulary == (
            "vocab_chinese.txt"
        )
    assert "(also: --sentencepiece-model" in " ".join(parser.format_help().split())


def test_metadata_aliases_come_before_the_tools_own():
    @dataclasses.dataclass(frozen=True)
    class Options:
        """Args:
        vocabulary: the file.
        """

        vocabulary: str = dataclasses.field(default="v", metadata=VOCABULARY_METADATA)

    parser = argparse.ArgumentParser()
    add_options(parser, Options, aliases={"vocabulary": ("--spm_model_file",)})
    action = next(a for a in parser._actions if a.dest == "vocabulary")
    assert action.option_strings == ["--vocabulary", "--sentencepiece-model", "--spm_model_file"]
    assert (
        action.help
        == "the file. (also: --sentencepiece-model, --spm_model_file) (default: %(default)s)"
    )
    check_tool_flags(parser, Options, {"vocabulary": ("--spm_model_file",)})


def test_unknown_alias_is_refused():
    with pytest.raises(ValueError, match="aliases"):
        _parser(aliases={"seq_len": ("--max_seq_length",)})


def _exit_of(main, argv, capsys):
    from keras_albert.cli import run_tool

    with pytest.raises(SystemExit) as exit_info:
        run_tool(main, argv)
    return exit_info.value.code, capsys.readouterr().err


def test_run_tool_user_errors_are_one_line(capsys):
    from keras_albert.cli import ToolError

    def bad_value(argv):
        raise ValueError("`sequence_length` must be an integer >= 3.\nReceived: sequence_length=1")

    status, err = _exit_of(bad_value, [], capsys)
    assert status == 1
    assert err == "error: `sequence_length` must be an integer >= 3. Received: sequence_length=1\n"

    def missing(argv):
        open("/nonexistent/corpus.txt")

    status, err = _exit_of(missing, [], capsys)
    assert (status, err) == (1, "error: No such file or directory: /nonexistent/corpus.txt\n")

    def usage(argv):
        raise ToolError("give --train-data", 2)

    assert _exit_of(usage, [], capsys) == (2, "error: give --train-data\n")


def test_run_tool_interrupt_status_and_debug(capsys):
    def interrupted(argv):
        raise KeyboardInterrupt("the last checkpoint is runs/x/ckpt-40; rerun to resume")

    status, err = _exit_of(interrupted, [], capsys)
    assert status == 130
    assert err.count("\n") == 1 and "ckpt-40" in err

    def bad(argv):
        assert "--debug" not in argv
        raise ValueError("bad")

    from keras_albert.cli import run_tool

    with pytest.raises(ValueError, match="bad"):
        run_tool(bad, ["--debug"])
    assert _exit_of(lambda argv: 3, [], capsys)[0] == 3
    assert _exit_of(lambda argv: None, [], capsys)[0] == 0


@pytest.mark.slow
def test_quiet_tensorflow_hides_start_up_lines():
    import subprocess
    import sys

    code = "import keras_albert, tensorflow as tf; print(int(tf.constant(1) + 1))"
    environment = {k: v for k, v in os.environ.items() if not k.startswith("TF_CPP")}
    environment.pop("KERAS_ALBERT_VERBOSE", None)
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=environment
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == "2\n"
    assert result.stderr == "", result.stderr
    environment["KERAS_ALBERT_VERBOSE"] = "1"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=environment
    )
    assert result.stderr != ""  # the switch shows them again


def test_run_tool_names_the_flag_of_each_bound_field(capsys):
    message = (
        "`sequence_length` must be at most 512. Received: sequence_length=1024; use another "
        "`output_dir` or `force`."
    )

    def refused(argv):
        _parser().parse_args(["--output-dir", "o"])  # the tool binds _Options
        raise ValueError(message)

    assert _exit_of(refused, [], capsys) == (
        1,
        "error: `--sequence-length` must be at most 512. Received: sequence_length=1024; use "
        "another `--output-dir` or `force`.\n",  # `force` is no field of _Options
    )

    def binds_nothing(argv):  # the next tool run in this process
        raise ValueError(message)

    assert _exit_of(binds_nothing, [], capsys) == (1, f"error: {message}\n")


def test_a_file_in_the_way_of_a_directory_is_named(tmp_path, capsys):
    taken = tmp_path / "results"
    taken.write_text("keep me")
    status, err = _exit_of(lambda argv: open(taken / "sst2" / "summary.json", "w"), [], capsys)
    assert (status, err) == (
        1,
        f"error: Not a directory: '{taken}' is a file (in the path "
        f"'{taken / 'sst2' / 'summary.json'}')\n",
    )


def test_a_tab_default_is_shown_and_taken_as_python_writes_it():
    @dataclasses.dataclass(frozen=True)
    class Table:
        """A table.

        Args:
            delimiter: the field separator.
            quote: the quote character.
        """

        delimiter: str = "\t"
        quote: str = '"'

    parser = argparse.ArgumentParser()
    add_options(parser, Table)
    help_text = " ".join(parser.format_help().split())
    assert "the field separator. (default: '\\t')" in help_text
    assert 'the quote character. (default: ")' in help_text
    assert options_from_args(parser.parse_args(["--delimiter", "\\t"]), Table).delimiter == "\t"
    assert options_from_args(parser.parse_args(["--delimiter", ";"]), Table).delimiter == ";"
    assert options_from_args(parser.parse_args(["--quote", "\\t"]), Table).quote == "\\t"
    # A lone backslash stays; text around an escape is kept.
    for text, expected in {"\\": "\\", "é\\t北": "é\t北", ",": ","}.items():
        assert options_from_args(parser.parse_args(["--delimiter", text]), Table).delimiter == (
            expected
        )
