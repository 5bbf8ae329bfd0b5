"""Every fine-tuning task by name: `make_task(options, tokenizer)` → a `FinetuningTask`.

- "squad_v1", "squad_v2": `SquadTask` (`keras_albert.training.squad_task`);
- "race": `RaceTask` (`keras_albert.training.race_task`);
- "ner": `NerTask` (`keras_albert.training.ner_task`);
- a GLUE name or "generic": `GlueTask` (`keras_albert.training.glue_task`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from keras_albert.text.glue import get_task
from keras_albert.training.finetuning_task import FinetuningTask
from keras_albert.training.glue_task import GlueTask
from keras_albert.training.ner_task import NerTask
from keras_albert.training.race_task import RaceTask
from keras_albert.training.squad_task import SquadTask

if TYPE_CHECKING:
    from keras_albert.training.options import FinetuningOptions

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


def make_task(options: FinetuningOptions, tokenizer) -> FinetuningTask:
    """Reads the task's data (see `FinetuningTask`)."""
    return task_class(options.task)(options, tokenizer)
