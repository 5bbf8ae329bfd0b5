"""`TaskType`: everything the library knows of one task type, in one record.

Each task type is one folder of `keras_albert.tasks` holding its data code (reader, features,
post-processing, metrics), its `defaults.py`, its options, its fine-tuning task, its serving
module and, in `task_type.py`, its `TASK_TYPE` record; `keras_albert.tasks.registry.TASK_TYPES`
lists the records once. The fine-tuning CLI and driver, `load_checkpoint`'s model kinds, the
export dispatch, the export CLI and the top-level API all read the list, so a new task type is
one folder plus one line there.

The record names its fine-tuning task and serving module as "module:attribute" strings,
imported when first used (`TaskType.finetuning_task_class`, `TaskType.serving_module_class`):
`load_checkpoint` reads the list of model kinds without loading every task's data code.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable
from types import ModuleType


def _resolve(reference: str):
    module, _, attribute = reference.partition(":")
    return getattr(importlib.import_module(module), attribute)


@dataclasses.dataclass(frozen=True)
class CheckpointFormat:
    """A checkpoint format a task type owns: a Hugging Face model directory (the backbone) with
    the task type's own files beside it, which say its head (sentence-transformers' directory:
    `modules.json`, `1_Pooling/config.json`). The converters read and write the Hugging Face
    part; the task type's functions, the rest.

    Args:
        name: `save_checkpoint`'s `format=` for it.
        read_head: "module:function" of `(directory) → (Hugging Face directory, head options)`,
            or None where `directory` is not in this format; `load_checkpoint` asks it first.
        head_files: "module:function" of `(model, vocabulary bytes, lowercase, strip_accents)
            → {relative path: bytes}`, the files written beside the Hugging Face directory of
            `model.backbone`.
    """

    name: str
    read_head: str
    head_files: str

    def read(self, directory):
        return _resolve(self.read_head)(directory)

    def files(self, model, vocabulary: bytes, lowercase: bool, strip_accents: bool) -> dict:
        return _resolve(self.head_files)(model, vocabulary, lowercase, strip_accents)


@dataclasses.dataclass(frozen=True)
class TaskType:
    """One task type.

    Args:
        name: the one name of the task type and its head: its folder, `load_checkpoint`'s
            `model=` kind, the export CLI's `--model` choice, the serving task, the summary.
        description: one line for `--help` and the documentation.
        model_class: the Keras model of the head (e.g. `AlbertQuestionAnswerer`).
        build_model: `(backbone, num_classes, **head) → model_class` with a fresh head
            (`head`: the head's own options a checkpoint gives, e.g. `answerability`);
            `load_checkpoint(..., model=name)` builds it around a checkpoint's backbone.
        defaults: the task's `defaults.py` (imports nothing; every default is written there).
        datasets: the names `FinetuningOptions.task` (`--task`) takes for this task type (e.g.
            "squad_v1", "squad_v2"); empty when the task type is not fine-tuned (fill-mask).
        options: the dataclass of the task type's own fine-tuning options (its fields are
            flags of `tools/finetune.py`), or None when it has none.
        finetuning_task: "module:Class" of its `FinetuningTask`, or None (not fine-tuned).
        serving_module: "module:Class" of its serving module (a `tf.Module` whose endpoints
            take strings; `keras_albert.export`).
        export_options: the dataclass of its serving module's own options (flags of
            `tools/export_saved_model.py`), or None.
        count: the model's attribute that counts its outputs when a checkpoint of another
            kind cannot say it (`num_classes`, `num_labels`): `load_checkpoint` then needs
            `num_classes`; None when the head needs no count.
        from_model: `(loaded model) → model_class or None`: a model of this kind that shares a
            loaded model's weights, head included (fill-mask: a pretrainer's masked-LM head),
            instead of a fresh head; None when it has no such way.
        preprocessor: "module:Class" of its preprocessor (a `TokenizerPreprocessor`: raw
            inputs to the model's, in `tf.data`), which `from_preset` attaches to the model;
            None where the task type has none yet.
        checkpoint_format: a `CheckpointFormat` the task type owns (`load_checkpoint` reads
            it, `save_checkpoint(format=its name)` writes it), or None.
    """

    name: str
    description: str
    model_class: type
    build_model: Callable
    defaults: ModuleType
    serving_module: str
    datasets: tuple[str, ...] = ()
    options: type | None = None
    finetuning_task: str | None = None
    export_options: type | None = None
    count: str | None = None
    from_model: Callable | None = None
    preprocessor: str | None = None
    checkpoint_format: CheckpointFormat | None = None

    @property
    def trains(self) -> bool:
        """Whether the task type is fine-tuned by `keras_albert.finetuning`."""
        return self.finetuning_task is not None

    def preprocessor_class(self) -> type | None:
        """Its preprocessor class (imported now), or None."""
        return None if self.preprocessor is None else _resolve(self.preprocessor)

    def finetuning_task_class(self) -> type:
        """Its `FinetuningTask` subclass (imported now)."""
        if self.finetuning_task is None:
            raise ValueError(f"The task type {self.name!r} is not fine-tuned.")
        return _resolve(self.finetuning_task)

    def serving_module_class(self) -> type:
        """Its serving module class (imported now)."""
        return _resolve(self.serving_module)
