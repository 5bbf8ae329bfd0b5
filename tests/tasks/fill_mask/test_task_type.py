"""The fill-mask task type is one folder: its record, defaults and export options."""

import argparse
import ast
import dataclasses
import inspect
import pathlib

import pytest

from keras_albert.cli import add_options, options_from_args
from keras_albert.tasks.fill_mask import defaults
from keras_albert.tasks.fill_mask.model import AlbertMaskedLM
from keras_albert.tasks.fill_mask.options import FillMaskServingOptions
from keras_albert.tasks.fill_mask.serving import FillMaskServingModule
from keras_albert.tasks.fill_mask.task_type import TASK_TYPE

FOLDER = pathlib.Path(defaults.__file__).parent


def test_the_record():
    assert TASK_TYPE.name == "fill_mask" == FOLDER.name
    assert TASK_TYPE.model_class is AlbertMaskedLM
    assert TASK_TYPE.defaults is defaults
    assert TASK_TYPE.serving_module_class() is FillMaskServingModule
    assert TASK_TYPE.export_options is FillMaskServingOptions
    assert TASK_TYPE.datasets == () and TASK_TYPE.options is None and not TASK_TYPE.trains
    with pytest.raises(ValueError, match="'fill_mask' is not fine-tuned"):
        TASK_TYPE.finetuning_task_class()


def test_export_options_are_the_serving_module_arguments_with_its_defaults():
    parameters = inspect.signature(FillMaskServingModule).parameters
    for field in dataclasses.fields(FillMaskServingOptions):
        assert parameters[field.name].default == field.default, field.name
    assert FillMaskServingOptions().top_k == defaults.TOP_K == 5
    with pytest.raises(ValueError, match="`top_k` must be a positive integer. Received: top_k=0"):
        FillMaskServingOptions(top_k=0)


def test_export_options_bind_to_flags():
    parser = argparse.ArgumentParser()
    add_options(parser, FillMaskServingOptions)
    assert "tokens proposed per mask" in parser.format_help()
    assert options_from_args(parser.parse_args([]), FillMaskServingOptions).top_k == 5
    assert options_from_args(parser.parse_args(["--top-k", "3"]), FillMaskServingOptions).top_k == 3


def test_the_package_docstring_and_defaults_import_nothing():
    package = ast.parse((FOLDER / "__init__.py").read_text(encoding="utf-8"))
    assert len(package.body) == 1 and isinstance(package.body[0].value, ast.Constant)
    tree = ast.parse((FOLDER / "defaults.py").read_text(encoding="utf-8"))
    assert not [node for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))]
