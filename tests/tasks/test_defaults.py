"""Each task's defaults are written once, in its `defaults.py`: the fine-tuning options, the task
code, the serving module and the export tool read them from there, and no second literal of
them is left anywhere in the library or the tools."""

import ast
import dataclasses
import inspect
import re
from pathlib import Path

import pytest

from keras_albert.tasks.classification import defaults as glue_defaults
from keras_albert.tasks.classification.task import ClassificationTask
from keras_albert.tasks.multiple_choice import defaults as race_defaults
from keras_albert.tasks.multiple_choice.serving import MultipleChoiceServingModule
from keras_albert.tasks.multiple_choice.task import MultipleChoiceTask
from keras_albert.tasks.question_answering import defaults as squad_defaults
from keras_albert.tasks.question_answering.features import squad_features
from keras_albert.tasks.question_answering.postprocess import decode_answer_class, decode_null_span
from keras_albert.tasks.question_answering.serving import QuestionAnsweringServingModule
from keras_albert.tasks.question_answering.task import QuestionAnsweringTask
from keras_albert.tasks.registry import TASK_TYPES, get_task_type
from keras_albert.tasks.text_embedding import defaults as embedding_defaults
from keras_albert.tasks.text_embedding.task import TextEmbeddingTask
from keras_albert.tasks.token_classification import defaults as ner_defaults
from keras_albert.tasks.token_classification.task import TokenClassificationTask

REPO = Path(__file__).resolve().parents[2]
SQUAD = {
    "doc_stride": squad_defaults.DOC_STRIDE,
    "max_query_length": squad_defaults.MAX_QUERY_LENGTH,
    "n_best_size": squad_defaults.N_BEST_SIZE,
    "max_answer_length": squad_defaults.MAX_ANSWER_LENGTH,
    "null_score_threshold": squad_defaults.NULL_SCORE_THRESHOLD,
}
RACE = {"max_qa_length": race_defaults.MAX_QA_LENGTH, "num_choices": race_defaults.NUM_CHOICES}


def _dataclass_defaults(cls) -> dict:
    return {field.name: field.default for field in dataclasses.fields(cls)}


def _signature_defaults(function) -> dict:
    return {
        name: parameter.default
        for name, parameter in inspect.signature(function).parameters.items()
        if parameter.default is not inspect.Parameter.empty
    }


@pytest.mark.parametrize(
    "task_type, serving_module, values",
    [
        ("question_answering", QuestionAnsweringServingModule, SQUAD),
        ("multiple_choice", MultipleChoiceServingModule, RACE),
    ],
)
def test_the_options_the_export_tool_and_the_serving_modules_read_the_tasks_defaults(
    task_type, serving_module, values
):
    task_type = get_task_type(task_type)
    assert task_type.serving_module_class() is serving_module
    options = _dataclass_defaults(task_type.options)
    export = _dataclass_defaults(task_type.export_options)
    serving = _signature_defaults(serving_module.__init__)
    for name, value in values.items():
        assert export[name] == value, name
        assert serving[name] == value, name
        if name in options:  # the options have the training-time ones
            assert options[name] == value, name
    if task_type.name == "question_answering":
        assert options["answerability"] == squad_defaults.ANSWERABILITY


def test_the_task_code_reads_the_tasks_defaults():
    for task, defaults in (
        (ClassificationTask, glue_defaults),
        (QuestionAnsweringTask, squad_defaults),
        (MultipleChoiceTask, race_defaults),
        (TokenClassificationTask, ner_defaults),
        (TextEmbeddingTask, embedding_defaults),
    ):
        assert task.default_sequence_length == defaults.SEQUENCE_LENGTH, task
    windows = _signature_defaults(squad_features)
    assert (windows["sequence_length"], windows["doc_stride"], windows["max_query_length"]) == (
        squad_defaults.SEQUENCE_LENGTH,
        squad_defaults.DOC_STRIDE,
        squad_defaults.MAX_QUERY_LENGTH,
    )
    # One null threshold for the evaluation (and so the choice of best.keras) and the export.
    for decode in (decode_null_span, decode_answer_class):
        assert _signature_defaults(decode)["null_score_threshold"] == SQUAD["null_score_threshold"]
        assert _signature_defaults(decode)["n_best_size"] == SQUAD["n_best_size"]


def _second_literals(name: str, value) -> list[str]:
    """Lines outside the defaults files that type `value` as the default of `name`:
    `name=value`, `name: type = value`, `NAME = value`, or "`name` ... (value)" in a doc."""
    literal = re.escape(repr(value) if isinstance(value, float) else str(value))
    number = rf"(?<![\w.]){literal}(?![\w.])"
    patterns = [
        re.compile(rf"\b{name}\b\s*(?::[^=\n]*)?=\s*{number}", re.IGNORECASE),
        re.compile(rf"\b{name}\b`?[^\n(]*\({number}\)", re.IGNORECASE),
    ]
    found = []
    for root in ("keras_albert", "tools", "examples"):
        for path in sorted((REPO / root).rglob("*.py")):
            if path.name == "defaults.py":
                continue
            for number_, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if any(pattern.search(line) for pattern in patterns):
                    found.append(f"{path.relative_to(REPO)}:{number_}: {line.strip()}")
    return found


@pytest.mark.parametrize(
    "name, value",
    [
        *SQUAD.items(),
        ("max_qa_length", RACE["max_qa_length"]),
        ("num_choices", RACE["num_choices"]),
        ("sequence_length", squad_defaults.SEQUENCE_LENGTH),
        ("sequence_length", ner_defaults.SEQUENCE_LENGTH),
    ],
)
def test_no_second_literal_of_a_task_default(name, value):
    assert _second_literals(name, value) == []


def test_the_literal_check_finds_a_second_literal(tmp_path, monkeypatch):
    # The check above must be able to fail: give it a tree with a typed-out default.
    package = tmp_path / "keras_albert"
    package.mkdir()
    (package / "serving.py").write_text("def serve(doc_stride=128, max_qa_length: int = 128):\n")
    (package / "docs.py").write_text('"""doc_stride: context tokens between windows (128)."""\n')
    (tmp_path / "tools").mkdir()
    (tmp_path / "examples").mkdir()
    monkeypatch.setitem(globals(), "REPO", tmp_path)
    assert len(_second_literals("doc_stride", 128)) == 2
    assert len(_second_literals("max_qa_length", 128)) == 1


def test_each_tasks_defaults_module_imports_nothing():
    # So that the options, the export tool and the serving modules can read it from anywhere
    # without pulling in a task (import-linter cannot forbid the standard library).
    paths = sorted((REPO / "keras_albert" / "tasks").glob("*/defaults.py"))
    assert [path.parent.name for path in paths] == sorted(t.name for t in TASK_TYPES)
    for task_type in TASK_TYPES:
        assert Path(task_type.defaults.__file__).parent.name == task_type.name
    for path in paths:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imports = [node for node in ast.walk(tree) if isinstance(node, ast.Import | ast.ImportFrom)]
        assert imports == [], path
