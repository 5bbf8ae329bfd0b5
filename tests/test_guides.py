"""The guides' and the README's marked blocks run as written, so that they cannot drift from
the commands.

A fenced block right after a `<!-- test: NAME -->` comment in README.md or docs/guides/*.md
belongs to the group NAME; the blocks of one group are run in the order they appear, in one
shell (bash) or one interpreter (python), in a scratch directory that looks like the
repository root after `bash tools/run.sh main` (`data/` and `tests/` linked in; a `.venv/bin/`
whose `python` is this interpreter and whose `keras-albert` is `python -m keras_albert` from
this checkout, so that the test needs no console script installed; its `activate` puts it first
on PATH). Each command is run exactly as the guide spells it (`keras-albert COMMAND ...`), with
a few budget flags appended (`SMALLER_BUDGETS`: the commands' own documented flags; argparse
keeps the last value given; before a `--` that starts Beam's options), so that every group
takes well under a minute of steps.

The guides continue each other as a user follows them: one tiny pretraining run
(docs/guides/pretraining.md) is made once for this module and fine-tuned, served and used from
Python by the other groups. The Chinese run, the fine-tuning guide's four other tasks and the
checkpoint conversions are marked slow (`--run-slow`): each costs as much as the rest.
"""

import json
import os
import pathlib
import re
import shlex
import subprocess
import sys

import numpy as np
import onnxruntime
import pytest
import sentencepiece

REPO = pathlib.Path(__file__).resolve().parents[1]
GUIDES = sorted((REPO / "docs" / "guides").glob("*.md"))
DOCUMENTS = ["README.md", *(path.relative_to(REPO).as_posix() for path in GUIDES)]
MARKED_BLOCK = re.compile(r"<!-- test: ([\w-]+) -->\n```(bash|python)\n(.*?)```", flags=re.S)

# A `keras-albert COMMAND` line of a block.
COMMAND = re.compile(r"(?:^|[\s;&|])keras-albert ([a-z-]+)")
# Flags appended to each `keras-albert` command (by name); every command a block runs is
# listed, so a command added to a guide without a budget here fails the test.
SMALLER_BUDGETS = {
    "train-tokenizer": (),
    "create-data": ("--dupe-factor", "1"),
    "pretrain": (
        "--train-steps", "4", "--batch-size", "4", "--log-every-steps", "2",
        "--checkpoint-every-steps", "2",
    ),
    # Two steps of a larger batch: the evaluation (twice, the last with the best model) runs at
    # the training batch size, and it is most of a short run.
    "finetune": ("--train-steps", "2", "--batch-size", "32"),
    "export": (),
    "split": (),
    "probe": ("--repeats", "0"),
    "convert": (),
}  # fmt: skip
# The groups and the commands each runs, in order: a block added, removed or renamed in a
# guide must be named here too (and so gets a test that runs it).
GROUP_COMMANDS = {
    "english-pretraining": ["train-tokenizer", "create-data", "create-data", "pretrain"],
    "english-finetuning": ["finetune"],
    "english-tasks": ["finetune"] * 4,
    "english-serving": ["export", "probe"],
    "english-checkpoints": ["convert"] * 3 + ["export"] * 2,
    "readme-python": [],
    "backends-python": [],  # run on JAX by tests/test_doc_blocks.py
    "beam-data": ["create-data"],
    "chinese": ["split", "create-data", "pretrain", "finetune", "export", "probe"],
}  # fmt: skip


def marked_blocks() -> dict[str, list[tuple[str, str]]]:
    """{group: [(language, text), ...]} over `DOCUMENTS`, in document order."""
    groups = {}
    for document in DOCUMENTS:
        text = (REPO / document).read_text(encoding="utf-8")
        for name, language, block in MARKED_BLOCK.findall(text):
            groups.setdefault(name, []).append((language, block))
    return groups


def group_commands(name: str) -> list[str]:
    """The bash commands of one group: continuation lines joined, comments and blank lines
    dropped."""
    commands, current = [], ""
    for language, block in marked_blocks()[name]:
        assert language == "bash", f"{name} mixes bash and {language}"
        for line in block.splitlines():
            if not current and (not line.strip() or line.lstrip().startswith("#")):
                continue
            current += line.rstrip("\\").rstrip() + " " if line.endswith("\\") else line
            if not line.endswith("\\"):
                commands.append(" ".join(current.split()))
                current = ""
        assert not current, f"a block of {name} ends inside a continued line"
    return commands


def scratch_checkout(root: pathlib.Path) -> dict:
    """`root` as the repository root seen by the guides; returns the environment to run in."""
    for name in ("data", "tests"):
        (root / name).symlink_to(REPO / name)
    bin_dir = root / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    # What `pip install -e .` puts there: the interpreter and the console script, here the
    # checkout's `python -m keras_albert` (PYTHONPATH, `guide_environment`).
    python = shlex.quote(sys.executable)
    for name, command in (("python", python), ("keras-albert", f"{python} -m keras_albert")):
        (bin_dir / name).write_text(f'#!/bin/sh\nexec {command} "$@"\n')
        (bin_dir / name).chmod(0o755)
    (bin_dir / "activate").write_text(f"export PATH={shlex.quote(str(bin_dir))}:$PATH\n")
    return guide_environment()


def guide_environment() -> dict:
    """This process's environment for the commands: the checkout first on PYTHONPATH, the
    TensorFlow backend, no KERAS_ALBERT_ settings of the caller."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("KERAS_ALBERT_")}
    path = [str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]
    environment.update(
        PYTHONPATH=os.pathsep.join(path), KERAS_BACKEND="tensorflow", TF_CPP_MIN_LOG_LEVEL="2"
    )
    return environment


def run_group(name: str, root: pathlib.Path) -> subprocess.CompletedProcess:
    """The group's commands in one shell, each with its command's `SMALLER_BUDGETS`; stops at
    the first failing command and fails the test with the end of its output."""
    # The first group run in `root` makes it a scratch checkout; the next ones continue there.
    environment = guide_environment() if (root / ".venv").exists() else scratch_checkout(root)
    commands = group_commands(name)
    assert commands[0] == ". .venv/bin/activate", f"{name} must start by activating .venv"
    script = []
    for command in commands:
        found = COMMAND.search(command)
        extra = SMALLER_BUDGETS[found.group(1)] if found else ()
        # Before the `--` that starts Beam's own options (`--engine beam`), if any.
        head, beam_options = (command.split(" -- ", 1) + [None])[:2]
        command = " ".join([head, *map(shlex.quote, extra)])
        script.append(command if beam_options is None else f"{command} -- {beam_options}")
    # One shell, as a user types them: `activate` holds for the commands after it; -e stops
    # at the first failing command and -x names it in the output.
    completed = subprocess.run(
        ["bash", "-exc", "\n".join(script)],
        cwd=root, env=environment, capture_output=True, text=True, timeout=1800,
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr[-5000:]
    return completed


def test_every_marked_group_is_run_and_names_only_commands_with_a_budget():
    groups = marked_blocks()
    assert sorted(groups) == sorted(GROUP_COMMANDS), sorted(groups)
    for name, commands in GROUP_COMMANDS.items():
        if groups[name][0][0] == "python":
            continue
        found = [COMMAND.search(command) for command in group_commands(name)]
        named = [match.group(1) for match in found if match]
        assert named == commands, (name, named)
        assert set(named) <= set(SMALLER_BUDGETS), named
        # The scripts of tools/ are for a checkout; the guides name the installed command.
        assert not [command for command in group_commands(name) if "tools/" in command], name


@pytest.fixture(scope="module")
def english(tmp_path_factory) -> pathlib.Path:
    """The pretraining guide, run once: tokenizer, data, a 4-step pretraining with held-out
    evaluation."""
    root = tmp_path_factory.mktemp("guides")
    completed = run_group("english-pretraining", root)
    # The guide's last command prints the run's step.
    assert completed.stdout.strip().splitlines()[-1] == "4"
    assert (root / "runs" / "spm" / "austen.model").is_file()
    assert list((root / "runs" / "data").glob("train-*.tfrecord"))
    summary = json.loads((root / "runs" / "pretrain" / "summary.json").read_text())
    assert summary["step"] == 4 and "eval" in summary, summary
    return root


@pytest.fixture(scope="module")
def sst2(english) -> pathlib.Path:
    """The fine-tuning guide's SST-2 run, from the pretraining guide's run."""
    run_group("english-finetuning", english)
    assert (english / "runs" / "sst2" / "best.keras").is_file()
    return english


@pytest.mark.slow
def test_the_pretraining_guide_runs_as_written(english):
    pass  # the fixture runs and checks it; this names it in the report


# Four more fine-tunings (each evaluates its whole sample file): as long as the rest of this
# module together, so gated like the other long tests; `tests/finetuning/test_tasks.py` runs
# every task end to end in the default suite.
@pytest.mark.slow
def test_the_finetuning_guide_runs_every_task_as_written(english):
    run_group("english-tasks", english)
    for run in ("my_csv", "squad", "race", "ner"):
        summary = json.loads((english / "runs" / run / "summary.json").read_text())
        assert summary["train_steps"] == 2, (run, summary)
        assert (english / "runs" / run / "best.keras").is_file()


@pytest.mark.slow
def test_the_checkpoints_guide_converts_the_finetuned_model(sst2):
    run_group("english-checkpoints", sst2)
    assert (sst2 / "runs" / "sst2_hf" / "config.json").is_file()
    assert (sst2 / "runs" / "sst2_from_hf.keras").is_file()
    assert (sst2 / "runs" / "sst2_keras_hub" / "config.json").is_file()
    assert (sst2 / "saved_models" / "sst2_lite" / "model.tflite").is_file()
    # The ONNX model gives the fine-tuned model's probabilities, tokenized as the guide says:
    # SentencePiece alone with the file beside it.
    onnx_dir = sst2 / "saved_models" / "sst2_onnx"
    pieces = sentencepiece.SentencePieceProcessor(model_file=str(onnx_dir / "sentencepiece.model"))
    session = onnxruntime.InferenceSession(str(onnx_dir / "model.onnx"))
    texts = ["A charming journey.", "it 's a bore ."]
    for text, expected in zip(
        texts, _keras_probabilities(sst2 / "runs" / "sst2", "tokenizer.model", texts), strict=True
    ):
        ids = [pieces.piece_to_id("[CLS]"), *pieces.encode(text), pieces.piece_to_id("[SEP]")]
        inputs = {"token_ids": np.array([ids], np.int32)}
        inputs |= {
            "segment_ids": 0 * inputs["token_ids"],
            "padding_mask": 1 + 0 * inputs["token_ids"],
        }
        logits = session.run(["logits"], inputs)[0][0]
        np.testing.assert_allclose(
            np.exp(logits) / np.exp(logits).sum(), expected, atol=1e-4, rtol=0
        )


@pytest.mark.slow
def test_the_pretraining_data_at_scale_guide_runs_beam_on_this_machine(tmp_path):
    # Two DirectRunner worker processes; the shards equal the local engine's
    # (tests/pretraining/data/test_beam.py).
    run_group("beam-data", tmp_path)
    data = tmp_path / "runs" / "beam_data"
    summary = json.loads((data / "pretraining.summary.json").read_text())
    assert summary["num_examples"] > 1000 and summary["num_files"] == 2, summary
    assert len(list(data.glob("pretraining-*-of-00004.tfrecord"))) == 4


@pytest.mark.slow
def test_the_serving_guide_serves_the_finetuned_model(sst2):
    completed = run_group("english-serving", sst2)
    assert (sst2 / "saved_models" / "sst2" / "1" / "saved_model.pb").is_file()
    served = json.loads(completed.stdout.strip().splitlines()[-1])
    assert served["keras_albert_imported"] is False
    texts = [p["text"] for p in served["predictions"]]
    expected = _keras_probabilities(sst2 / "runs" / "sst2", "tokenizer.model", texts)
    probed = np.array([p["probabilities"] for p in served["predictions"]])
    np.testing.assert_allclose(probed, expected, atol=1e-5, rtol=0)


@pytest.mark.slow
def test_the_readme_python_example_fine_tunes_and_exports(english, monkeypatch, capsys):
    ((language, code),) = marked_blocks()["readme-python"]
    assert language == "python"
    # In this process (TensorFlow is imported already), from the guides' scratch root.
    monkeypatch.chdir(english)
    exec(compile(code, "README.md", "exec"), {"__name__": "__main__"})
    path = capsys.readouterr().out.strip().splitlines()[-1]
    assert path == os.path.join("saved_models", "my_classifier", "1")
    assert (english / path / "saved_model.pb").is_file()


# A pretraining run of its own (another vocabulary): as long as the English guides together.
# The WordPiece path is in the default suite piecewise: tests/text (tokenizer, offsets),
# tests/export/test_wordpiece_task_exports.py (fine-tuned by the tool, exported and served).
@pytest.mark.slow
def test_the_chinese_run_serves_what_it_fine_tuned(tmp_path):
    completed = run_group("chinese", tmp_path)
    zh = tmp_path / "runs" / "zh"
    assert (zh / "chnsenticorp" / "train.csv").is_file() and list(zh.glob("data/train-*"))
    assert json.loads((zh / "pretrain" / "summary.json").read_text())["step"] == 4
    # The vocabulary travelled: recorded by pretraining, copied by fine-tuning, in the export.
    vocabulary = (REPO / "tests" / "data" / "zh" / "vocab_chinese.txt").read_bytes()
    assert (zh / "finetune" / "vocab.txt").read_bytes() == vocabulary
    export = tmp_path / "saved_models" / "chnsenticorp" / "1"
    assert (export / "assets" / "vocab.txt").read_bytes() == vocabulary
    # The probe's answer (its one JSON line) is the fine-tuned model's, from a process that
    # never imported keras_albert.
    served = json.loads(completed.stdout.strip().splitlines()[-1])
    assert served["keras_albert_imported"] is False
    texts = [p["text"] for p in served["predictions"]]
    assert texts == ["房间干净，服务很热情。", "隔音太差，早餐也不好吃。"]
    expected = _keras_probabilities(zh / "finetune", "vocab.txt", texts)
    probed = np.array([p["probabilities"] for p in served["predictions"]])
    np.testing.assert_allclose(probed, expected, atol=1e-5, rtol=0)


def _keras_probabilities(run_dir: pathlib.Path, vocabulary: str, texts: list[str]) -> np.ndarray:
    import keras

    from keras_albert import AlbertTokenizer

    model = keras.models.load_model(run_dir / "best.keras", compile=False)
    tokenizer = AlbertTokenizer(str(run_dir / vocabulary))
    rows = []
    for text in texts:
        ids = np.array([[tokenizer.cls_id, *tokenizer.encode(text), tokenizer.sep_id]])
        inputs = {"token_ids": ids, "segment_ids": 0 * ids, "padding_mask": 1 + 0 * ids}
        logits = keras.ops.convert_to_numpy(model(inputs))
        rows.append(np.exp(logits[0]) / np.exp(logits[0]).sum())
    return np.array(rows)
