"""The serving module of any keras_albert model: `serving_module(model, tokenizer, ...)`.

Classifiers, regressors, backbones and pretrainers get an `AlbertServingModule`; the task models
get theirs: `AlbertQuestionAnswerer` → `QuestionAnsweringServingModule`, `AlbertMultipleChoice`
→ `MultipleChoiceServingModule`, `AlbertTokenClassifier` → `TokenClassificationServingModule`.
"""

from __future__ import annotations

from collections.abc import Mapping

from keras_albert.export.multiple_choice import MultipleChoiceServingModule
from keras_albert.export.precision import serving_model
from keras_albert.export.question_answering import QuestionAnsweringServingModule
from keras_albert.export.saved_model import AlbertServingModule, model_task
from keras_albert.export.token_classification import TokenClassificationServingModule

TASK_MODULES = {
    "question_answering": QuestionAnsweringServingModule,
    "multiple_choice": MultipleChoiceServingModule,
    "token_classification": TokenClassificationServingModule,
}


def serving_module(
    model,
    tokenizer,
    max_sequence_length: int | None = None,
    task_options: Mapping | None = None,
    precision: str = "float32",
    num_layers: int | None = None,
    **options,
):
    """The serving module of `model` (see the module docstring).

    `task_options` are the task module's own arguments (e.g. `doc_stride` for question
    answering, `num_choices` for multiple choice); `precision` and `num_layers` apply to every
    model (`keras_albert.export.precision`); `options` are `AlbertServingModule`'s and must be
    left at their defaults for a task model.
    """
    task = model_task(model)
    if task not in TASK_MODULES:
        if task_options:
            raise ValueError(
                f"`task_options` must be empty for a {task} model. "
                f"Received: task_options={dict(task_options)!r}"
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
            f"`{'`, `'.join(given)}` must be left unset for a {task} model (they are the "
            f"classifier's serving options). Received: {received}"
        )
    model = serving_model(model, precision, num_layers)
    return TASK_MODULES[task](
        model, tokenizer, max_sequence_length=max_sequence_length, **dict(task_options or {})
    )
