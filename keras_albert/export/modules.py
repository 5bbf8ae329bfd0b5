"""The serving module of any keras_albert model: `serving_module(model, tokenizer, spec)`, and
`export_saved_model`, which writes it.

Classifiers, regressors, backbones and pretrainers get an `AlbertServingModule`; the head of a
task type (`keras_albert.tasks.registry.TASK_TYPES`) gets its task type's own module
(`TaskType.serving_module`: `AlbertQuestionAnswerer` → `QuestionAnsweringServingModule`, ...),
with its own options (`TaskType.export_options`, the spec's `task_options`).
"""

from __future__ import annotations

import dataclasses
import os

import keras
import tensorflow as tf

from keras_albert.export.spec import ExportSpec, resolve_spec
from keras_albert.models.lora import merged_lora
from keras_albert.serving.precision import serving_model
from keras_albert.serving.saved_model import AlbertServingModule
from keras_albert.tasks.registry import BASE_MODEL_KINDS, get_task_type, model_kind_of
from keras_albert.text.tokenizer import AlbertTokenizer

# The spec's fields that only `AlbertServingModule` reads (a task model's module has its own
# inputs and, in `task_options`, its own options).
_STRING_IN_FIELDS = ("text_pair", "pad_to_max_length", "class_names")


def _task_arguments(task_options) -> dict:
    """A task module's keyword arguments: its export options dataclass, or a mapping."""
    if task_options is None:
        return {}
    if dataclasses.is_dataclass(task_options):
        return dataclasses.asdict(task_options)
    return dict(task_options)


def model_tokenizer(model, tokenizer: AlbertTokenizer | None = None) -> AlbertTokenizer:
    """`tokenizer`, else the tokenizer of the preprocessor `model` carries (`from_preset`, or
    `preprocessor=`): the string-in graph then tokenizes and packs with the objects `fit` used."""
    if tokenizer is not None:
        return tokenizer
    preprocessor = getattr(model, "preprocessor", None)
    if preprocessor is None:
        raise ValueError(
            "`tokenizer` must be given for a model that carries no preprocessor (load it with "
            "`from_preset`, or give `preprocessor=`). Received: tokenizer=None"
        )
    return preprocessor.tokenizer


def serving_module(model, tokenizer=None, spec: ExportSpec | None = None, **fields):
    """The serving module of `model` (see the module docstring) that `spec` describes; the
    tokenizer is `tokenizer`, or that of the preprocessor `model` carries (`model_tokenizer`).
    A task module's packing options that `spec` leaves unset (`max_sequence_length`, and
    those `task_options` do not give) are that preprocessor's (`serving_options()`: the
    question answerer's window, the multiple-choice model's `max_qa_length`), so that the
    string-in graph builds the features `fit` and `predict` did.

    `fields` are `ExportSpec` fields (`resolve_spec`). `precision` and `num_layers` apply to
    every model (`keras_albert.serving.precision`), `max_sequence_length` to every module;
    `task_options` are a task model's own, and `text_pair`, `pad_to_max_length` and
    `class_names` must be left at their defaults for a task model.
    """
    spec = resolve_spec(spec, fields, "savedmodel")
    tokenizer = model_tokenizer(model, tokenizer)
    preprocessor = getattr(model, "preprocessor", None)
    # The packing options of the preprocessor `fit` used, where the spec leaves them unset.
    defaults = {} if preprocessor is None else preprocessor.serving_options()
    # LoRA adapters merged into their kernels: the served graph multiplies once, as a model
    # fine-tuned in full (a model loaded from a file is merged already).
    model = merged_lora(model)
    kind = model_kind_of(model)
    task_type = None if kind in BASE_MODEL_KINDS else get_task_type(kind)
    task_options = spec.own_task_options(None if task_type is None else task_type.name)
    module_class = None if task_type is None else task_type.serving_module_class()
    if module_class is None or module_class is AlbertServingModule:
        if task_options:
            raise ValueError(
                f"`task_options` must be empty for a {kind} model. "
                f"Received: task_options={task_options!r}"
            )
        return AlbertServingModule(
            model,
            tokenizer,
            max_sequence_length=spec.max_sequence_length,
            precision=spec.precision,
            num_layers=spec.num_layers,
            **{name: getattr(spec, name) for name in _STRING_IN_FIELDS},
        )
    given = {
        name: getattr(spec, name)
        for name in _STRING_IN_FIELDS
        if getattr(spec, name) not in (None, False)
    }
    if given:
        received = ", ".join(f"{name}={value!r}" for name, value in given.items())
        raise ValueError(
            f"`{'`, `'.join(given)}` must be left unset for a {task_type.name} model (they are "
            f"the classifier's serving options). Received: {received}"
        )
    model = serving_model(model, spec.precision, spec.num_layers)
    max_sequence_length = defaults.pop("max_sequence_length", None)
    if spec.max_sequence_length is not None:
        max_sequence_length = spec.max_sequence_length
    return module_class(
        model,
        tokenizer,
        max_sequence_length=max_sequence_length,
        **{**defaults, **_task_arguments(task_options)},
    )


def export_saved_model(
    model: keras.Model,
    tokenizer: AlbertTokenizer | None,
    export_dir: str | os.PathLike,
    spec: ExportSpec | None = None,
    **fields,
) -> tf.Module:
    """Writes `model` + `tokenizer` (default: the tokenizer of the preprocessor `model`
    carries) as a TF Serving SavedModel to `export_dir`.

    See the module docstring for the modules, `ExportSpec` for the spec (`fields`: its fields,
    `resolve_spec`). Writes `export_dir` directly; `keras_albert.export.export_for_serving`
    writes a complete versioned TF Serving directory atomically. Returns the module (its `pack`
    and `outputs` run the endpoints eagerly).
    """
    module = serving_module(model, tokenizer, spec, **fields)
    module.save(export_dir)
    return module
