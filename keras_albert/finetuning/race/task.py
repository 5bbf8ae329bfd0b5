"""RACE as a fine-tuning task: the model, its loss and metrics, evaluation and predictions.

The pieces a driver plugs together (the data side is `keras_albert.finetuning.race.features`):

    examples = read_race(train_paths)
    model = build_race_model(backbone)
    compile_race_model(model, optimizer)
    model.fit(make_race_dataset(examples, tokenizer, ..., training=True), steps_per_epoch=...)
    metrics = evaluate_race(model, read_race(eval_paths), tokenizer, ..., predictions_path=...)

`RACE_RECIPE` holds the original README's hyperparameters for RACE (`run_race.py`;
the numbers are in `defaults.py`). `RaceTask` is the driver's `FinetuningTask`: it
writes `eval_predictions.jsonl`, one line per question (`write_race_predictions`).
"""

from __future__ import annotations

import dataclasses
import os

import keras
import numpy as np
import tensorflow as tf

from keras_albert.finetuning.race import defaults
from keras_albert.finetuning.race.features import (
    MAX_QA_LENGTH,
    RaceExamples,
    accuracy_by_level,
    make_race_dataset,
    read_race,
    write_race_predictions,
)
from keras_albert.finetuning.recipes import Recipe
from keras_albert.finetuning.task import FinetuningTask
from keras_albert.models import AlbertBackbone, AlbertMultipleChoice
from keras_albert.text.pipeline import served_from_memory
from keras_albert.training.objective import Objective

RACE_RECIPE = Recipe(**defaults.RECIPE)
RACE_SEQUENCE_LENGTH = defaults.SEQUENCE_LENGTH
RACE_MAIN_METRIC = "accuracy"


def build_race_model(backbone: AlbertBackbone, dropout: float = 0.1) -> AlbertMultipleChoice:
    """A fresh multiple-choice head on `backbone` (run_race: dropout 0.1, stddev 0.02)."""
    return AlbertMultipleChoice(
        backbone, dropout=dropout, initializer_range=backbone.albert_config.initializer_range
    )


def race_loss() -> keras.losses.Loss:
    """Cross-entropy over the choices (absent choices score -1e9 and take no part)."""
    return keras.losses.SparseCategoricalCrossentropy(from_logits=True, name="race_loss")


def race_metrics() -> list[keras.metrics.Metric]:
    return [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]


def race_objective() -> Objective:
    return Objective(race_loss(), metrics=race_metrics())


def compile_race_model(model: AlbertMultipleChoice, optimizer, **compile_kwargs) -> None:
    model.compile(optimizer=optimizer, **race_objective().compile_kwargs(), **compile_kwargs)


def race_inputs(
    examples: RaceExamples,
    tokenizer,
    sequence_length: int = RACE_SEQUENCE_LENGTH,
    batch_size: int = 8,
    max_qa_length: int = MAX_QA_LENGTH,
) -> tf.data.Dataset:
    """The model inputs of every question, in order, packed once and served from memory (an
    evaluation set scored after every epoch is tokenized only once)."""
    unlabeled = dataclasses.replace(examples, labels=None)
    dataset = make_race_dataset(
        unlabeled, tokenizer, sequence_length, batch_size, max_qa_length=max_qa_length
    )
    return served_from_memory(dataset, batch_size)


def predict_race(
    model: AlbertMultipleChoice,
    examples: RaceExamples,
    tokenizer,
    sequence_length: int = RACE_SEQUENCE_LENGTH,
    batch_size: int = 8,
    max_qa_length: int = MAX_QA_LENGTH,
    inputs: tf.data.Dataset | None = None,
) -> np.ndarray:
    """Probabilities `(questions, choices)`; absent choices get 0. `inputs`: the examples'
    `race_inputs`, when already made."""
    if inputs is None:
        inputs = race_inputs(examples, tokenizer, sequence_length, batch_size, max_qa_length)
    return _softmax(np.asarray(model.predict(inputs, verbose=0)))


def evaluate_race(
    model: AlbertMultipleChoice,
    examples: RaceExamples,
    tokenizer,
    sequence_length: int = RACE_SEQUENCE_LENGTH,
    batch_size: int = 8,
    max_qa_length: int = MAX_QA_LENGTH,
    predictions_path: str | None = None,
    inputs: tf.data.Dataset | None = None,
) -> dict[str, float]:
    """Accuracy (and per level when known); writes the predictions file when asked."""
    probabilities = predict_race(
        model, examples, tokenizer, sequence_length, batch_size, max_qa_length, inputs
    )
    if predictions_path is not None:
        write_race_predictions(predictions_path, examples, probabilities)
    return accuracy_by_level(examples, np.argmax(probabilities, axis=-1))


def _softmax(logits: np.ndarray) -> np.ndarray:
    shifted = logits - logits.max(axis=-1, keepdims=True)
    exponentials = np.exp(shifted)
    return exponentials / exponentials.sum(axis=-1, keepdims=True)


class RaceTask(FinetuningTask):
    """RACE through the fine-tuning driver: `train_data` / `eval_data` are what `read_race`
    reads (a file or a split directory); the main metric is accuracy."""

    default_sequence_length = RACE_SEQUENCE_LENGTH

    def __init__(self, options, tokenizer):
        super().__init__(options, tokenizer)
        self.name, self.main_metric = "race", RACE_MAIN_METRIC
        self.train = read_race(options.train_data)
        self.evaluation = read_race(options.eval_data)
        self.max_qa_length = options.max_qa_length
        self._eval_inputs = None

    def recipe(self):
        return RACE_RECIPE

    def build_model(self, backbone):
        return build_race_model(backbone, dropout=self.options.dropout)

    def objective(self, model):
        return race_objective()

    def train_dataset(self, batch_size, seed):
        return make_race_dataset(
            self.train, self.tokenizer, self.sequence_length, batch_size,
            max_qa_length=self.max_qa_length, training=True, seed=seed,
        )  # fmt: skip

    def evaluate(self, model, batch_size, output_dir=None):
        if self._eval_inputs is None:
            self._eval_inputs = race_inputs(
                self.evaluation, self.tokenizer, self.sequence_length, batch_size,
                self.max_qa_length,
            )  # fmt: skip
        path = None if output_dir is None else os.path.join(output_dir, "eval_predictions.jsonl")
        return evaluate_race(
            model, self.evaluation, self.tokenizer, self.sequence_length, batch_size,
            self.max_qa_length, predictions_path=path, inputs=self._eval_inputs,
        )  # fmt: skip
