"""What every `keras-albert` command shares (keras_albert/commands/; stdlib only until a
command asks for TensorFlow).

One binder from option dataclasses to argparse:
A field is a flag: `sequence_length` → `--sequence-length`. The flag's type follows the field's
annotation, its default IS the dataclass default (written once, in the dataclass), its help is
the field's entry in the class docstring's `Args:` section. Fields without a default are
required flags. Flags of the original google-research/albert tools are accepted as documented
aliases (`aliases={"sequence_length": ("--max_seq_length",)}`).

    parser = argparse.ArgumentParser()
    add_options(parser, PretrainingOptions, aliases={"seed": ("--random_seed",)})
    options = options_from_args(parser.parse_args(), PretrainingOptions)

`run_tool(main)` runs a tool: a user error is ONE line `error: …` on stderr (exit 1, or 2 for
usage), Ctrl-C one line; `--debug` shows the traceback. (TensorFlow's start-up lines are
silenced by `import keras_albert` itself: see `keras_albert/_startup.py`.) The library's errors
name an option by its field (`` `sequence_length` must be … ``); in a tool's error line each
field that `add_options` bound is named by its flag (`` `--sequence-length` must be … ``).

A `str` default that does not print as itself (a tab) is shown as Python writes it ('\\t'),
and that flag takes the same escapes (`--delimiter '\\t'`).

Annotations understood: `int`, `float`, `str`, `bool` (`--x` / `--no-x`), `X | None`,
`tuple[str, ...]` (comma-separated), `Literal[...]` (choices), and `bool | str` fields whose
metadata gives `{"parse": function}`. A field's metadata may also give `"choices"`, `"nargs"`,
`"metavar"`, `"flag": False` (not on the command line: set by the tool) or `"aliases"`: the
field's former flag names, kept for every tool that has the field (`VOCABULARY_METADATA`).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import sys
import types
import typing

from keras_albert.directories import first_existing
from keras_albert.lazy import TensorFlowMissingError

_ARGS_HEADER = re.compile(r"^\s*Args:\s*$")
_ENTRY = re.compile(r"^(\s*)([A-Za-z_][A-Za-z0-9_]*(?:\s*,\s*[A-Za-z_][A-Za-z0-9_]*)*):\s?(.*)$")

# Field → flag of the options `add_options` bound since `run_tool` started (one tool's), so
# that its error line names the flag.
_BOUND_FLAGS: dict[str, str] = {}

# The tokenizer's vocabulary file (a SentencePiece model or a WordPiece vocabulary) is
# `vocabulary` in every option class; `--sentencepiece-model` is its name from before WordPiece.
# `path`: a local file the run reads, recorded in `run.json` as an absolute path (a run
# directory's record resolves wherever it is read from).
VOCABULARY_METADATA = {"aliases": ("--sentencepiece-model",), "path": True}


def flag_name(field_name: str) -> str:
    """`sequence_length` → `--sequence-length`: the one flag style of every tool."""
    return "--" + field_name.replace("_", "-")


def field_docs(options_class: type) -> dict[str, str]:
    """The `Args:` entries of a class docstring, by field name, as one line of text each.

    An entry naming several fields (`learning_rate, batch_size: override the recipe.`) gives
    its text to each of them.
    """
    lines = (options_class.__doc__ or "").splitlines()
    docs: dict[str, str] = {}
    inside, entry_indent, names = False, None, ()
    for line in lines:
        if not inside:
            inside = bool(_ARGS_HEADER.match(line))
            continue
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        match = _ENTRY.match(line)
        if match and (entry_indent is None or indent == entry_indent):
            entry_indent = indent
            names = tuple(name.strip() for name in match.group(2).split(","))
            for name in names:
                docs[name] = match.group(3).strip()
        elif entry_indent is not None and indent > entry_indent and names:
            for name in names:
                docs[name] = f"{docs[name]} {line.strip()}".strip()
        else:
            break  # the end of the Args: section
    return docs


def _flag_fields(options_class: type) -> list[dataclasses.Field]:
    return [f for f in dataclasses.fields(options_class) if f.metadata.get("flag", True)]


def _comma_separated(text: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in text.split(",") if part.strip())


def _prints_as_itself(text: str) -> bool:
    return text.isprintable() and text == text.strip() and text != ""


def _with_escapes(text: str) -> str:
    """`\\t` → a tab, and Python's other backslash escapes (other characters kept; text that
    is no escape, as a lone backslash, as given)."""
    try:
        return text.encode("latin-1", "backslashreplace").decode("unicode_escape")
    except UnicodeDecodeError:
        return text


def _argument_kwargs(field: dataclasses.Field, annotation) -> dict:
    """argparse keywords for one field, from its annotation and metadata."""
    kwargs: dict = {}
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        # `X | None`: the flag is X; not giving it keeps the dataclass default.
        members = [a for a in typing.get_args(annotation) if a is not type(None)]
        annotation = members[0] if len(members) == 1 else annotation
        origin = typing.get_origin(annotation)
    if "parse" in field.metadata:
        kwargs["type"] = field.metadata["parse"]
    elif annotation is bool:
        kwargs["action"] = argparse.BooleanOptionalAction
    elif origin is typing.Literal:
        kwargs["choices"] = typing.get_args(annotation)
    elif origin is tuple:
        kwargs["type"] = _comma_separated
        kwargs["metavar"] = "A,B,..."
    elif annotation is str and not _prints_as_itself(_default(field) or "x"):
        kwargs["type"] = _with_escapes  # so that the help's '\\t' is what the flag takes
    elif annotation in (int, float, str):
        kwargs["type"] = annotation
    else:
        raise TypeError(
            f"`{field.name}` has an annotation the binder does not know: {annotation!r}; give "
            "its field metadata a 'parse' function or 'flag': False."
        )
    for key in ("choices", "nargs", "metavar"):
        if key in field.metadata:
            kwargs[key] = field.metadata[key]
    return kwargs


def _default(field: dataclasses.Field):
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return None if field.default is dataclasses.MISSING else field.default


def add_options(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup,
    options_class: type,
    *,
    aliases: dict[str, tuple[str, ...]] | None = None,
    exclude: tuple[str, ...] = (),
    given_only: bool = False,
) -> None:
    """Adds one flag per field of `options_class` (and the given aliases) to `parser`.

    Args:
        parser: an `argparse.ArgumentParser` or argument group.
        options_class: a dataclass whose docstring documents its fields under `Args:`.
        aliases: extra flag spellings per field (e.g. the original tool's `--max_seq_length`),
            after those of the field's metadata; they are listed in the flag's help.
        exclude: fields the tool sets itself (they get no flag).
        given_only: a flag the user does not give leaves no attribute on the parsed namespace
            (the dataclass default then applies when it is built), so that a tool can tell
            which flags were given (a task type's own flags: `finetuning.task_choice`).
    """
    aliases = dict(aliases or {})
    hints = typing.get_type_hints(options_class)
    docs = field_docs(options_class)
    names = {f.name for f in dataclasses.fields(options_class)}
    unknown = sorted(set(aliases) - names)
    if unknown:
        raise ValueError(
            f"`aliases` must name fields of {options_class.__name__}. Received: aliases={unknown}"
        )
    for field in _flag_fields(options_class):
        if field.name in exclude:
            continue
        kwargs = _argument_kwargs(field, hints[field.name])
        help_text = docs.get(field.name, "").replace("%", "%%")
        others = (*field.metadata.get("aliases", ()), *aliases.get(field.name, ()))
        spellings = (flag_name(field.name), *others)
        if others:
            help_text += f" (also: {', '.join(others)})"
        if field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING:
            kwargs["required"] = True
        else:
            default = _default(field)
            kwargs["default"] = argparse.SUPPRESS if given_only else default
            if isinstance(default, str) and not _prints_as_itself(default):
                help_text += f" (default: {default!r})".replace("%", "%%")  # not "(default: )"
            elif default is not None and kwargs.get("action") is not argparse.BooleanOptionalAction:
                # A given-only flag's argparse default is SUPPRESS: its help says the real one.
                shown = str(default).replace("%", "%%") if given_only else "%(default)s"
                help_text += f" (default: {shown})"
        parser.add_argument(*spellings, dest=field.name, help=help_text.strip(), **kwargs)
        _BOUND_FLAGS[field.name] = flag_name(field.name)


def options_from_args(args: argparse.Namespace, options_class: type, **overrides):
    """The dataclass built from parsed flags (fields without a flag come from `overrides`)."""
    values = {
        f.name: getattr(args, f.name) for f in _flag_fields(options_class) if hasattr(args, f.name)
    }
    values.update(overrides)
    return options_class(**values)


def option_flags(parser: argparse.ArgumentParser) -> dict[str, tuple[str, ...]]:
    """Every flag spelling of `parser`, by destination (for tests and help pages)."""
    flags: dict[str, tuple[str, ...]] = {}
    for action in parser._actions:
        if action.option_strings and action.dest != "help":
            flags[action.dest] = flags.get(action.dest, ()) + tuple(action.option_strings)
    return flags


def parse_bool_or_auto(text: str):
    """`auto` / `true` / `false` (any case) → "auto" / True / False: e.g. `jit_compile`."""
    choices = {"auto": "auto", "true": True, "false": False}
    if text.lower() not in choices:
        raise argparse.ArgumentTypeError(f"expected auto, true or false. Received: {text!r}")
    return choices[text.lower()]


def _number_or_none(text: str, kind: type, what: str):
    if text.lower() == "none":
        return None
    try:
        return kind(text)
    except ValueError:
        message = f"expected {what} or none. Received: {text!r}"
        raise argparse.ArgumentTypeError(message) from None


def parse_int_or_none(text: str):
    """`none` (any case) → None, else an int: e.g. `pad_to_multiple_of`."""
    return _number_or_none(text, int, "an integer")


def parse_float_or_none(text: str):
    """`none` (any case) → None, else a float: e.g. `null_score_threshold`."""
    return _number_or_none(text, float, "a number")


# ------------------------------------------------------------------------------------------
# Running a tool: quiet start-up, one-line errors.

DEBUG_ENVIRONMENT_VARIABLE = "KERAS_ALBERT_DEBUG"
# The line each tool's --help ends with (run_tool takes `--debug` before argparse sees it).
DEBUG_HELP = (
    f"Errors print one line; --debug (or {DEBUG_ENVIRONMENT_VARIABLE}=1) shows the traceback."
)


def with_debug_help(epilog: str | None) -> str:
    """`epilog` followed by the line about `--debug`."""
    return f"{epilog}\n\n{DEBUG_HELP}" if epilog else DEBUG_HELP


class ToolError(Exception):
    """A failure the user can fix, with its own exit status (1: runtime, 2: usage)."""

    def __init__(self, message: str, exit_status: int = 1):
        super().__init__(message)
        self.exit_status = exit_status


# What a user's mistake raises (bad value, missing or wrong file, a TensorFlow feature used
# without TensorFlow): one line, no traceback.
USER_ERRORS = (
    ValueError,
    FileNotFoundError,
    FileExistsError,
    NotADirectoryError,
    ToolError,
    TensorFlowMissingError,
)


def run_tool(main, argv: list[str] | None = None) -> None:
    """Runs `main(argv)` as a command: user errors print ONE line `error: …` and exit 1 (2 for
    `ToolError(..., 2)`), Ctrl-C prints one line and exits 130 (a run stopped by a signal after
    its checkpoint, `training.interruption.Interrupted`, exits with the signal's status).
    `--debug` anywhere in argv (or the environment variable KERAS_ALBERT_DEBUG=1) shows the
    traceback instead.

    `main` returns an exit status (None = 0).
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    _BOUND_FLAGS.clear()  # this tool's options only (tests run several tools in one process)
    debug = "--debug" in argv or os.environ.get(DEBUG_ENVIRONMENT_VARIABLE, "") not in ("", "0")
    argv = [arg for arg in argv if arg != "--debug"]
    try:
        status = main(argv)
    except KeyboardInterrupt as interrupt:
        if debug:
            raise
        message = str(interrupt) or "stopped"
        print(f"interrupted: {message}", file=sys.stderr)
        sys.exit(getattr(interrupt, "exit_status", 130))
    except USER_ERRORS as error:
        if debug:
            raise
        print(f"error: {_one_line(error)}", file=sys.stderr)
        sys.exit(getattr(error, "exit_status", 1))
    sys.exit(status or 0)


def _one_line(error: BaseException) -> str:
    blocking = (
        first_existing(os.fspath(error.filename))
        if isinstance(error, NotADirectoryError) and error.filename
        else None
    )
    if blocking and not os.path.isdir(blocking):
        # The OS says only "Not a directory: <path>": say which part of it is a file.
        text = f"Not a directory: {blocking!r} is a file (in the path {error.filename!r})"
    elif isinstance(error, OSError) and error.filename:
        text = f"{error.strerror}: {error.filename}"
    else:
        text = str(error)
    text = " ".join(text.split()) or type(error).__name__
    return _FIELD.sub(lambda match: f"`{_BOUND_FLAGS.get(match[1], match[1])}`", text)


_FIELD = re.compile(r"`([a-z][a-z0-9_]*)`")
