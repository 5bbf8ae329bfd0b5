"""Which task type a fine-tuning run trains, and its options resolved: `choose_task` reads
`FinetuningOptions.dataset` (`--dataset`) against `keras_albert.tasks.registry.TASK_TYPES`.

The fine-tuning CLI's task-type flags (`add_task_options`, `task_options_from_args`): each
task type's own options dataclass gives one group of flags; a flag of another task type than
the one `--dataset` names is refused, not ignored.
"""

from __future__ import annotations

import argparse
import dataclasses

from keras_albert.cli import add_options, flag_name, options_from_args
from keras_albert.finetuning.options import FinetuningOptions
from keras_albert.tasks.finetuning_task import FinetuningTask
from keras_albert.tasks.registry import TASK_TYPES, canonical_dataset, task_type_for
from keras_albert.tasks.task_type import TaskType


def choose_task(options: FinetuningOptions) -> tuple[TaskType, FinetuningOptions]:
    """The task type `options.dataset` names, and `options` with its `task_options` resolved
    (the task type's defaults when None), checked against the data set before any work."""
    task_type = task_type_for(options.dataset)  # only a task type that trains has data sets
    task_options = options.task_options
    if task_options is None:
        task_options = task_type.options() if task_type.options else None
    elif task_type.options is None or not isinstance(task_options, task_type.options):
        expected = task_type.options.__name__ if task_type.options else "None"
        raise ValueError(
            f"`task_options` must be a {expected} for the dataset {options.dataset!r} "
            f"({task_type.name}). Received: task_options={task_options!r}"
        )
    options = dataclasses.replace(options, task_options=task_options)
    cls: type[FinetuningTask] = task_type.finetuning_task_class()
    if options.pad_to_multiple_of is not None and not cls.dynamic_padding:
        raise ValueError(
            f"`pad_to_multiple_of` must be None for the dataset {options.dataset!r}: dynamic "
            "padding is for GLUE-style tasks. Received: "
            f"pad_to_multiple_of={options.pad_to_multiple_of}"
        )
    cls.check_options(options)
    return task_type, options


def make_task(options: FinetuningOptions, tokenizer) -> FinetuningTask:
    """The run's `FinetuningTask`: reads the data set. The task sees `options.dataset` as its
    task type spells it ("squad_v2" for "SQuAD-v2")."""
    task_type, options = choose_task(options)
    options = dataclasses.replace(options, dataset=canonical_dataset(options.dataset)[1])
    return task_type.finetuning_task_class()(options, tokenizer)


def add_task_options(parser: argparse.ArgumentParser) -> None:
    """One group of flags per task type with options; given only when the user gives them."""
    for task_type in TASK_TYPES:
        if task_type.options is not None and task_type.trains:
            group = parser.add_argument_group(
                f"{task_type.name} options (--dataset {_datasets(task_type)})"
            )
            add_options(group, task_type.options, given_only=True)


def _datasets(task_type: TaskType, most: int = 4) -> str:
    """The `--dataset` names of `task_type`, the first `most` of them ("SST-2, MRPC, ...")."""
    names = list(task_type.datasets[:most]) + (["..."] if len(task_type.datasets) > most else [])
    return ", ".join(names)


def options_from_flags(args: argparse.Namespace) -> FinetuningOptions:
    """The `FinetuningOptions` of `keras-albert finetune`'s parsed flags (`add_options` for
    `FinetuningOptions`, then `add_task_options`)."""
    task_options = task_options_from_args(args, args.dataset)
    return options_from_args(args, FinetuningOptions, task_options=task_options)


def task_options_from_args(args: argparse.Namespace, dataset: str):
    """The task options of `dataset`'s task type from the flags given; a flag of another task
    type is an error naming it."""
    task_type = task_type_for(dataset)
    mine = {f.name for f in dataclasses.fields(task_type.options)} if task_type.options else set()
    for other in TASK_TYPES:
        if other is task_type or other.options is None:
            continue
        for field in dataclasses.fields(other.options):
            if field.name not in mine and hasattr(args, field.name):
                raise ValueError(
                    f"`{flag_name(field.name)}` is an option of {other.name} (--dataset "
                    f"{_datasets(other)}), not of {task_type.name}. Received: --dataset {dataset}"
                )
    if task_type.options is None:
        return None
    given = {name: getattr(args, name) for name in mine if hasattr(args, name)}
    return task_type.options(**given)
