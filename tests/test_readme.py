"""The README's "Step by step" block and its Chinese run run as written, so that they cannot
drift from the tools.

The block between the `step-by-step` (or `chinese-run`) markers of README.md is run command by
command with bash in a scratch directory that looks like the repository root (`tools/`, `data/`
and `tests/` linked in, a `.venv/bin/activate` that puts this interpreter first on PATH). Each
command is run exactly as the README spells it, with a few budget flags appended
(`SMALLER_BUDGETS`: the tools' own documented flags; argparse keeps the last value given), so
each block takes well under a minute of steps.
"""

import json
import os
import pathlib
import re
import shlex
import subprocess
import sys

import numpy as np

REPO = pathlib.Path(__file__).resolve().parents[1]
BLOCKS = ("step-by-step", "chinese-run")

# Flags appended to the command of each tool (by script name); every tool the block runs is
# listed, so a command added to the README without a budget here fails the test.
SMALLER_BUDGETS = {
    "train_tokenizer.py": (),
    "create_pretraining_data.py": ("--dupe-factor", "1"),
    "pretrain.py": (
        "--train-steps", "4", "--batch-size", "4", "--log-every-steps", "2",
        "--checkpoint-every-steps", "2",
    ),
    "finetune.py": ("--train-steps", "4", "--batch-size", "4"),
    "export_saved_model.py": (),
    "split_dataset.py": (),
    "probe_saved_model.py": ("--repeats", "0"),
}  # fmt: skip
# The tools each block runs, in order.
BLOCK_TOOLS = {
    "step-by-step": [
        "train_tokenizer.py", "create_pretraining_data.py", "pretrain.py", "finetune.py",
        "export_saved_model.py",
    ],
    "chinese-run": [
        "split_dataset.py", "create_pretraining_data.py", "pretrain.py", "finetune.py",
        "export_saved_model.py", "probe_saved_model.py",
    ],
}  # fmt: skip


def readme_commands(block_name: str = "step-by-step") -> list[str]:
    """The commands of one of the README's `BLOCKS`: continuation lines joined, comments and
    blank lines dropped."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    start = text.index(f"<!-- {block_name}: begin")
    end = text.index(f"<!-- {block_name}: end -->")
    (block,) = re.findall(r"```bash\n(.*?)```", text[start:end], flags=re.S)
    commands, current = [], ""
    for line in block.splitlines():
        if not current and (not line.strip() or line.lstrip().startswith("#")):
            continue
        current += line.rstrip("\\").rstrip() + " " if line.endswith("\\") else line
        if not line.endswith("\\"):
            commands.append(" ".join(current.split()))
            current = ""
    assert not current, "the block ends inside a continued line"
    return commands


def scratch_checkout(root: pathlib.Path) -> dict:
    """`root` as the repository root seen by the README; returns the environment to run in."""
    for name in ("tools", "data", "tests"):
        (root / name).symlink_to(REPO / name)
    bin_dir = root / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    python = bin_dir / "python"
    python.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} "$@"\n')
    python.chmod(0o755)
    (bin_dir / "activate").write_text(f"export PATH={shlex.quote(str(bin_dir))}:$PATH\n")
    environment = {k: v for k, v in os.environ.items() if not k.startswith("KERAS_ALBERT_")}
    environment.update(PYTHONPATH=str(REPO), KERAS_BACKEND="tensorflow", TF_CPP_MIN_LOG_LEVEL="2")
    return environment


def test_the_blocks_name_only_tools_with_a_budget():
    for block_name in BLOCKS:
        tools = [re.search(r"tools/(\w+\.py)", c) for c in readme_commands(block_name)]
        named = [match.group(1) for match in tools if match]
        assert named == BLOCK_TOOLS[block_name], named
        assert set(named) <= set(SMALLER_BUDGETS), named


def run_block(block_name: str, root: pathlib.Path) -> subprocess.CompletedProcess:
    """The block's commands in one shell, each with its tool's `SMALLER_BUDGETS`."""
    environment = scratch_checkout(root)
    commands = readme_commands(block_name)
    assert commands[0] == ". .venv/bin/activate"
    script = []
    for command in commands:
        tool = re.search(r"tools/(\w+\.py)", command)
        extra = SMALLER_BUDGETS[tool.group(1)] if tool else ()
        script.append(" ".join([command, *map(shlex.quote, extra)]))
    # One shell, as a user types them: `activate` holds for the commands after it; -e stops
    # at the first failing command and -x names it in the output.
    return subprocess.run(
        ["bash", "-exc", "\n".join(script)],
        cwd=root, env=environment, capture_output=True, text=True, timeout=1800,
    )  # fmt: skip


def test_every_step_by_step_command_runs_as_written(tmp_path):
    completed = run_block("step-by-step", tmp_path)
    assert completed.returncode == 0, completed.stderr[-5000:]

    # What the block promises: a tokenizer, shards, a pretraining run at its (shrunk) step
    # budget, a fine-tuned best model and a TF Serving version directory.
    assert (tmp_path / "runs" / "spm" / "austen.model").is_file()
    assert list((tmp_path / "runs" / "data").glob("train-*.tfrecord"))
    pretraining = json.loads((tmp_path / "runs" / "pretrain" / "summary.json").read_text())
    assert pretraining["step"] == 4
    assert (tmp_path / "runs" / "sst2" / "best.keras").is_file()
    assert (tmp_path / "saved_models" / "sst2" / "1" / "saved_model.pb").is_file()


def test_the_chinese_run_serves_what_it_fine_tuned(tmp_path):
    completed = run_block("chinese-run", tmp_path)
    assert completed.returncode == 0, completed.stderr[-5000:]
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
    expected = _keras_probabilities(zh / "finetune", texts)
    probed = np.array([p["probabilities"] for p in served["predictions"]])
    np.testing.assert_allclose(probed, expected, atol=1e-5, rtol=0)


def _keras_probabilities(run_dir: pathlib.Path, texts: list[str]) -> np.ndarray:
    import keras

    from keras_albert import AlbertTokenizer

    model = keras.models.load_model(run_dir / "best.keras", compile=False)
    tokenizer = AlbertTokenizer(str(run_dir / "vocab.txt"))
    rows = []
    for text in texts:
        ids = np.array([[tokenizer.cls_id, *tokenizer.encode(text), tokenizer.sep_id]])
        inputs = {"token_ids": ids, "segment_ids": 0 * ids, "padding_mask": 1 + 0 * ids}
        logits = keras.ops.convert_to_numpy(model(inputs))
        rows.append(np.exp(logits[0]) / np.exp(logits[0]).sum())
    return np.array(rows)
