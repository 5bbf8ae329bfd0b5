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
from collections.abc import Callable, Mapping
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
class ForeignHead:
    """A task type's head in a checkpoint format of another library: its weights' names there.

    Args:
        names: `(our weight path, their name, transpose)` for each weight of the head, the output
            kernel first (stored `(outputs, hidden_dim)` where `transpose`: its first dimension
            counts the classes of a head with a count); `transpose` says the foreign kernel is
            stored `(out, in)`.
        options: the head options this head is (`{"answerability": "null_span"}`): a model
            whose attributes differ has another head, and a checkpoint with these names is
            built with them.
    """

    names: tuple[tuple[str, str, bool], ...]
    options: Mapping = dataclasses.field(default_factory=dict)

    def count(self, tensors) -> int:
        """The number of outputs of this head in `tensors` (their names → arrays)."""
        _, name, transpose = self.names[0]
        shape = tensors[name].shape
        return int(shape[0] if transpose else shape[-1])

    def found_in(self, tensors) -> bool:
        """Whether `tensors` (their names → arrays) hold this head (its first name)."""
        return self.names[0][1] in tensors

    def fits(self, model) -> bool:
        """Whether `model`'s head options are this head's."""
        return all(getattr(model, key) == value for key, value in self.options.items())


@dataclasses.dataclass(frozen=True)
class CheckpointNames:
    """What the checkpoint converters (`keras_albert.convert`) need to read and write a task
    type's head in the formats of other libraries. The converters hold the backbone's names;
    a task type declares its head's here.

    Args:
        hf_architecture: the Hugging Face transformers class of the head
            (`config.json`'s `architectures`), or None where transformers has none.
        hf_head: the head's weights under that class's names.
        hf_pooler: whether that class has the pooler (`AlbertForQuestionAnswering` and
            `AlbertForTokenClassification` are built without one).
        hf_config: `(model) → dict`: the head's fields of the Hugging Face `config.json`
            (`num_labels`, `classifier_dropout_prob`, ...).
        hf_head_options: `(config.json as a dict) → dict`: the head options a Hugging Face
            config gives (a token classifier's tag `labels`), or None.
        tf1_heads: the heads of the original google-research/albert code for the task type
            (`run_classifier`, `run_squad_v1`/`run_squad_v2`, `run_race`), tried in order when
            reading a checkpoint; empty where the original code has none.
        keras_hub_class: the keras-hub task class of the head (`task.json`'s `class_name`),
            or None where keras-hub has none.
        keras_hub_head: the head's weights under that class's variable paths.
    """

    hf_architecture: str | None = None
    hf_head: ForeignHead | None = None
    hf_pooler: bool = True
    hf_config: Callable | None = None
    hf_head_options: Callable | None = None
    tf1_heads: tuple[ForeignHead, ...] = ()
    keras_hub_class: str | None = None
    keras_hub_head: ForeignHead | None = None


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
        datasets: the names `FinetuningOptions.dataset` (`--dataset`) takes for this task type
            (e.g. "squad_v1", "squad_v2"); empty when the task type is not fine-tuned
            (fill-mask).
        options: the dataclass of the task type's own fine-tuning options (its fields are
            flags of `keras-albert finetune`), or None when it has none.
        finetuning_task: "module:Class" of its `FinetuningTask`, or None (not fine-tuned).
        serving_module: "module:Class" of its serving module (a `tf.Module` whose endpoints
            take strings; `keras_albert.export`).
        export_options: the dataclass of its serving module's own options (flags of
            `keras-albert export`), or None.
        count: the model's attribute that counts its outputs when a checkpoint of another
            kind cannot say it (`num_classes`): `load_checkpoint` then needs
            `num_classes`; None when the head needs no count.
        from_model: `(loaded model) → model_class or None`: a model of this kind that shares a
            loaded model's weights, head included (fill-mask: a pretrainer's masked-LM head),
            instead of a fresh head; None when it has no such way.
        preprocessor: "module:Class" of its preprocessor (a `TokenizerPreprocessor`: raw
            inputs to the model's, in `tf.data`), which `from_preset` attaches to the model;
            None where the task type has none yet.
        checkpoint_format: a `CheckpointFormat` the task type owns (`load_checkpoint` reads
            it, `save_checkpoint(format=its name)` writes it), or None.
        checkpoint_names: its head's names in other libraries' checkpoints (Hugging Face, the
            original TF1 code, keras-hub), which the converters read; empty where no other
            library has the head.
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
    checkpoint_names: CheckpointNames = CheckpointNames()

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
