"""Every fenced code block of README.md and docs/ is accounted for, and every flag a shell block
gives the project's commands exists.

The convention, on the line right before a block's opening fence:

- `<!-- test: NAME -->`: a test runs the block (group NAME): the guides' groups in
  `tests/test_guides.py`, the Python groups of `PYTHON_GROUPS` here;
- `<!-- not run: REASON -->`: no test runs it, for the reason given (a cloud runner, a GPU or
  TPU, a download, a released checkpoint, minutes of compute).

A block whose info string is `text` (a directory listing, a log line, a config file) is not
code and needs neither. Every other block must say its language (`bash`, `sh`, `shell` or
`python`) and carry one of the two markers.

Every shell block, run or not, is checked against the parsers: each `--flag` given to
`keras-albert SUB`, `python -m keras_albert SUB`, `python tools/X.py` or the main job
(`bash tools/run.sh main`, `python -m examples.main`) must be an option string of that command's
argparse parser (before a lone `--`, after which Beam's own options follow).
"""

import argparse
import pathlib
import re
import shlex
import sys

import pytest

from keras_albert.commands import COMMANDS, command_module
from tests.test_commands import SCRIPTS
from tests.test_guides import marked_blocks

REPO = pathlib.Path(__file__).resolve().parents[1]
SHELL = ("bash", "sh", "shell")
FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", flags=re.S | re.M)
MARKER = re.compile(r"<!-- (test|not run): ?(.*?) -->")
# Python groups run here: every block of a group in order, as one program, in this process (its
# backend, TensorFlow; tests/backends/ runs the same models on JAX and PyTorch) from a scratch
# directory with `tests/` linked in.
PYTHON_GROUPS = ("backends-python",)
# The name `command_of` gives the main job's command lines.
MAIN_JOB = "the main job"


def documents() -> list[pathlib.Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


def fenced_blocks(path: pathlib.Path) -> list[tuple[int, str, str | None, str, str]]:
    """(line, language, marker kind or None, marker text, code) of each fenced block."""
    text = path.read_text(encoding="utf-8")
    blocks = []
    for match in FENCE.finditer(text):
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        marker = MARKER.fullmatch(before.strip())
        line = text.count("\n", 0, match.start()) + 1
        blocks.append(
            (
                line,
                match.group(1).split()[0] if match.group(1).strip() else "",
                marker.group(1) if marker else None,
                marker.group(2) if marker else "",
                match.group(2),
            )
        )
    return blocks


def shell_commands(code: str) -> list[str]:
    """The block's commands: continuation lines joined, comments and blank lines dropped; the
    commands of `gcloud ... --command "..."` and `ssh ... "..."` included."""
    joined = re.sub(r"\\\n", " ", code)
    commands = []
    for line in joined.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        try:
            words = shlex.split(line, comments=True)
        except ValueError:  # an unclosed quote across lines: a JSON TF_CONFIG and the like
            continue
        commands.append(words)
        # A command quoted as one argument (`--command "cd x && python tools/pretrain.py ..."`).
        for word in words:
            if "tools/" in word or "keras-albert" in word:
                commands += [shlex.split(part) for part in re.split(r"&&|;", word)[1:]]
    return commands


def command_of(words: list[str]) -> tuple[str, list[str]] | None:
    """(command or script, its arguments) where `words` run one of the project's commands."""
    for index, word in enumerate(words):
        if words[index : index + 3] == ["bash", "tools/run.sh", "main"]:
            return MAIN_JOB, words[index + 3 :]
        if word == "keras-albert" and index + 1 < len(words):
            if not words[index + 1].islower():  # `keras-albert COMMAND --help`
                return None
            return words[index + 1], words[index + 2 :]
        if word in ("python", "python3") or word.endswith("/python"):
            rest = words[index + 1 :]
            if rest[:2] == ["-m", "keras_albert"] and len(rest) > 2:
                return rest[2], rest[3:]
            if rest[:2] == ["-m", "examples.main"]:
                return MAIN_JOB, rest[2:]
            if rest and re.fullmatch(r"tools/\w+\.py", rest[0]):
                return rest[0], rest[1:]
    return None


_PARSERS = {}


def parser_of(name: str) -> argparse.ArgumentParser:
    """The parser of a `keras-albert` subcommand, of a `tools/` script or of the main job."""
    if name not in _PARSERS:
        if name == MAIN_JOB:
            import examples.main

            _PARSERS[name] = examples.main.build_parser()
        else:
            by_script = {f"tools/{script}": command for command, script in SCRIPTS.items()}
            command = by_script.get(name, name)
            assert command in COMMANDS, f"no such command or script: {name}"
            _PARSERS[name] = command_module(command).build_parser()
    return _PARSERS[name]


def option_strings(name: str) -> set[str]:
    """Every option string of the command. `probe` builds its parser inside `main` (a script
    that must not import keras_albert): its `add_argument` calls are read from its source."""
    if name in ("probe", "tools/probe_saved_model.py"):
        source = (REPO / "keras_albert" / "commands" / "probe.py").read_text(encoding="utf-8")
        return set(re.findall(r"\"(--[\w-]+)\"", source)) | {"--help"}
    return {string for action in parser_of(name)._actions for string in action.option_strings}


def unknown_flags(name: str, arguments: list[str]) -> list[str]:
    known = option_strings(name)
    unknown = []
    for argument in arguments:
        if argument == "--":  # Beam's own options follow
            break
        if argument.startswith("--"):
            flag = argument.split("=", 1)[0]
            if flag not in known:
                unknown.append(flag)
    return unknown


def test_every_block_is_run_or_marked():
    run_groups = set(marked_blocks()) | set(PYTHON_GROUPS)
    problems = []
    for path in documents():
        name = path.relative_to(REPO).as_posix()
        for line, language, kind, text, _ in fenced_blocks(path):
            where = f"{name}:{line}"
            if language == "text":
                continue
            if language not in (*SHELL, "python"):
                problems.append(f"{where}: say the block's language (bash, python or text)")
            elif kind is None:
                problems.append(
                    f"{where}: a {language} block no test runs: mark it `<!-- test: GROUP -->` "
                    "and run it, or `<!-- not run: REASON -->`"
                )
            elif kind == "not run" and not text.strip():
                problems.append(f"{where}: `<!-- not run: -->` without a reason")
            elif kind == "test" and text not in run_groups:
                problems.append(f"{where}: group {text!r} is run by no test")
    assert not problems, "\n".join(problems)


def inline_commands(path: pathlib.Path) -> list[str]:
    """The prose's code spans that name a command of the project (`python tools/X.py ...`)."""
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    text = re.sub(r"``.*?``", "", text, flags=re.S)  # spans that hold a backtick
    spans = re.findall(r"`([^`]+)`", text)
    return [" ".join(span.split()) for span in spans if command_of(shlex.split(span, posix=False))]


def test_every_flag_of_a_shell_block_exists():
    problems = []
    for path in documents():
        name = path.relative_to(REPO).as_posix()
        blocks = [
            (line, code) for line, language, _, _, code in fenced_blocks(path) if language in SHELL
        ]
        blocks += [("inline", span) for span in inline_commands(path)]
        for line, code in blocks:
            for words in shell_commands(code):
                found = command_of(words)
                if found is None:
                    continue
                command, arguments = found
                for flag in unknown_flags(command, arguments):
                    problems.append(f"{name}:{line}: {command} has no flag {flag}")
    assert not problems, "\n".join(problems)


def test_the_flag_check_sees_commands_and_unknown_flags():
    code = (
        "keras-albert export a.keras --name x --no-such-flag 1\n"
        "python tools/pretrain.py --train-steps 3 \\\n    --cycle-length 4 -- --runner x\n"
        "python -m keras_albert finetune --train-steps=2 --bogus=3  # --comment-flag\n"
        "bash tools/run.sh main --quick --output-dir o --no-such-job-flag\n"
        "python -m examples.main --precision float32 --bogus-job-flag 1\n"
    )
    found = [command_of(words) for words in shell_commands(code)]
    assert [unknown_flags(command, arguments) for command, arguments in found] == [
        ["--no-such-flag"],
        ["--cycle-length"],
        ["--bogus"],
        ["--no-such-job-flag"],
        ["--bogus-job-flag"],
    ]


def test_an_unmarked_block_fails(tmp_path, monkeypatch):
    page = tmp_path / "page.md"
    page.write_text(
        "<!-- not run: needs a TPU -->\n```bash\nx\n```\n\n```python\ny\n```\n\n"
        "```text\nz\n```\n```\nw\n```\n",
        encoding="utf-8",
    )
    kinds = [(language, kind) for _, language, kind, _, _ in fenced_blocks(page)]
    assert kinds == [("bash", "not run"), ("python", None), ("text", None), ("", None)]
    monkeypatch.setattr(sys.modules[__name__], "documents", lambda: [page])
    monkeypatch.setattr(sys.modules[__name__], "REPO", tmp_path)
    with pytest.raises(AssertionError, match=r"page.md:6: a python block no test runs"):
        test_every_block_is_run_or_marked()


def python_group(name: str) -> str:
    """The Python blocks of group `name` in README.md and docs/, in document order."""
    code = []
    for path in documents():
        for _, language, kind, text, block in fenced_blocks(path):
            if kind == "test" and text == name:
                assert language == "python", f"{name} mixes python and {language}"
                code.append(block)
    assert code, f"no block of {name}"
    return "\n".join(code)


@pytest.mark.parametrize("name", PYTHON_GROUPS)
def test_python_blocks_run_as_written(name, tmp_path, monkeypatch):
    (tmp_path / "tests").symlink_to(REPO / "tests")
    monkeypatch.chdir(tmp_path)
    exec(compile(python_group(name), name, "exec"), {"__name__": "__main__"})
