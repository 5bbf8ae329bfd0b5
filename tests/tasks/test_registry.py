"""The list of task types (`keras_albert.tasks.registry.TASK_TYPES`) is the one place that
names them: each record is defined in its task type's own folder, and each task type is
reachable from the fine-tuning CLI (where it trains), `load_checkpoint(..., model=...)`, the
export CLI and the export dispatch, with nothing else edited."""

import ast
import dataclasses
import importlib
import runpy
from pathlib import Path

import pytest

import keras_albert
from keras_albert.commands import command_module
from keras_albert.convert import MODEL_KINDS, load_checkpoint
from keras_albert.export import serving_module
from keras_albert.finetuning.task_choice import choose_task, options_from_flags
from keras_albert.tasks.registry import TASK_TYPES, get_task_type, model_kind_of, task_type_for
from keras_albert.text.tokenizer import AlbertTokenizer
from tests.helpers import tiny_config
from tests.text._paths import ALBERT_SPM

REPO = Path(__file__).resolve().parents[2]
TOOLS = REPO / "tools"
NAMES = [task_type.name for task_type in TASK_TYPES]
# The data sets that need their own flags (the columns of a file of any layout).
REQUIRED_FLAGS = {
    "generic": ("--text-columns", "a", "--label-column", "b"),
    "sentence_pairs": ("--pair-columns", "a,b", "--score-column", "s"),
}


def test_each_record_is_defined_in_its_own_folder_under_its_one_name():
    assert len(set(NAMES)) == len(NAMES)
    for task_type in TASK_TYPES:
        folder = REPO / "keras_albert" / "tasks" / task_type.name
        assert (folder / "task_type.py").is_file(), folder
        module = importlib.import_module(f"keras_albert.tasks.{task_type.name}.task_type")
        assert module.TASK_TYPE is task_type
        assert Path(task_type.defaults.__file__).parent == folder
        # Its head model, its serving module (and fine-tuning task) are its own.
        assert task_type.model_class.__module__ == f"keras_albert.tasks.{task_type.name}.model"
        assert task_type.serving_module_class().__module__.startswith(
            f"keras_albert.tasks.{task_type.name}."
        )
        if task_type.trains:
            task_class = task_type.finetuning_task_class()
            assert task_class.__module__.startswith(f"keras_albert.tasks.{task_type.name}.")
            assert issubclass(task_class, keras_albert.FinetuningTask)
        assert get_task_type(task_type.name) is task_type


def test_no_task_type_imports_another_or_the_list():
    # What an import-linter layers contract would say, for whatever folders are registered.
    for task_type in TASK_TYPES:
        others = {t.name for t in TASK_TYPES} - {task_type.name}
        folder = REPO / "keras_albert" / "tasks" / task_type.name
        for path in sorted(folder.rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                names = []
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.module:
                    names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
                for name in names:
                    parts = name.split(".")
                    if parts[:2] == ["keras_albert", "tasks"] and len(parts) > 2:
                        assert parts[2] not in others | {"registry"}, f"{path}: {name}"


def test_the_task_types_own_flags_do_not_collide():
    fields = [
        (cls.__name__, field.name)
        for task_type in TASK_TYPES
        for cls in (task_type.options,)
        if cls is not None
        for field in dataclasses.fields(cls)
    ]
    names = [name for _, name in fields]
    assert len(set(names)) == len(names), fields


def test_each_task_name_picks_one_task_type():
    # `--dataset` matches ignoring case, "-" and "_": no two task types may share a name so read.
    keys = [
        name.lower().replace("-", "").replace("_", "")
        for task_type in TASK_TYPES
        for name in task_type.datasets
    ]
    assert len(set(keys)) == len(keys), keys


@pytest.mark.parametrize("task_type", TASK_TYPES, ids=NAMES)
def test_reachable_from_the_finetuning_cli(task_type):
    parser = runpy.run_path(str(TOOLS / "finetune.py"))["build_parser"]()
    required = "--train-data t --eval-data e --output-dir o --preset albert_base_v2".split()
    for dataset in task_type.datasets:
        args = parser.parse_args(
            ["--dataset", dataset, *required, *REQUIRED_FLAGS.get(dataset, ())]
        )
        chosen, options = choose_task(options_from_flags(args))
        assert chosen is task_type and task_type_for(dataset.upper()) is task_type
        if task_type.options is not None:
            assert isinstance(options.task_options, task_type.options)
    if not task_type.trains:
        assert task_type.datasets == ()


@pytest.mark.parametrize("task_type", TASK_TYPES, ids=NAMES)
def test_reachable_from_load_checkpoint_and_the_export(task_type, tmp_path):
    config = tmp_path / "config.json"
    tiny_config(vocabulary_size=30000, max_sequence_length=128).to_json(config)
    model = load_checkpoint(str(config), model=task_type.name, num_classes=3)
    assert (
        isinstance(model, task_type.model_class)
        and get_task_type(model_kind_of(model)) is task_type
    )
    assert task_type.name in MODEL_KINDS
    export_command = command_module("export")
    parser = export_command.build_parser()
    assert parser.parse_args(["c", "--model", task_type.name]).model == task_type.name
    if task_type.export_options is not None:
        own = export_command.task_options_from_args(parser.parse_args(["c"]))[task_type.name]
        assert own == task_type.export_options()
    module = serving_module(model, AlbertTokenizer(ALBERT_SPM), max_sequence_length=128)
    assert isinstance(module, task_type.serving_module_class())


def test_an_old_kind_name_is_told_its_new_one(tmp_path):
    with pytest.raises(ValueError, match=r"'question_answerer' is now 'question_answering'"):
        load_checkpoint("albert_base_v2", model="question_answerer")
