"""GLUE-style sentence (pair) classification and regression as a `FinetuningTask`.

Reads the task files with `keras_albert.tasks.classification.reader`, puts an `AlbertClassifier`
head on the backbone, scores the official metrics (`glue.metrics`) beside the eval data's
majority baseline (classes, not regression: a model that predicts one class for every row is
said to be it) and writes `eval_predictions.tsv` (`index`, `prediction`, `label`) and, with
`test_data`, `test_predictions.tsv` (`index`, `prediction`: the GLUE submission layout).
`index` is the file's id column, or the example's index among the file's examples, from 0.
"""

from __future__ import annotations

import math
import os

import keras
import numpy as np

from keras_albert.tasks.classification import defaults
from keras_albert.tasks.classification.metrics import (
    compute_metrics,
    majority_baseline,
    predictions_from_logits,
)
from keras_albert.tasks.classification.model import AlbertClassifier
from keras_albert.tasks.classification.preprocessor import AlbertClassifierPreprocessor
from keras_albert.tasks.classification.reader import (
    Examples,
    make_preprocessed_dataset,
    read_examples,
)
from keras_albert.tasks.finetuning_task import FinetuningTask, predict_packed
from keras_albert.tasks.recipes import EpochRecipe, Recipe
from keras_albert.text.files import write_text_atomically
from keras_albert.training.objective import Objective

# run_glue.sh's recipes per task, and the generic one for any other task.
RECIPES = {name: Recipe(**values) for name, values in defaults.RECIPES.items()}
GENERIC_RECIPE = EpochRecipe(**defaults.GENERIC_RECIPE)


class ClassificationTask(FinetuningTask):
    """A GLUE task by name (SST-2, MRPC, STS-B, CoLA, RTE, QQP, MNLI, QNLI) or "generic"."""

    default_sequence_length = defaults.SEQUENCE_LENGTH
    preprocessor_class = AlbertClassifierPreprocessor
    dynamic_padding = True

    @classmethod
    def check_options(cls, options) -> None:
        options.task_options.task_spec(options.dataset)

    def __init__(self, options, tokenizer):
        super().__init__(options, tokenizer)
        self.spec = options.task_options.task_spec(options.dataset)
        self.name, self.main_metric = self.spec.name, self.spec.main_metric
        read = dict(task=self.spec, skip_invalid=options.skip_invalid, progress=options.verbose > 0)
        self.train = read_examples(options.train_data, name="train_data", **read)
        self.evaluation = read_examples(options.eval_data, name="eval_data", **read)
        self.test = None
        if options.test_data:
            self.test = read_examples(options.test_data, labeled=False, name="test_data", **read)
        for examples in (self.train, self.evaluation, self.test):
            if examples is not None and examples.num_skipped:
                print(
                    f"keras_albert: skipped {examples.num_skipped} invalid rows of "
                    f"{examples.path}; first: {examples.skipped[0]}"
                )
        self._eval_dataset = None
        if self.spec.is_regression:
            self.loss = keras.losses.MeanSquaredError()
        else:
            self.loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def recipe(self):
        return RECIPES.get(self.spec.name, GENERIC_RECIPE)

    def build_model(self, backbone):
        return AlbertClassifier(
            backbone, num_classes=self.spec.num_classes, dropout=self.options.dropout
        )

    def objective(self, model):
        if self.spec.is_regression:
            metrics = [keras.metrics.MeanSquaredError(name="mse")]
        else:
            metrics = [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]
        return Objective(self.loss, metrics=metrics)

    def _dataset(self, examples, batch_size, **kwargs):
        return make_preprocessed_dataset(
            examples,
            self.preprocessor,
            batch_size,
            pad_to_multiple_of=self.options.pad_to_multiple_of,
            **kwargs,
        )

    def train_dataset(self, batch_size, seed):
        return self._dataset(
            self.train,
            batch_size,
            training=True,
            seed=seed,
            group_by_length=self.options.group_by_length,
        )

    def evaluate(self, model, batch_size, output_dir=None):
        if self._eval_dataset is None:
            self._eval_dataset = self._dataset(self.evaluation, batch_size, in_memory=True)
        logits = predict_packed(model, self._eval_dataset, verbose=0)
        labels = self.evaluation.labels
        loss = float(keras.ops.convert_to_numpy(keras.ops.mean(self.loss(labels, logits))))
        predictions = predictions_from_logits(self.spec, logits)
        metrics = {"loss": loss, **compute_metrics(self.spec, labels, predictions)}
        if not self.spec.is_regression:
            metrics.update(majority_baseline(labels, predictions))
        if output_dir is not None:
            self._write(os.path.join(output_dir, "eval_predictions.tsv"), self.evaluation,
                        predictions)  # fmt: skip
            if self.test is not None:
                test_logits = predict_packed(model, self._dataset(self.test, batch_size), verbose=0)
                self._write(
                    os.path.join(output_dir, "test_predictions.tsv"),
                    self.test,
                    predictions_from_logits(self.spec, test_logits),
                )
        return metrics

    def format_results(self, results):
        constant = results.get("num_predicted_classes") == 1
        shown = super().format_results(
            {name: value for name, value in results.items() if name != "num_predicted_classes"}
        )
        if not constant:
            return shown
        shown += f": one class for all {self.num_eval} rows"
        # One class predicted scores that class's share: the majority's when it is the
        # majority class. Without an accuracy among the metrics (CoLA) it goes unsaid.
        if "accuracy" in results and math.isclose(
            results["accuracy"], results["majority_accuracy"]
        ):
            shown += " = majority baseline"
        return shown

    def _write(self, path: str, examples: Examples, predictions: np.ndarray) -> None:
        def label_text(value):
            return repr(float(value)) if self.spec.is_regression else self.spec.labels[int(value)]

        with_labels = examples.labels is not None
        lines = ["index\tprediction" + ("\tlabel" if with_labels else "")]
        for index, example_id in enumerate(examples.ids):
            row = [example_id, label_text(predictions[index])]
            if with_labels:
                row.append(label_text(examples.labels[index]))
            lines.append("\t".join(row))
        write_text_atomically(path, "\n".join(lines) + "\n")

    def summary(self):
        return {
            **super().summary(),
            "num_skipped": {
                "train": self.train.num_skipped,
                "eval": self.evaluation.num_skipped,
                "test": self.test.num_skipped if self.test is not None else None,
            },
            # What each file was read with (`options` records the option as given).
            "delimiters": {
                "train": self.train.delimiter,
                "eval": self.evaluation.delimiter,
                "test": self.test.delimiter if self.test is not None else None,
            },
        }
