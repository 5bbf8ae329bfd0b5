"""The serving module of any keras_albert model: `serving_module(model, tokenizer, ...)`, and
`export_saved_model`, which writes it.

Classifiers, regressors, backbones and pretrainers get an `AlbertServingModule`; the head of a
task type (`keras_albert.tasks.registry.TASK_TYPES`) gets its task type's own module
(`TaskType.serving_module`: `AlbertQuestionAnswerer` → `QuestionAnsweringServingModule`, ...),
with its own options (`TaskType.export_options`).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence

import keras
import tensorflow as tf

from keras_albert.serving.precision import serving_model
from keras_albert.serving.saved_model import AlbertServingModule, model_task
from keras_albert.tasks.registry import task_type_of
from keras_albert.text.tokenizer import AlbertTokenizer


def own_task_options(model: keras.Model, task_options: Mapping | None):
    """Of `task_options` (a task type's name, e.g. "multiple_choice", mapped to its export
    options), the options of `model`'s own task type, or None."""
    task_type = task_type_of(model)
    return None if task_type is None else (task_options or {}).get(task_type.name)


def _task_arguments(task_options) -> dict:
    """A task module's keyword arguments: its export options dataclass, or a mapping."""
    if task_options is None:
        return {}
    if dataclasses.is_dataclass(task_options):
        return dataclasses.asdict(task_options)
    return dict(task_options)


def serving_module(
    model,
    tokenizer,
    max_sequence_length: int | None = None,
    task_options=None,
    precision: str = "float32",
    num_layers: int | None = None,
    **options,
):
    """The serving module of `model` (see the module docstring).

    `task_options` are the task module's own arguments (its task type's `export_options`
    dataclass, or a mapping: e.g. `doc_stride` for question answering, `num_choices` for
    multiple choice); `precision` and `num_layers` apply to every model
    (`keras_albert.serving.precision`); `options` are `AlbertServingModule`'s and must be left
    at their defaults for a task model.
    """
    task_type = task_type_of(model)
    module_class = None if task_type is None else task_type.serving_module_class()
    if module_class is None or module_class is AlbertServingModule:
        if task_options:
            raise ValueError(
                f"`task_options` must be empty for a {model_task(model)} model. "
                f"Received: task_options={task_options!r}"
            )
        return AlbertServingModule(
            model,
            tokenizer,
            max_sequence_length=max_sequence_length,
            precision=precision,
            num_layers=num_layers,
            **options,
        )
    given = {name: value for name, value in options.items() if value not in (None, False)}
    if given:
        received = ", ".join(f"{name}={value!r}" for name, value in given.items())
        raise ValueError(
            f"`{'`, `'.join(given)}` must be left unset for a {task_type.name} model (they are "
            f"the classifier's serving options). Received: {received}"
        )
    model = serving_model(model, precision, num_layers)
    return module_class(
        model, tokenizer, max_sequence_length=max_sequence_length, **_task_arguments(task_options)
    )


def export_saved_model(
    model: keras.Model,
    tokenizer: AlbertTokenizer,
    export_dir: str | os.PathLike,
    text_pair: bool = False,
    max_sequence_length: int | None = None,
    pad_to_max_length: bool = False,
    class_names: Sequence[str] | None = None,
    precision: str = "float32",
    num_layers: int | None = None,
    task_options: dict | None = None,
) -> tf.Module:
    """Writes `model` + `tokenizer` as a TF Serving SavedModel to `export_dir`.

    See the module docstring for the signatures, and `AlbertServingModule` for the arguments.
    Writes `export_dir` directly; `keras_albert.export.export_for_serving` writes a complete
    versioned TF Serving directory atomically. Returns the module (its `pack` and `outputs`
    run the endpoints eagerly). A task model (question answering, multiple choice, token
    classification) is exported by `serving_module`, with
    `task_options` its module's own arguments.
    """
    module = serving_module(
        model,
        tokenizer,
        max_sequence_length=max_sequence_length,
        task_options=task_options,
        text_pair=text_pair,
        pad_to_max_length=pad_to_max_length,
        class_names=class_names,
        precision=precision,
        num_layers=num_layers,
    )
    module.save(export_dir)
    return module


def load_for_export(
    checkpoint: str | os.PathLike,
    vocabulary: str | os.PathLike | None = None,
    model_kind: str | None = None,
    config=None,
    num_classes: int | None = None,
    lowercase: bool | None = None,
    strip_accents: bool | None = None,
) -> tuple[keras.Model, AlbertTokenizer]:
    """The model and tokenizer every export of a checkpoint writes (SavedModel, TFLite, TF-Hub).

    `checkpoint` is any form `keras_albert.convert.load_checkpoint` reads (`model_kind`,
    `config` and `num_classes` are its `model`, `config` and `num_classes`); `vocabulary` (a
    SentencePiece model or a WordPiece vocabulary) defaults to the one found beside it, and is
    required before anything is loaded (`require_vocabulary`); `lowercase` and `strip_accents`
    default to what the checkpoint's run recorded (`resolve_normalization`).
    """
    from keras_albert.convert import load_checkpoint, require_vocabulary, resolve_normalization

    vocabulary = require_vocabulary(checkpoint, vocabulary)
    model = load_checkpoint(checkpoint, model=model_kind, config=config, num_classes=num_classes)
    normalization = resolve_normalization(checkpoint, lowercase, strip_accents)
    return model, AlbertTokenizer(vocabulary, **normalization)
