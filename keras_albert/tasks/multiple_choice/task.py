"""RACE as a `FinetuningTask`: questions (`keras_albert.tasks.multiple_choice.features`) → an
`AlbertMultipleChoice` head → accuracy (and per level) and the predictions files.

    task = MultipleChoiceTask(options, tokenizer)  # reads train_data / eval_data (/ test_data)
    model = task.build_model(backbone)            # run_race: dropout 0.1, stddev 0.02
    task.compile(model, optimizer)                # cross-entropy over the choices, accuracy
    model.fit(task.train_dataset(batch_size, seed), steps_per_epoch=...)
    metrics = task.evaluate(model, batch_size, output_dir)   # {"accuracy", ...} and the files

`RACE_RECIPE` holds the original README's hyperparameters for RACE (`run_race.py`; the numbers
are in `defaults.py`). `evaluate` with `output_dir` writes `eval_predictions.jsonl`, one line per
question (`write_race_predictions`), and with `test_data` (read with `labeled=False`: passages
without `answers`) `test_predictions.jsonl`, the same lines without the gold `label`.
"""

from __future__ import annotations

import dataclasses
import os

import keras
import numpy as np
import tensorflow as tf

from keras_albert.tasks.finetuning_task import FinetuningTask, predict_packed
from keras_albert.tasks.multiple_choice import defaults
from keras_albert.tasks.multiple_choice.features import (
    RaceExamples,
    accuracy_by_level,
    make_race_dataset,
    read_race,
    write_race_predictions,
)
from keras_albert.tasks.multiple_choice.model import AlbertMultipleChoice
from keras_albert.tasks.multiple_choice.preprocessor import AlbertMultipleChoicePreprocessor
from keras_albert.tasks.recipes import Recipe
from keras_albert.text.pipeline import served_from_memory
from keras_albert.training.objective import Objective

RACE_RECIPE = Recipe(**defaults.RECIPE)


def _softmax(logits: np.ndarray) -> np.ndarray:
    shifted = logits - logits.max(axis=-1, keepdims=True)
    exponentials = np.exp(shifted)
    return exponentials / exponentials.sum(axis=-1, keepdims=True)


class MultipleChoiceTask(FinetuningTask):
    """RACE through the fine-tuning driver: `train_data` / `eval_data` (/ `test_data`) are what
    `read_race` reads (a file or a split directory); the main metric is accuracy."""

    default_sequence_length = defaults.SEQUENCE_LENGTH
    preprocessor_class = AlbertMultipleChoicePreprocessor

    def __init__(self, options, tokenizer):
        super().__init__(options, tokenizer)
        self.name, self.main_metric = "race", "accuracy"
        self.train = read_race(options.train_data)
        self.evaluation = read_race(options.eval_data)
        self.test = read_race(options.test_data, labeled=False) if options.test_data else None
        self.max_qa_length = options.task_options.max_qa_length
        self._eval_inputs = None

    def build_preprocessor(self, tokenizer):
        return self.preprocessor_class(
            tokenizer,
            sequence_length=self.sequence_length,
            max_qa_length=self.options.task_options.max_qa_length,
        )

    def recipe(self):
        return RACE_RECIPE

    def build_model(self, backbone):
        return AlbertMultipleChoice(
            backbone,
            dropout=self.options.dropout,
            initializer_range=backbone.albert_config.initializer_range,
        )

    def objective(self, model):
        # Absent choices score -1e9: no probability, so no part in the loss.
        loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True, name="race_loss")
        return Objective(loss, metrics=[keras.metrics.SparseCategoricalAccuracy(name="accuracy")])

    def train_dataset(self, batch_size, seed):
        return make_race_dataset(
            self.train, self.tokenizer, self.sequence_length, batch_size,
            max_qa_length=self.max_qa_length, training=True, seed=seed,
        )  # fmt: skip

    def evaluate(self, model, batch_size, output_dir=None):
        if self._eval_inputs is None:  # the eval set is tokenized once, not at every evaluation
            self._eval_inputs = self._inputs(self.evaluation, batch_size)
        probabilities = self._probabilities(model, self._eval_inputs)
        if output_dir is not None:
            path = os.path.join(output_dir, "eval_predictions.jsonl")
            write_race_predictions(path, self.evaluation, probabilities)
            if self.test is not None:
                test = self._probabilities(model, self._inputs(self.test, batch_size))
                path = os.path.join(output_dir, "test_predictions.jsonl")
                write_race_predictions(path, self.test, test)
        return accuracy_by_level(self.evaluation, np.argmax(probabilities, axis=-1))

    def _inputs(self, examples: RaceExamples, batch_size: int) -> tf.data.Dataset:
        """The model inputs of every question, in order, packed once and served from memory."""
        unlabeled = dataclasses.replace(examples, labels=None)
        dataset = make_race_dataset(
            unlabeled, self.tokenizer, self.sequence_length, batch_size,
            max_qa_length=self.max_qa_length,
        )  # fmt: skip
        return served_from_memory(dataset, batch_size)

    def _probabilities(self, model: keras.Model, inputs: tf.data.Dataset) -> np.ndarray:
        """`(questions, choices)`; absent choices get 0."""
        # In float64: float32 rounding can tie (or swap) choices whose logits differ by ~1e-7,
        # and the predicted letter must be the model's argmax.
        return _softmax(np.asarray(predict_packed(model, inputs, verbose=0), dtype=np.float64))
