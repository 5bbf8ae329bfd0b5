"""Every fine-tuning task by name: `make_task(options, tokenizer)` → a `FinetuningTask`.

- "squad_v1", "squad_v2": `SquadTask` (`keras_albert.finetuning.squad`);
- "race": `RaceTask` (`keras_albert.finetuning.race`);
- "ner": `NerTask` (`keras_albert.finetuning.ner`);
- a GLUE name or "generic": `GlueTask` (`keras_albert.finetuning.glue`).

A new task is one package beside these and one line in `TASKS`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from keras_albert.finetuning.glue.specs import get_task
from keras_albert.finetuning.glue.task import GlueTask
from keras_albert.finetuning.ner.task import NerTask
from keras_albert.finetuning.race.task import RaceTask
from keras_albert.finetuning.squad.task import SquadTask
from keras_albert.finetuning.task import FinetuningTask

if TYPE_CHECKING:
    from keras_albert.finetuning.options import FinetuningOptions

TASKS: dict[str, type[FinetuningTask]] = {
    "squad_v1": SquadTask,
    "squad_v2": SquadTask,
    "race": RaceTask,
    "ner": NerTask,
}


def task_class(name: str) -> type[FinetuningTask]:
    """The class of the task called `name`; an unknown name is an error listing them all."""
    if name in TASKS:
        return TASKS[name]
    if isinstance(name, str) and name.lower() == "generic":
        return GlueTask
    try:
        get_task(name)
    except ValueError as error:
        raise ValueError(f"{error} Or one of: {', '.join(TASKS)}.") from None
    return GlueTask


def checked_task_class(options: FinetuningOptions) -> type[FinetuningTask]:
    """`task_class(options.task)`, with the options the task cannot take refused."""
    cls = task_class(options.task)
    if options.pad_to_multiple_of is not None and not cls.dynamic_padding:
        raise ValueError(
            f"`pad_to_multiple_of` must be None for the task {options.task!r}: dynamic padding "
            f"is for GLUE-style tasks. Received: pad_to_multiple_of={options.pad_to_multiple_of}"
        )
    return cls


def make_task(options: FinetuningOptions, tokenizer) -> FinetuningTask:
    """Reads the task's data (see `FinetuningTask`)."""
    return checked_task_class(options)(options, tokenizer)
