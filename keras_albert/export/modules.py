"""The serving module of any keras_albert model: `serving_module(model, tokenizer, spec)`, and
`export_saved_model`, which writes it.

Backbones and pretrainers get an `AlbertServingModule`; the head of a task type
(`keras_albert.tasks.registry.TASK_TYPES`) gets its task type's own module
(`TaskType.serving_module`: `AlbertClassifier` → `ClassificationServingModule`,
`AlbertQuestionAnswerer` → `QuestionAnsweringServingModule`, ...), with its own options
(`TaskType.export_options`, the spec's `task_options`).
"""

from __future__ import annotations

import dataclasses
import inspect
import os

import keras
import tensorflow as tf

from keras_albert.export.spec import ExportSpec, resolve_spec
from keras_albert.models.lora import merged_lora
from keras_albert.serving.precision import serving_model
from keras_albert.serving.saved_model import AlbertServingModule
from keras_albert.tasks.registry import BASE_MODEL_KINDS, get_task_type, model_kind_of
from keras_albert.text.tokenizer import AlbertTokenizer

# The spec's fields that a serving module takes where its constructor names them: the
# string-in packing (`text_pair`, `pad_to_max_length`) of `AlbertServingModule` and its
# subclasses, a module's own (the classifier's `class_names`), the served precision and depth.
# A module that does not name `precision` serves the model `serving_model` makes here.
_MODULE_FIELDS = ("text_pair", "pad_to_max_length", "class_names", "precision", "num_layers")
# Those that must be left unset for a module that does not name them (`precision` and
# `num_layers` apply to every model).
_REFUSED_FIELDS = ("text_pair", "pad_to_max_length", "class_names")


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
    `task_options` are a task model's own (its task type's `export_options`), and
    `text_pair`, `pad_to_max_length` and `class_names` must be left at their defaults for a
    model whose module does not take them (`class_names` is the classifier's alone).
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
    module_class = AlbertServingModule if task_type is None else task_type.serving_module_class()
    task_options = spec.own_task_options(None if task_type is None else task_type.name)
    if task_options and (task_type is None or task_type.export_options is None):
        raise ValueError(
            f"`task_options` must be empty for a {kind} model. "
            f"Received: task_options={task_options!r}"
        )
    parameters = inspect.signature(module_class).parameters
    refused = {
        name: getattr(spec, name)
        for name in _REFUSED_FIELDS
        if name not in parameters and getattr(spec, name) not in (None, False)
    }
    if refused:
        received = ", ".join(f"{name}={value!r}" for name, value in refused.items())
        raise ValueError(
            f"`{'`, `'.join(refused)}` must be left unset for a {kind} model (its serving "
            f"module, {module_class.__name__}, does not take them). Received: {received}"
        )
    if "precision" not in parameters:
        model = serving_model(model, spec.precision, spec.num_layers)
    max_sequence_length = defaults.pop("max_sequence_length", None)
    if spec.max_sequence_length is not None:
        max_sequence_length = spec.max_sequence_length
    return module_class(
        model,
        tokenizer,
        max_sequence_length=max_sequence_length,
        **{name: getattr(spec, name) for name in _MODULE_FIELDS if name in parameters},
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
