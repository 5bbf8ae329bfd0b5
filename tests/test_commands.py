"""The `keras-albert` command: one subcommand per module of keras_albert/commands, listed by
`--help`; each is the checkout's script in tools/ (the same flags, the same parsed options, the
same `main`), reached with its arguments as given."""

import argparse
import importlib.util
import pkgutil
import sys
from pathlib import Path

import pytest

import keras_albert.commands
from keras_albert.cli import option_flags
from keras_albert.commands import COMMANDS, build_parser, command_module, summary
from keras_albert.commands import main as keras_albert_main

REPO = Path(__file__).resolve().parents[1]
# The checkout's script of each command (what many tests run; the guides run the command).
SCRIPTS = {
    "train-tokenizer": "train_tokenizer.py",
    "split": "split_dataset.py",
    "create-data": "create_pretraining_data.py",
    "pretrain": "pretrain.py",
    "finetune": "finetune.py",
    "convert": "convert_checkpoint.py",
    "export": "export_saved_model.py",
    "probe": "probe_saved_model.py",
    "client": "serving_client.py",
}
# Real command lines of each command (from the guides and the tools' docstrings).
ARGUMENT_LISTS = {
    "train-tokenizer": [
        ["--inputs", "a.txt", "b.txt", "--vocabulary", "out/spm.model", "--vocabulary-size", "800"],
        ["--inputs", "a.txt", "--sentencepiece-model", "m", "--no-lowercase", "--seed", "3"],
    ],
    "split": [
        ["--input", "reviews.csv", "--output-dir", "out", "--dev-fraction", "0.2"],
        ["--input", "r.tsv", "--output-dir", "o", "--delimiter", "\\t", "--text-column", "text"],
    ],
    "create-data": [
        ["--inputs", "corpus", "--output-dir", "out", "--vocabulary", "m.model", "--dupe-factor",
         "1", "--num-workers", "2", "--num-shards", "4"],
        ["--input_file", "a.txt", "--output_dir", "o", "--spm_model_file", "m",
         "--max_seq_length", "64", "--no-do_lower_case", "--engine", "beam"],
    ],
    "pretrain": [
        ["--train-data", "t", "--output-dir", "o", "--train-steps", "5", "--batch-size", "8",
         "--preset", "albert_base_v2", "--strategy", "mirrored"],
        ["--input_file=t", "--output_dir=o", "--num_train_steps=5", "--train_batch_size=8",
         "--albert_config_file=c.json", "--use_tpu"],
    ],
    "finetune": [
        ["--dataset", "SST-2", "--train-data", "t.tsv", "--eval-data", "d.tsv", "--output-dir",
         "o", "--init-checkpoint", "runs/pretrain", "--scale", "0.05"],
        ["--dataset", "squad_v2", "--answerability", "answer_class", "--train-data", "t.json",
         "--eval-data", "d.json", "--output-dir", "o", "--preset", "albert_base_v2"],
    ],
    "convert": [
        ["albert_base/", "albert_base.keras"],
        ["ours.keras", "hf_out/", "--to", "hf", "--model", "backbone"],
    ],
    "export": [
        ["runs/sst2/best.keras", "--name", "sst2", "--class-names", "no", "yes"],
        ["runs/squad/best.keras", "--name", "squad", "--doc-stride", "128", "--format", "onnx"],
    ],
    "client": [
        ["--model", "sst2", "a charming journey"],
        ["--model", "squad", "--fields", "question,context", "Who?", "Jane wrote it."],
    ],
}  # fmt: skip


def script_module(command: str):
    """The checkout's script of `command`, loaded as a module."""
    path = REPO / "tools" / SCRIPTS[command]
    spec = importlib.util.spec_from_file_location(f"{path.stem}_script", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def parsed(parser: argparse.ArgumentParser, argv: list[str]) -> dict:
    return vars(parser.parse_args(argv))


def test_every_module_is_a_command_and_has_its_script():
    modules = {info.name for info in pkgutil.iter_modules(keras_albert.commands.__path__)}
    assert modules == {command.replace("-", "_") for command in COMMANDS}
    assert set(SCRIPTS) == set(COMMANDS)
    # tools/ holds the commands' scripts and nothing else in Python (the main job is in
    # examples/).
    scripts = {path.name for path in (REPO / "tools").glob("*.py")}
    assert scripts == set(SCRIPTS.values())


def test_help_lists_every_command_with_one_line(capsys):
    with pytest.raises(SystemExit) as exit_info:
        keras_albert_main(["--help"])
    assert exit_info.value.code == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("usage: keras-albert")
    for command in COMMANDS:
        (line,) = [line for line in lines if line.split()[:1] == [command]]
        assert line.split(None, 1)[1] == summary(command) and "\n" not in summary(command)
    assert all(summary(command) for command in COMMANDS)
    assert build_parser().format_help() == "\n".join(lines) + "\n"


@pytest.mark.parametrize("command", sorted(ARGUMENT_LISTS))
def test_each_command_is_its_script(command):
    module, script = command_module(command), script_module(command)
    assert script.main is module.main and script.build_parser is module.build_parser
    assert option_flags(script.build_parser()) == option_flags(module.build_parser())
    for argv in ARGUMENT_LISTS[command]:
        assert parsed(script.build_parser(), argv) == parsed(module.build_parser(), argv)


def test_the_command_runs_main_with_its_arguments_as_given(monkeypatch):
    calls = []
    module = command_module("create-data")
    # What `main` is given, and the program name its parser's usage line shows.
    fake_main = lambda argv: calls.append((argv, module.build_parser().prog)) or 0
    monkeypatch.setattr(module, "main", fake_main)
    monkeypatch.setattr(sys, "argv", ["/venv/bin/keras-albert"])
    argv = ["--inputs", "a", "--", "--runner", "DirectRunner"]  # Beam's options after `--`
    with pytest.raises(SystemExit) as exit_info:
        keras_albert_main(["create-data", *argv, "--debug"])
    assert exit_info.value.code == 0
    assert calls == [(argv, "keras-albert create-data")]
    assert sys.argv == ["/venv/bin/keras-albert"]  # as it was


def test_a_command_help_and_an_unknown_command(capfd):
    with pytest.raises(SystemExit) as exit_info:
        keras_albert_main(["split", "--help"])
    assert exit_info.value.code == 0
    assert capfd.readouterr().out.startswith("usage: keras-albert split [-h] --input INPUT")
    with pytest.raises(SystemExit) as exit_info:
        keras_albert_main(["splt"])
    assert exit_info.value.code == 2 and "invalid choice: 'splt'" in capfd.readouterr().err
    # The probe runs from its file in a fresh interpreter (no keras_albert, no TensorFlow for
    # its --help).
    with pytest.raises(SystemExit) as exit_info:
        keras_albert_main(["probe", "--help"])
    assert exit_info.value.code == 0 and "export_dir" in capfd.readouterr().out


def test_split_end_to_end(tmp_path, capsys):
    csv = tmp_path / "reviews.csv"
    csv.write_text("label,review\n" + "".join(f"{i % 2},text {i}\n" for i in range(20)), "utf-8")
    argv = ["split", "--input", str(csv), "--output-dir", str(tmp_path / "out"), "--seed", "1"]
    with pytest.raises(SystemExit) as exit_info:
        keras_albert_main([*argv, "--dev-fraction", "0.25", "--text-column", "review"])
    assert exit_info.value.code == 0
    assert "15 train rows, 5 dev rows, 15 texts in train.txt" in capsys.readouterr().out
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "dev.csv",
        "train.csv",
        "train.txt",
    ]
