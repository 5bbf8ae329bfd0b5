"""The README's "Step by step" block runs as written, so that it cannot drift from the tools.

The block between the `step-by-step` markers of README.md is run command by command with bash
in a scratch directory that looks like the repository root (`tools/` and `data/` linked in, a
`.venv/bin/activate` that puts this interpreter first on PATH). Each command is run exactly as
the README spells it, with a few budget flags appended (`SMALLER_BUDGETS`: the tools' own
documented flags; argparse keeps the last value given), so the whole block takes well under
a minute of steps.
"""

import json
import os
import pathlib
import re
import shlex
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[1]
BEGIN = "<!-- step-by-step: begin"
END = "<!-- step-by-step: end -->"

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
}  # fmt: skip


def readme_commands() -> list[str]:
    """The commands of the README's step-by-step block: continuation lines joined, comments
    and blank lines dropped."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    start, end = text.index(BEGIN), text.index(END)
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
    for name in ("tools", "data"):
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


def test_the_step_by_step_block_names_only_tools_with_a_budget():
    tools = [re.search(r"tools/(\w+\.py)", c) for c in readme_commands()]
    named = [match.group(1) for match in tools if match]
    assert named == list(SMALLER_BUDGETS), named


def test_every_step_by_step_command_runs_as_written(tmp_path):
    environment = scratch_checkout(tmp_path)
    commands = readme_commands()
    assert commands[0] == ". .venv/bin/activate"
    script = []
    for command in commands:
        tool = re.search(r"tools/(\w+\.py)", command)
        extra = SMALLER_BUDGETS[tool.group(1)] if tool else ()
        script.append(" ".join([command, *map(shlex.quote, extra)]))
    # One shell, as a user types them: `activate` holds for the commands after it; -e stops
    # at the first failing command and -x names it in the output.
    completed = subprocess.run(
        ["bash", "-exc", "\n".join(script)],
        cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=1800,
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr[-5000:]

    # What the block promises: a tokenizer, shards, a pretraining run at its (shrunk) step
    # budget, a fine-tuned best model and a TF Serving version directory.
    assert (tmp_path / "runs" / "spm" / "austen.model").is_file()
    assert list((tmp_path / "runs" / "data").glob("train-*.tfrecord"))
    pretraining = json.loads((tmp_path / "runs" / "pretrain" / "summary.json").read_text())
    assert pretraining["step"] == 4
    assert (tmp_path / "runs" / "sst2" / "best.keras").is_file()
    assert (tmp_path / "saved_models" / "sst2" / "1" / "saved_model.pb").is_file()
