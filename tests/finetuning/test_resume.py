"""Fine-tuning survives interruption: a run SIGKILLed or SIGTERMed and rerun ends where an
uninterrupted one ends (weights bit for bit, history rows, best model, metrics); SIGTERM saves
the step it stopped at and exits 143 with one line (on a terminal, a line of its own after
the progress bar); a resume inside a shorter last stretch is exact too; one run per output
directory; a resume with other options is refused, `--force` starts over.

The tool runs in subprocesses (real signals) on SST-2 rows of tests/data with a tiny model
over the real 30k vocabulary; a NER run is interrupted in process (its directory put back to
an earlier checkpoint, as a kill right after that checkpoint leaves it)."""

import csv
import json
import math
import os
import pty
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_albert import AlbertConfig
from keras_albert.finetuning.driver import finetune
from keras_albert.finetuning.options import FinetuningOptions
from keras_albert.tasks.question_answering.options import QuestionAnsweringOptions
from keras_albert.training.run_directory import RunDirectory
from tests.helpers import TINY
from tests.text._paths import ALBERT_SPM, DATA_DIR

REPO_ROOT = Path(__file__).resolve().parents[2]
TOOL = REPO_ROOT / "tools" / "finetune.py"
GLUE = os.path.join(DATA_DIR, "glue")
TIMEOUT_S = 240
TRAIN_STEPS = 48  # 3 evaluations of 16 steps


@pytest.fixture(scope="module")
def config_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("config") / "albert_config.json"
    AlbertConfig(**{**TINY, "vocabulary_size": 30000, "num_layers": 2}).to_json(path)
    return str(path)


def command(config_path, output_dir, *extra):
    return [
        sys.executable, str(TOOL), "--dataset", "SST-2",
        "--train-data", os.path.join(GLUE, "sst2_train.tsv"),
        "--eval-data", os.path.join(GLUE, "sst2_dev.tsv"),
        "--config", config_path, "--sentencepiece-model", ALBERT_SPM,
        "--output-dir", str(output_dir), "--sequence-length", "32", "--batch-size", "4",
        "--train-steps", str(TRAIN_STEPS), "--epochs", "3", "--learning-rate", "1e-3",
        "--seed", "3", "--strategy", "cpu", "--jit-compile", "false", "--verbose", "0", *extra,
    ]  # fmt: skip


def _environment():
    env = {key: value for key, value in os.environ.items() if key != "TF_CONFIG"}
    env.update(PYTHONPATH=str(REPO_ROOT), KERAS_BACKEND="tensorflow", TF_CPP_MIN_LOG_LEVEL="2")
    return env


def start(argv):
    return subprocess.Popen(
        argv, env=_environment(), cwd=REPO_ROOT, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip


class TerminalRun:
    """The tool with stdout and stderr a terminal (a pseudo-terminal this test reads), where
    it draws its progress bar."""

    def __init__(self, argv):
        self._terminal, tool_side = pty.openpty()
        self.process = subprocess.Popen(
            argv, env=_environment(), cwd=REPO_ROOT, stdin=subprocess.DEVNULL,
            stdout=tool_side, stderr=tool_side,
        )  # fmt: skip
        os.close(tool_side)
        self._chunks = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self):
        while True:
            try:
                data = os.read(self._terminal, 65536)
            except OSError:  # EIO: the tool has exited, the terminal is closed
                return
            if not data:
                return
            self._chunks.append(data)

    def output(self) -> str:
        # A terminal ends lines with "\r\n"; the bar's own "\r"s stay.
        return b"".join(self._chunks).decode("utf-8", "replace").replace("\r\n", "\n")

    def finish(self, status):
        try:
            self.process.wait(timeout=TIMEOUT_S)
        finally:
            if self.process.poll() is None:
                self.process.kill()
        self._reader.join(timeout=30)
        os.close(self._terminal)
        output = self.output()
        assert self.process.returncode == status, output[-4000:]
        return output


def finish(process, status=0):
    try:
        output, _ = process.communicate(timeout=TIMEOUT_S)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == status, output[-4000:]
    return output


def latest_step(output_dir):
    latest = tf.train.latest_checkpoint(str(Path(output_dir) / "checkpoints"))
    return None if latest is None else int(latest.rsplit("-", 1)[1])


def wait_for_checkpoint(process, output_dir, at_least):
    """Polls until a checkpoint of step >= `at_least` is registered, then stops the process
    (SIGSTOP) before it can go on: the signal the test sends next meets a run mid-way."""
    deadline = time.monotonic() + TIMEOUT_S
    while time.monotonic() < deadline and process.poll() is None:
        step = latest_step(output_dir)
        if step is not None and step >= at_least:
            process.send_signal(signal.SIGSTOP)
            return step
        time.sleep(0.005)
    raise AssertionError(f"no checkpoint >= {at_least}: {process.communicate()[0][-4000:]}")


def history(output_dir):
    with open(Path(output_dir) / "history.csv", encoding="utf-8") as file:
        return list(csv.DictReader(file))


def assert_same_run(actual, expected):
    """Bit for bit: the same batches meet the same weights and dropout masks in the same
    order, and a checkpoint restores exact copies."""
    actual, expected = Path(actual), Path(expected)
    assert history(actual) == history(expected)
    for name in ("metrics.json", "eval_predictions.tsv"):
        assert (actual / name).read_text() == (expected / name).read_text(), name
    summaries = [json.loads((path / "summary.json").read_text()) for path in (actual, expected)]
    for key in ("history", "best", "best_epoch"):
        assert summaries[0][key] == summaries[1][key], key
    weights = [keras.models.load_model(path / "best.keras").get_weights() for path in
               (actual, expected)]  # fmt: skip
    for a, b in zip(*weights, strict=True):
        np.testing.assert_array_equal(a, b)
    final = [
        tf.train.load_checkpoint(tf.train.latest_checkpoint(str(path / "checkpoints")))
        for path in (actual, expected)
    ]
    names = sorted(name for name, _ in tf.train.list_variables(
        tf.train.latest_checkpoint(str(expected / "checkpoints"))))  # fmt: skip
    assert any("model" in name for name in names)
    for name in names:
        # The object graph holds the Python objects' names (two runs in one process: adam_w,
        # adam_w_1), not values.
        if "save_counter" in name or name == "_CHECKPOINTABLE_OBJECT_GRAPH":
            continue
        np.testing.assert_array_equal(final[0].get_tensor(name), final[1].get_tensor(name), name)


@pytest.fixture(scope="module")
def reference(config_path, tmp_path_factory):
    """The uninterrupted run (checkpoints every 4 steps, as the interrupted ones)."""
    output_dir = tmp_path_factory.mktemp("reference") / "run"
    finish(start(command(config_path, output_dir, "--checkpoint-every-steps", "4")))
    return output_dir


@pytest.mark.slow  # processes killed and rerun (CI runs it)
def test_sigkill_then_rerun_ends_like_an_uninterrupted_run(config_path, reference, tmp_path):
    output_dir = tmp_path / "run"
    argv = command(config_path, output_dir, "--checkpoint-every-steps", "4")
    process = start(argv)
    killed_at = wait_for_checkpoint(process, output_dir, 20)  # mid-way through stretch 2
    process.kill()
    process.wait(timeout=30)
    assert killed_at < TRAIN_STEPS and not (output_dir / "summary.json").exists()

    output = finish(start(argv))
    resumed = re.findall(r"resuming from \S+ \(step (\d+)\)", output)
    assert len(resumed) == 1 and int(resumed[0]) >= killed_at, output[-4000:]
    summary = json.loads((output_dir / "summary.json").read_text())
    assert summary["resumed_from_step"] == int(resumed[0])
    assert_same_run(output_dir, reference)


@pytest.mark.slow  # processes killed and rerun (CI runs it)
def test_sigterm_saves_the_step_exits_143_and_the_rerun_loses_nothing(
    config_path, reference, tmp_path
):
    output_dir = tmp_path / "run"
    # Checkpoints only after evaluations: the one SIGTERM writes is its own.
    argv = command(config_path, output_dir, "--checkpoint-every-steps", "none")
    process = start(argv)
    first = wait_for_checkpoint(process, output_dir, 1)
    assert first == 16
    process.send_signal(signal.SIGTERM)
    process.send_signal(signal.SIGCONT)
    output = finish(process, status=143)
    lines = [line for line in output.splitlines() if line.startswith("interrupted:")]
    assert len(lines) == 1, output[-4000:]
    stopped = int(re.search(r"stopped after step (\d+) of 48", lines[0]).group(1))
    assert "rerun the same command to resume" in lines[0] and "Traceback" not in output
    assert latest_step(output_dir) == stopped and 16 <= stopped < TRAIN_STEPS
    assert f"ckpt-{stopped}" in lines[0]
    assert not (output_dir / "run.lock").exists()

    output = finish(start(argv))
    assert f"(step {stopped})" in output  # zero steps lost
    # The history rows and the final weights are the reference's (whose checkpoints came
    # every 4 steps: where a run checkpoints does not change what it computes).
    assert history(output_dir) == history(reference)
    final = keras.models.load_model(output_dir / "best.keras").get_weights()
    expected = keras.models.load_model(reference / "best.keras").get_weights()
    for a, b in zip(final, expected, strict=True):
        np.testing.assert_array_equal(a, b)
    assert (output_dir / "metrics.json").read_text() == (reference / "metrics.json").read_text()


@pytest.mark.slow  # processes killed and rerun (CI runs it)
def test_on_a_terminal_the_interruption_starts_its_own_line_and_the_rerun_names_its_steps(
    config_path, tmp_path
):
    """SIGTERM while the bar of the second stretch is drawn (its line still open): the
    `interrupted:` line starts a line of its own. The rerun, logged to a pipe, prints lines
    (no bar, no terminal codes) and its heading starts at the first step it trains."""
    output_dir = tmp_path / "run"
    argv = [*command(config_path, output_dir, "--checkpoint-every-steps", "none"), "--verbose",
            "1"]  # fmt: skip
    run = TerminalRun(argv)
    bar = re.compile(r"evaluation 2/3: [^\n]*\n[^\n]*/16")  # its heading, then its bar
    deadline = time.monotonic() + TIMEOUT_S
    while not bar.search(run.output()) and run.process.poll() is None:
        assert time.monotonic() < deadline, run.output()[-4000:]
        time.sleep(0.005)
    run.process.send_signal(signal.SIGTERM)
    lines = run.finish(status=143).split("\n")
    (index,) = [i for i, line in enumerate(lines) if "interrupted:" in line]
    assert lines[index].startswith("interrupted: "), lines[index - 1 :]
    assert "/16" in lines[index - 1] and "16/16" not in lines[index - 1]  # an unfinished bar
    stopped = int(re.search(r"stopped after step (\d+) of 48", lines[index]).group(1))
    assert 16 < stopped < 32

    output = finish(start(argv))  # a pipe: not a terminal
    assert not re.search(r"[\r\b\x1b]", output), output[-4000:]
    assert f"evaluation 2/3: steps {stopped + 1}-32 of 48\n" in output, output[-4000:]
    # A line every 2 steps (stretches of 16) from the step it resumes at, but the evaluations'.
    steps = [int(step) for step in re.findall(r"^step (\d+)/48 · ", output, re.MULTILINE)]
    assert steps == [step for step in range(stopped + 1, 48) if step % 2 == 0 and step % 16]


def test_one_run_per_directory_and_a_dead_holder_is_taken_over(config_path, tmp_path):
    output_dir = tmp_path / "run"
    with RunDirectory(str(output_dir)).lock():  # this test process is a live run
        output = finish(start(command(config_path, output_dir)), status=1)
    lines = [line for line in output.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "is held by another run" in lines[0], output[-4000:]
    assert f"pid {os.getpid()}" in lines[0] and "Traceback" not in output
    assert not output_dir.exists()  # the lock's directory, left empty, is removed

    # A lock left by a killed run (a pid that no longer runs, on this host) is taken over.
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    output_dir.mkdir()
    (output_dir / "run.lock").write_text(f"{dead.pid} {os.uname().nodename}\n")
    options = FinetuningOptions(
        "SST-2", os.path.join(GLUE, "sst2_train.tsv"), os.path.join(GLUE, "sst2_dev.tsv"),
        str(output_dir), config=config_path, vocabulary=ALBERT_SPM,
        sequence_length=32, batch_size=4, train_steps=2, num_evaluations=1, verbose=0,
    )  # fmt: skip
    finetune(options)
    assert not (output_dir / "run.lock").exists() and (output_dir / "summary.json").exists()


@pytest.mark.slow
def test_a_resume_with_other_options_is_refused_and_force_starts_over(
    config_path, tmp_path, capsys
):
    base = dict(
        dataset="SST-2", train_data=os.path.join(GLUE, "sst2_train.tsv"),
        eval_data=os.path.join(GLUE, "sst2_dev.tsv"), output_dir=str(tmp_path / "run"),
        config=config_path, vocabulary=ALBERT_SPM, sequence_length=32,
        batch_size=4, train_steps=4, num_evaluations=2, verbose=0,
    )  # fmt: skip
    first = finetune(FinetuningOptions(**base))
    assert first["resumed_from_step"] is None
    for change in ({"seed": 1}, {"batch_size": 2}, {"sequence_length": 16}):
        name, value = next(iter(change.items()))
        with pytest.raises(ValueError, match=rf"\({name}: \S+ -> {value}\).*`force` to start"):
            finetune(FinetuningOptions(**{**base, **change}))
    # Options that do not change the run may: a finished run, rerun, trains nothing more.
    again = finetune(FinetuningOptions(**{**base, "keep_checkpoints": 5}))
    assert again["resumed_from_step"] == 4 and again["history"] == first["history"]
    assert len(history(tmp_path / "run")) == 2

    capsys.readouterr()
    forced = finetune(FinetuningOptions(**{**base, "seed": 1, "force": True}))
    assert "force: removed checkpoints, history.csv, logs, best.keras" in capsys.readouterr().out
    assert forced["resumed_from_step"] is None and forced["history"] != first["history"]
    assert len(history(tmp_path / "run")) == 2 and latest_step(tmp_path / "run") == 4


@pytest.mark.slow
def test_a_resume_inside_a_shorter_last_stretch_ends_like_the_uninterrupted_run(
    config_path, tmp_path
):
    """7 steps, 2 evaluations: stretches of 4 and 3 steps. A run put back to its step-6
    checkpoint (inside the shorter last stretch) trains step 7 alone, averages the stretch's
    3 steps, and ends as the uninterrupted run; rerun when finished, it trains nothing."""
    options = dict(
        dataset="SST-2", train_data=os.path.join(GLUE, "sst2_train.tsv"),
        eval_data=os.path.join(GLUE, "sst2_dev.tsv"), config=config_path,
        vocabulary=ALBERT_SPM, sequence_length=32, batch_size=4, train_steps=7,
        num_evaluations=2, learning_rate=1e-3, checkpoint_every_steps=3, keep_checkpoints=10,
        verbose=0,
    )  # fmt: skip
    reference = tmp_path / "reference"
    expected = finetune(FinetuningOptions(output_dir=str(reference), **options))
    assert [row["step"] for row in expected["history"]] == [4, 7]
    # A tiny fresh model's loss stays near ln 2: the last row is a mean over its 3 steps
    # (summed over 3, divided by 4 it would be about 0.52).
    (last,) = [row for row in history(reference) if row["step"] == "7"]
    assert float(last["loss"]) == pytest.approx(math.log(2), abs=0.08)
    assert expected["train_steps"] == 7 and latest_step(reference) == 7
    interrupted = tmp_path / "interrupted"
    shutil.copytree(reference, interrupted)
    (interrupted / "checkpoints" / "checkpoint").write_text(
        'model_checkpoint_path: "ckpt-6"\nall_model_checkpoint_paths: "ckpt-6"\n'
    )
    for name in ("summary.json", "metrics.json", "eval_predictions.tsv"):
        (interrupted / name).unlink()

    summary = finetune(FinetuningOptions(output_dir=str(interrupted), **options))
    assert summary["resumed_from_step"] == 6
    assert_same_run(interrupted, reference)

    again = finetune(FinetuningOptions(output_dir=str(interrupted), **options))
    assert again["resumed_from_step"] == 7 and again["history"] == expected["history"]
    assert history(interrupted) == history(reference)


def _task_data(task: str, tmp_path: Path) -> tuple[str, dict, tuple[str, ...]]:
    """(data file, task options, the files the best model writes) of a small real sample."""
    if task == "ner":
        lines = Path(DATA_DIR, "ner", "wnut17_dev.conll").read_text(encoding="utf-8")
        data = tmp_path / "ner.conll"
        data.write_text("".join(lines.splitlines(keepends=True)[:160]), encoding="utf-8")
        return str(data), {"sequence_length": 32}, ("eval_predictions.conll",)
    data = os.path.join(DATA_DIR, "squad", "dev-v2.0-small.json")  # 14 questions
    windows = {
        "sequence_length": 32,
        "task_options": QuestionAnsweringOptions(max_query_length=12, doc_stride=8),
    }
    return data, windows, ("predictions.json", "null_odds.json", "nbest_predictions.json")


@pytest.mark.parametrize("task", ["ner", "squad_v2"])
@pytest.mark.slow
def test_resumed_from_an_earlier_checkpoint_ends_like_the_uninterrupted_run(
    task, config_path, tmp_path
):
    """The directory a run SIGKILLed right after its step-3 checkpoint leaves: later
    checkpoints unregistered, history rows and a best model of later steps (they are
    written before the next checkpoint). The rerun drops the rows, trains steps 4-8 again
    and ends as the uninterrupted run, bit for bit (NER, and SQuAD v2 with its windows)."""
    data, task_options, predictions = _task_data(task, tmp_path)
    options = dict(
        dataset=task, train_data=data, eval_data=data, config=config_path,
        vocabulary=ALBERT_SPM, batch_size=4, train_steps=8,
        num_evaluations=2, learning_rate=1e-3, checkpoint_every_steps=3, keep_checkpoints=10,
        verbose=0, **task_options,
    )  # fmt: skip
    reference = tmp_path / "reference"
    finetune(FinetuningOptions(output_dir=str(reference), **options))
    interrupted = tmp_path / "interrupted"
    shutil.copytree(reference, interrupted)
    checkpoints = interrupted / "checkpoints"
    assert latest_step(interrupted) == 8
    for later in ("ckpt-4", "ckpt-6", "ckpt-8"):  # evaluations after 4 and 8, every 3
        assert list(checkpoints.glob(f"{later}.*"))
    (checkpoints / "checkpoint").write_text(
        'model_checkpoint_path: "ckpt-3"\nall_model_checkpoint_paths: "ckpt-3"\n'
    )
    # Step 3 precedes the first evaluation: no best model yet.
    for name in ("best.keras", "summary.json", "metrics.json", *predictions):
        (interrupted / name).unlink()
    rows_before = len(history(interrupted))

    summary = finetune(FinetuningOptions(output_dir=str(interrupted), **options))
    assert summary["resumed_from_step"] == 3 and rows_before == 2
    assert history(interrupted) == history(reference)
    assert (interrupted / "metrics.json").read_text() == (reference / "metrics.json").read_text()
    for name in predictions:
        assert (interrupted / name).read_text() == (reference / name).read_text(), name
    weights = [
        keras.models.load_model(p / "best.keras").get_weights() for p in (interrupted, reference)
    ]
    for a, b in zip(*weights, strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.slow  # two runs, one of them resumed: ≈ 23 s (CI runs it)
def test_a_float32_run_resumes_in_mixed_precision(config_path, tmp_path):
    """The same interrupted NER run (step 3 of 8) resumed in mixed_bfloat16 and in
    mixed_float16: the checkpoint (float32 weights, the unwrapped optimizer) loads under
    either, the run goes on from step 3 and its losses follow the float32 run's."""
    data, task_options, _ = _task_data("ner", tmp_path)
    options = dict(
        dataset="ner", train_data=data, eval_data=data, config=config_path,
        vocabulary=ALBERT_SPM, batch_size=4, train_steps=8, num_evaluations=2, learning_rate=1e-3,
        checkpoint_every_steps=3, keep_checkpoints=10, verbose=0, **task_options,
    )  # fmt: skip
    reference = tmp_path / "reference"
    finetune(FinetuningOptions(output_dir=str(reference), **options))
    for precision in ("mixed_bfloat16", "mixed_float16"):
        resumed = tmp_path / precision
        shutil.copytree(reference, resumed)
        (resumed / "checkpoints" / "checkpoint").write_text(
            'model_checkpoint_path: "ckpt-3"\nall_model_checkpoint_paths: "ckpt-3"\n'
        )
        summary = finetune(
            FinetuningOptions(output_dir=str(resumed), precision=precision, **options)
        )
        assert summary["resumed_from_step"] == 3 and summary["precision"] == precision
        recorded = json.loads((resumed / "run.json").read_text())
        assert recorded["precision"] == precision
        expected, actual = history(reference), history(resumed)
        assert [row["step"] for row in actual] == [row["step"] for row in expected]
        for row, reference_row in zip(actual, expected, strict=True):
            # Observed: within 2e-3 of float32 (both precisions).
            assert abs(float(row["loss"]) - float(reference_row["loss"])) < 0.05, precision
        best = keras.models.load_model(resumed / "best.keras")
        assert best.backbone.dtype_policy.name == precision
