"""The task types, listed once: `TASK_TYPES`.

Everything that dispatches on a task type reads this list: the fine-tuning CLI (`--dataset` and
each task type's own flags), the driver, `load_checkpoint`'s `model=` kinds (`MODEL_KINDS`),
the export dispatch and the export CLI's `--model` choices. A new task type is one folder of
`keras_albert.tasks` (with its `task_type.py`) and one line here.
"""

from __future__ import annotations

from keras_albert.models import AlbertBackbone, AlbertPretrainer
from keras_albert.tasks.classification.task_type import TASK_TYPE as CLASSIFICATION
from keras_albert.tasks.fill_mask.task_type import TASK_TYPE as FILL_MASK
from keras_albert.tasks.multiple_choice.task_type import TASK_TYPE as MULTIPLE_CHOICE
from keras_albert.tasks.question_answering.task_type import TASK_TYPE as QUESTION_ANSWERING
from keras_albert.tasks.task_type import TaskType
from keras_albert.tasks.text_embedding.task_type import TASK_TYPE as TEXT_EMBEDDING
from keras_albert.tasks.token_classification.task_type import TASK_TYPE as TOKEN_CLASSIFICATION

TASK_TYPES: tuple[TaskType, ...] = (
    CLASSIFICATION,
    QUESTION_ANSWERING,
    MULTIPLE_CHOICE,
    TOKEN_CLASSIFICATION,
    FILL_MASK,
    TEXT_EMBEDDING,
)

# The models that are no task type's head: `load_checkpoint(model=...)` builds them too.
BASE_MODEL_KINDS = ("backbone", "pretrainer")
MODEL_KINDS = (*BASE_MODEL_KINDS, *(task_type.name for task_type in TASK_TYPES))
# The kinds' names before each head had one name (a user's old command gets told the new one).
RENAMED_MODEL_KINDS = {
    "classifier": "classification",
    "question_answerer": "question_answering",
    "token_classifier": "token_classification",
}


def _key(name: str) -> str:
    return name.lower().replace("-", "").replace("_", "")


def get_task_type(name: str) -> TaskType:
    """The task type called `name` (one of `TASK_TYPES`' names)."""
    for task_type in TASK_TYPES:
        if task_type.name == name:
            return task_type
    renamed = RENAMED_MODEL_KINDS.get(name)
    hint = f" ({name!r} is now {renamed!r})" if renamed else ""
    raise ValueError(
        f"`task_type` must be one of {', '.join(t.name for t in TASK_TYPES)}{hint}. "
        f"Received: task_type={name!r}"
    )


def check_model_kind(model: str | None) -> str | None:
    """`model` if it is None or one of `MODEL_KINDS`; else one line naming them (and the new
    name of a kind that was renamed)."""
    if model is None or model in MODEL_KINDS:
        return model
    renamed = RENAMED_MODEL_KINDS.get(model)
    hint = f" ({model!r} is now {renamed!r})" if renamed else ""
    raise ValueError(
        f"`model` must be one of {', '.join(MODEL_KINDS)}{hint}. Received: model={model!r}"
    )


def finetuning_datasets() -> tuple[str, ...]:
    """Every name `--dataset` takes, in the order of `TASK_TYPES`."""
    return tuple(name for task_type in TASK_TYPES for name in task_type.datasets)


def canonical_dataset(dataset: str) -> tuple[TaskType, str]:
    """The task type that fine-tunes on `dataset` (a `--dataset` name: "SST-2", "squad_v2",
    "race", ...; case, "-" and "_" do not matter), and the name as its task type spells it."""
    if isinstance(dataset, str):
        for task_type in TASK_TYPES:
            for name in task_type.datasets:
                if _key(dataset) == _key(name):
                    return task_type, name
    raise ValueError(
        f"`dataset` must be one of {', '.join(finetuning_datasets())}. "
        f"Received: dataset={dataset!r}"
    )


def task_type_for(dataset: str) -> TaskType:
    """The task type that fine-tunes on `dataset` (see `canonical_dataset`)."""
    return canonical_dataset(dataset)[0]


def model_kind_of(model) -> str:
    """What kind of model `model` is (a model or a model class): one of `MODEL_KINDS`, i.e.
    "backbone", "pretrainer" or the name of the task type whose head it is (an instance of
    its `model_class`; `get_task_type` gives the record). The one answer to that question:
    the converters, the export and the serving modules ask it here."""
    model_class = model if isinstance(model, type) else type(model)
    for task_type in TASK_TYPES:
        if issubclass(model_class, task_type.model_class):
            return task_type.name
    for kind, base in zip(BASE_MODEL_KINDS, (AlbertBackbone, AlbertPretrainer), strict=True):
        if issubclass(model_class, base):
            return kind
    classes = ["AlbertBackbone", "AlbertPretrainer"] + [t.model_class.__name__ for t in TASK_TYPES]
    raise ValueError(
        f"The checkpoint must hold a keras_albert model ({', '.join(classes)}). "
        f"Received: a {model_class.__name__}"
    )
