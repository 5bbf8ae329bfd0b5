"""A user's mistake, run as a command: exit status, ONE line on stderr naming the value, nothing
half-written left behind. Ctrl-C in the drivers: one line saying where to resume.

Each tool runs as a subprocess (each imports TensorFlow: a few seconds); what a subprocess adds
nothing to (the drivers' interrupt message, the --help line) is checked in-process.
"""

import importlib.util
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from keras_albert import AlbertConfig
from keras_albert.cli import DEBUG_HELP, run_tool
from keras_albert.finetuning.driver import FinetuningOptions, finetune
from keras_albert.pretraining import driver as pretraining_driver
from keras_albert.training.loop import TrainingLoop
from keras_albert.training.phase import TrainingPhase
from tests.finetuning.test_driver import TINY_30K
from tests.pretraining.test_driver import options as pretraining_options
from tests.pretraining.test_driver import write_config, write_records
from tests.text.glue_rows import GLUE_DATA

REPO = Path(__file__).resolve().parents[1]
ALBERT_SPM = os.path.join(os.path.dirname(GLUE_DATA), "30k-clean.model")
TOOLS = (
    "convert_checkpoint",
    "create_pretraining_data",
    "export_saved_model",
    "finetune",
    "main",
    "pretrain",
    "serving_client",
    "train_tokenizer",
)


def run(tool: str, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("KERAS_ALBERT_DEBUG", "TF_CONFIG")}
    env.update(KERAS_BACKEND="tensorflow", PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="2")
    return subprocess.run(
        [sys.executable, str(REPO / "tools" / f"{tool}.py"), *map(str, args)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=180,
    )  # fmt: skip


def error_line(result: subprocess.CompletedProcess, status: int = 1) -> str:
    """The one stderr line of a failed run (asserting the status and that there is one)."""
    assert result.returncode == status, result.stderr[-3000:]
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr[-3000:]
    assert lines[0].startswith("error: ")
    return lines[0]


def test_missing_checkpoint_is_not_found_and_writes_nothing(tmp_path):
    missing, destination = tmp_path / "no-such-run", tmp_path / "out" / "model.keras"
    line = error_line(run("convert_checkpoint", missing, destination))
    assert "not found" in line and str(missing) in line
    assert not (tmp_path / "out").exists()


def test_keras_hub_preset_of_a_wordpiece_vocabulary_leaves_nothing(tmp_path):
    from keras_albert import AlbertBackbone, AlbertClassifier

    AlbertClassifier(
        AlbertBackbone.from_albert_config(AlbertConfig(**TINY_30K)), num_classes=2
    ).save(tmp_path / "best.keras")
    vocabulary = REPO / "tests" / "data" / "zh" / "vocab_chinese.txt"
    result = run(
        "convert_checkpoint", tmp_path / "best.keras", tmp_path / "preset", "--to", "keras_hub",
        "--vocabulary", vocabulary,
    )  # fmt: skip
    line = error_line(result)
    assert "`--vocabulary` must be a SentencePiece model for a keras-hub preset" in line
    assert os.listdir(tmp_path) == ["best.keras"]  # no preset, no temporary beside it


def test_pretraining_data_from_nothing_usable_writes_no_shard(tmp_path):
    (tmp_path / "empty.txt").write_bytes(b"")
    (tmp_path / "binary.bin").write_bytes(bytes(range(256)) * 64)
    inputs = [tmp_path / "empty.txt", tmp_path / "binary.bin", tmp_path / "missing.txt"]
    output_dir = tmp_path / "new" / "data"
    result = run(
        "create_pretraining_data", "--inputs", *inputs, "--output-dir", output_dir,
        "--vocabulary", ALBERT_SPM, "--num-workers", "1",
    )  # fmt: skip
    line = error_line(result)
    assert all(str(path) in line for path in inputs) and "no shard was written" in line
    # The summary is still printed, with the reasons.
    for reason in ("empty file", "binary file", "no such file"):
        assert reason in result.stdout
    assert not (tmp_path / "new").exists()  # neither shard nor the folders the tool made


def test_tokenizer_refuses_a_binary_and_leaves_no_folder(tmp_path):
    binary = tmp_path / "program"
    # Mostly invalid UTF-8 and NUL bytes, with line breaks: what /bin/ls looks like.
    binary.write_bytes((bytes(range(128, 256)) + b"\x00" * 32 + b"\n" + b"ok text\n") * 200)
    model = tmp_path / "new" / "tokenizer" / "spm.model"
    line = error_line(run("train_tokenizer", "--inputs", binary, "--vocabulary", model))
    assert str(binary) in line and "UTF-8" in line and "over 10%" in line
    assert not (tmp_path / "new").exists()


def test_finetuning_output_dir_that_is_a_file(tmp_path):
    taken = tmp_path / "results.txt"
    taken.write_text("keep me")
    result = run(
        "finetune", "--dataset", "SST-2", "--train-data", tmp_path / "train.tsv",
        "--eval-data", tmp_path / "dev.tsv", "--preset", "albert_base_v2",
        "--output-dir", taken,
    )  # fmt: skip
    line = error_line(result)
    assert "`--output-dir` must be a directory" in line and str(taken) in line
    assert taken.read_text() == "keep me"


def test_finetuning_data_that_is_a_directory(tmp_path):
    result = run(
        "finetune", "--dataset", "SST-2", "--train-data", tmp_path, "--eval-data", tmp_path,
        "--preset", "albert_base_v2", "--sentencepiece-model", ALBERT_SPM,
        "--output-dir", tmp_path / "run",
    )  # fmt: skip
    line = error_line(result)
    assert line == (
        f"error: `--train-data` must be a file, not a directory. Received: train_data='{tmp_path}'"
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("protocol", [pytest.param("rest", marks=pytest.mark.slow), "grpc"])
def test_serving_client_without_a_server(protocol):
    port = free_port()
    result = run(
        "serving_client", "--model", "sst2", "--protocol", protocol,
        f"--{protocol}-port", port, "a charming film",
    )  # fmt: skip
    line = error_line(result)
    assert f"no server at localhost:{port} ({protocol}): start one with" in line


# ----------------------------------------------------------------------------------------------
# In-process: the drivers' Ctrl-C message, the --help line.


def test_pretraining_interrupt_names_the_last_checkpoint(tmp_path, monkeypatch):
    data = tmp_path / "data"
    data.mkdir()
    write_records(data / "train.tfrecord", 48, seed=0)
    records = {"train_data": str(data / "train.tfrecord")}
    records["config"] = write_config(tmp_path / "config.json")

    options = pretraining_options(tmp_path, records)
    save = TrainingPhase.save

    def ctrl_c_after_first_checkpoint(self, step):
        path = save(self, step)
        if step >= options.checkpoint_every_steps:
            raise KeyboardInterrupt  # as Ctrl-C arrives inside the loop
        return path

    monkeypatch.setattr(TrainingPhase, "save", ctrl_c_after_first_checkpoint)
    with pytest.raises(KeyboardInterrupt) as interrupt:
        pretraining_driver.pretrain(options)
    checkpoint = os.path.join(options.output_dir, "checkpoints", "ckpt-10")
    assert str(interrupt.value) == (
        f"last checkpoint {checkpoint} — rerun the same command to resume"
    )
    assert os.path.isfile(checkpoint + ".index")


def test_a_pretraining_run_refused_at_its_checks_leaves_no_run_folder(tmp_path):
    records = {"train_data": str(tmp_path / "nothing-*.tfrecord")}
    records["config"] = write_config(tmp_path / "config.json")
    options = pretraining_options(tmp_path, records)
    with pytest.raises(ValueError, match="nothing-"):
        pretraining_driver.pretrain(options)
    assert not os.path.exists(options.output_dir)


def test_finetuning_interrupt_says_what_was_saved(tmp_path, monkeypatch):
    def ctrl_c(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(TrainingLoop, "train", ctrl_c)
    tiny = tmp_path / "albert_config.json"
    AlbertConfig(**TINY_30K).to_json(str(tiny))
    split = os.path.join(GLUE_DATA, "sst2_{}.tsv")
    options = FinetuningOptions(
        dataset="SST-2", train_data=split.format("train"), eval_data=split.format("dev"),
        output_dir=str(tmp_path / "run"), config=str(tiny), vocabulary=ALBERT_SPM,
        sequence_length=32, train_steps=2, batch_size=4, verbose=0,
    )  # fmt: skip
    with pytest.raises(KeyboardInterrupt) as interrupt:
        finetune(options)
    checkpoints = os.path.join(options.output_dir, "checkpoints")
    assert str(interrupt.value) == (
        f"no checkpoint in {checkpoints} yet — rerun the same command to start over"
    )


def tool_path(name: str) -> Path:
    """The script of a tool: tools/NAME.py, or the main job's examples/main.py."""
    return REPO / ("examples" if name == "main" else "tools") / f"{name}.py"


def load_tool(name: str):
    spec = importlib.util.spec_from_file_location(f"{name}_tool", tool_path(name))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_tool_documents_debug_and_runs_through_run_tool():
    for name in TOOLS:
        source = tool_path(name).read_text()
        assert 'if __name__ == "__main__":\n    run_tool(main)' in source, name
        help_text = " ".join(load_tool(name).build_parser().format_help().split())
        assert DEBUG_HELP in help_text, name


# ----------------------------------------------------------------------------------------------
# Words: each error names the flag to change, the path and what it should have been.


def run_in_process(tool: str, argv: list[str], capsys) -> str:
    """The one error line of `tool` run by `run_tool` in this process (exit status 1)."""
    with pytest.raises(SystemExit) as exit_info:
        run_tool(load_tool(tool).main, [str(arg) for arg in argv])
    err = capsys.readouterr().err
    assert exit_info.value.code == 1 and err.count("\n") == 1, err
    return err.strip()


def finetuning_argv(tmp_path) -> list:
    tiny = tmp_path / "albert_config.json"
    AlbertConfig(**TINY_30K).to_json(str(tiny))  # max_sequence_length 32
    split = os.path.join(GLUE_DATA, "sst2_{}.tsv")
    return [
        "--dataset", "SST-2", "--train-data", split.format("train"), "--eval-data",
        split.format("dev"), "--config", tiny, "--vocabulary", ALBERT_SPM,
        "--output-dir", tmp_path / "run", "--batch-size", "4", "--verbose", "0",
    ]  # fmt: skip


def test_a_sequence_length_beyond_the_model_names_its_flag(tmp_path, capsys):
    line = run_in_process("finetune", [*finetuning_argv(tmp_path), "--sequence-length", 64], capsys)
    assert line == (
        "error: `--sequence-length` must be at most the model's max_sequence_length, 32. "
        "Received: sequence_length=64"
    )


@pytest.mark.slow
def test_a_changed_option_names_the_flags_that_start_over(tmp_path, capsys):
    argv = [*finetuning_argv(tmp_path), "--sequence-length", 16, "--train-steps", 2]
    assert load_tool("finetune").main([str(arg) for arg in argv]) == 0
    line = run_in_process("finetune", [*argv, "--seed", 7], capsys)
    assert "holds a run with other options (seed: " in line
    assert line.endswith("Use another `--output-dir` or `--force` to start over.")


def test_an_export_to_a_file_says_a_directory_was_expected(tmp_path, capsys):
    taken = tmp_path / "exports"
    taken.write_text("keep me")
    argv = [tmp_path / "best.keras", "--output-dir", taken, "--name", "sst2"]
    assert run_in_process("export_saved_model", argv, capsys) == (
        "error: `--output-dir` must be a directory (or a path where one can be made), but "
        f"'{taken}' is a file. Received: output_dir='{taken}'"
    )
    assert taken.read_text() == "keep me"


def test_help_shows_the_tab_delimiter():
    help_text = " ".join(load_tool("finetune").build_parser().format_help().split())
    assert "generic task: the field separator. (default: '\\t')" in help_text
