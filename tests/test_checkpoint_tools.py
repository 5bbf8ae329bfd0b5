"""The checkpoint tools' flags: one per option field, the dataclass's default, nothing else."""

import importlib.util
import os

import pytest

from tests.tool_flags import check_tool_flags

TOOLS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tools")


def _tool(name: str):
    spec = importlib.util.spec_from_file_location(name, os.path.join(TOOLS, f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    "name,options_class",
    [
        ("convert_checkpoint", "ConvertOptions"),
        ("export_saved_model", "ExportOptions"),
        ("serving_client", "ClientOptions"),
    ],
)
def test_every_option_has_its_one_flag_and_its_default(name, options_class):
    from keras_albert.tasks.registry import TASK_TYPES

    tool = _tool(name)
    # The export tool's task-type groups: each task type's export options, given only.
    given_only = ()
    if name == "export_saved_model":
        given_only = tuple(t.export_options for t in TASK_TYPES if t.export_options is not None)
    check_tool_flags(tool.build_parser(), getattr(tool, options_class), given_only=given_only)


def test_positional_arguments_and_flags_reach_the_options():
    from keras_albert.cli import options_from_args

    tool = _tool("export_saved_model")
    args = tool.build_parser().parse_args(
        ["run/", "--class-names", "no", "yes", "--pair", "--output-dir", "out"]
    )
    options = options_from_args(args, tool.ExportOptions, checkpoint=args.checkpoint)
    assert options.checkpoint == "run/" and options.output_dir == "out" and options.pair
    assert options.class_names == ["no", "yes"] and options.vocabulary is None
    client = _tool("serving_client")
    args = client.build_parser().parse_args(["a", "b", "--protocol", "grpc"])
    assert options_from_args(args, client.ClientOptions, texts=tuple(args.texts)).texts == (
        "a",
        "b",
    )
