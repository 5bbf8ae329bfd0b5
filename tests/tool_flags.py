"""The check every tool's flag test uses: one flag per option field, defaults written once."""

import argparse
import dataclasses

from keras_albert.cli import flag_name, option_flags


def check_tool_flags(
    parser: argparse.ArgumentParser,
    options_class: type,
    aliases: dict[str, tuple[str, ...]] | None = None,
    exclude: tuple[str, ...] = (),
    tool_flags: tuple[str, ...] = (),
    given_only: tuple[type, ...] = (),
) -> None:
    """Every field of `options_class` (but `exclude`) has exactly its flag plus its metadata's
    `aliases` and `aliases`, and
    the parser's default is the dataclass default; any other flag is one of `tool_flags` or a
    field of a `given_only` class (`add_options(..., given_only=True)`: its flags leave nothing
    on the namespace unless given)."""
    aliases = aliases or {}
    flags = option_flags(parser)
    defaults = {action.dest: action.default for action in parser._actions}
    for other in given_only:
        for field in dataclasses.fields(other):
            expected = {flag_name(field.name), *field.metadata.get("aliases", ())}
            if field.type in (bool, "bool"):
                expected.add("--no-" + flag_name(field.name)[2:])
            assert set(flags.get(field.name, ())) == expected, (field.name, flags.get(field.name))
            assert defaults[field.name] == argparse.SUPPRESS, field.name
            tool_flags = (*tool_flags, field.name)
    fields = [
        f
        for f in dataclasses.fields(options_class)
        if f.metadata.get("flag", True) and f.name not in exclude
    ]
    for field in fields:
        expected = {
            flag_name(field.name),
            *field.metadata.get("aliases", ()),
            *aliases.get(field.name, ()),
        }
        if field.type in (bool, "bool", bool | None, "bool | None"):
            expected.add("--no-" + flag_name(field.name)[2:])
        assert set(flags.get(field.name, ())) == expected, (field.name, flags.get(field.name))
        if field.default is not dataclasses.MISSING:
            assert defaults[field.name] == field.default, (field.name, defaults[field.name])
    extra = set(flags) - {f.name for f in fields}
    assert extra <= set(tool_flags), f"flags that are no option field: {sorted(extra)}"
