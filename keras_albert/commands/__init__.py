"""The `keras-albert` command: one subcommand per module of this package, each flags → one
library call (the binder is `keras_albert.cli`).

    keras-albert --help                 the commands, one line each (or python -m keras_albert)
    keras-albert COMMAND --help         one command's flags
    keras-albert train-tokenizer --inputs corpus.txt --vocabulary out/spm --vocabulary-size 8000

A command's module is imported only when it runs, so that one command never pays for the
others' imports; `--help` reads each module's docstring without importing it.

`probe` runs in a fresh interpreter from its file: it checks an export the way TF Serving
loads it, with TensorFlow and TF Text only, so it must not run where keras_albert is imported.

The scripts in the repository's `tools/` directory (`python tools/pretrain.py ...`) are the same
commands: each loads its module with `command_module` and runs its `main` with `run_tool`.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import importlib.util
import subprocess
import sys
import types

from keras_albert import _startup
from keras_albert.cli import run_tool, with_debug_help
from keras_albert.lazy import (
    TensorFlowMissingError,
    is_tensorflow_missing,
    require_tensorflow,
    tensorflow_missing,
)

PROGRAM = "keras-albert"
# In the order `--help` lists them: the data flow, text → model → export → serving.
COMMANDS = (
    "train-tokenizer",
    "split",
    "create-data",
    "pretrain",
    "finetune",
    "convert",
    "export",
    "probe",
    "client",
)
# What needs TensorFlow before its flags are even read: these say so in one line, not with a
# traceback (the others need it for some paths only, and say so where they do).
TENSORFLOW_COMMANDS = ("create-data", "pretrain", "finetune", "export", "probe")
# Run as a script in its own interpreter (the module docstring says why).
STANDALONE_COMMANDS = ("probe",)


def module_name(command: str) -> str:
    """`create-data` → `keras_albert.commands.create_data`."""
    return f"{__name__}.{command.replace('-', '_')}"


def summary(command: str) -> str:
    """The command's one line: the first paragraph of its module's docstring (read, not
    imported)."""
    origin = importlib.util.find_spec(module_name(command)).origin
    with open(origin, encoding="utf-8") as source:
        docstring = ast.get_docstring(ast.parse(source.read())) or ""
    return " ".join(docstring.split("\n\n")[0].split())


def _require_command(command: str) -> None:
    if command not in COMMANDS:
        raise ValueError(f"`command` must be one of {', '.join(COMMANDS)}. Received: {command}")


def command_module(command: str) -> types.ModuleType:
    """The module of `command` (its `build_parser` and `main`), imported. Where the command
    needs TensorFlow and it is not installed, prints ONE line `error: …` and exits 1; so does
    every command where no Keras backend is installed (`keras-albert --help` still lists them)."""
    _require_command(command)
    try:
        _startup.require_backend()
        if command in TENSORFLOW_COMMANDS:
            require_tensorflow(f"{PROGRAM} {command}")
        return importlib.import_module(module_name(command))
    except ImportError as error:
        if _startup.MISSING_BACKEND is not None:
            print(f"{PROGRAM}: {_startup.MISSING_BACKEND}", file=sys.stderr)
            sys.exit(1)
        if not (isinstance(error, TensorFlowMissingError) or is_tensorflow_missing(error)):
            raise
        missing = error if isinstance(error, TensorFlowMissingError) else None
        missing = missing or tensorflow_missing(f"{PROGRAM} {command}")
        print(f"error: {missing}", file=sys.stderr)
        sys.exit(1)


def run_standalone(command: str, argv: list[str]) -> int:
    """Runs a standalone command's module as a script in a fresh interpreter; its exit
    status."""
    origin = importlib.util.find_spec(module_name(command)).origin
    return subprocess.run([sys.executable, origin, *argv], check=False).returncode


def build_parser() -> argparse.ArgumentParser:
    from keras_albert import __version__

    width = max(map(len, COMMANDS))
    listing = "\n".join(f"  {command:<{width}}  {summary(command)}" for command in COMMANDS)
    parser = argparse.ArgumentParser(
        prog=PROGRAM,
        description="ALBERT for Keras 3 on TensorFlow: tokenizer, pretraining data, "
        "pretraining, fine-tuning, conversion and export for TF Serving.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=with_debug_help(
            f"commands:\n{listing}\n\n`{PROGRAM} COMMAND --help` describes one command."
        ),
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("--debug", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("command", choices=COMMANDS, metavar="COMMAND", help="see below")
    parser.add_argument("arguments", nargs=argparse.REMAINDER, help="the command's flags")
    return parser


def main(argv: list[str] | None = None) -> None:
    """The `keras-albert` console script: `keras-albert COMMAND [flags]`."""
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    # The command's own arguments, exactly as given (argparse's REMAINDER drops a `--`, which
    # `create-data` passes on to Beam); options before the command take no value.
    position = next(i for i, arg in enumerate(argv) if not arg.startswith("-"))
    arguments = argv[position + 1 :]
    if args.command in STANDALONE_COMMANDS:
        sys.exit(run_standalone(args.command, arguments))
    arguments += ["--debug"] if args.debug else []
    # The command's parser names itself `keras-albert COMMAND` in its usage line (argparse
    # takes its program name from sys.argv[0]), for this call only.
    program, sys.argv[0] = sys.argv[0], f"{PROGRAM} {args.command}"
    try:
        run_tool(command_module(args.command).main, arguments)
    finally:
        sys.argv[0] = program
