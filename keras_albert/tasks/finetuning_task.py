"""The one shape of a fine-tuning task, as the driver (`keras_albert.finetuning.driver`) runs
it: each task type that trains (`keras_albert.tasks.registry`) implements `FinetuningTask`.

    task = TaskClass(options, tokenizer)        # reads the train / eval (/ test) files
    task.preprocessor                            # the features: raw inputs to the model's
    recipe = task.recipe()                       # default hyperparameters, before --scale
    model = task.build_model(backbone)           # a fresh head on the initial backbone
    objective = task.objective(model)            # loss, loss weights, train metrics
    TrainingLoop(strategy, model, optimizer, objective.replica_fn)   # (or model.compile + fit:
    ... task.train_dataset(batch_size, seed) ...                     #  `task.compile`)
    metrics = task.evaluate(model, batch_size)   # {name: number}, `task.main_metric` among them
    print(task.format_results(metrics))          # the line after each evaluation
    task.evaluate(best, batch_size, output_dir)  # the same, and the predictions files written

`evaluate` returns the same keys at every call (history.csv has one column per key).

One definition of the features: the task's datasets tokenize and pack through
`task.preprocessor` (its tokenizer and packer), the task model's preprocessor, which the driver
saves with the model (`best.keras`); that model's `predict` on raw inputs computes the features
the evaluation computed.
"""

from __future__ import annotations

import abc
from typing import TYPE_CHECKING

import keras
import tensorflow as tf

from keras_albert.training.objective import Objective

if TYPE_CHECKING:
    from keras_albert.models import AlbertBackbone
    from keras_albert.tasks.recipes import EpochRecipe, Recipe


class FinetuningTask(abc.ABC):
    """A task's data, head, loss, metrics and predictions files.

    Args:
        options: the run's `keras_albert.finetuning.FinetuningOptions` (not imported here:
            the task types stand below the driver and its options); `options.task_options`
            are the task type's own (its `TaskType.options`, never None here:
            `keras_albert.finetuning.task_choice`).
        tokenizer: an `AlbertTokenizer`.

    Attributes:
        preprocessor: the task model's preprocessor (`preprocessor_class`) on `tokenizer`,
            packing to `sequence_length`; None where the task type's preprocessor cannot take
            `tokenizer` (the model then takes token ids only).
        name: the task's name (in logs and the summary).
        main_metric: the metric (a key of `evaluate`'s result) that picks the best checkpoint.
        sequence_length: `options.sequence_length`, or the task's `default_sequence_length`.
        train, evaluation, test: the task's examples (`num_train`, `num_eval` and `num_test`
            are their lengths unless a task counts otherwise); `test` is None without
            `options.test_data`, the unlabeled file `evaluate` also predicts when it writes.
        num_train: training examples, as the recipe counts them (questions, sentences, rows).
        num_train_batches_per_pass: batches of `batch_size` in one pass over the training data.
    """

    default_sequence_length: int = 512
    # The task type's `TokenizerPreprocessor` subclass (the head model's preprocessor).
    preprocessor_class: type
    # Whether `options.pad_to_multiple_of` (dynamic padding) applies to the task's batches.
    dynamic_padding: bool = False
    test = None

    @classmethod
    def check_options(cls, options) -> None:
        """Refuses, before any work, the options (and task options) the task cannot take."""
        return None  # most tasks take any

    def __init__(self, options, tokenizer):
        self.options = options
        self.tokenizer = tokenizer
        self.sequence_length = options.sequence_length or self.default_sequence_length
        self.preprocessor = self.build_preprocessor(tokenizer)
        self.name = options.dataset
        self.main_metric = "accuracy"

    def build_preprocessor(self, tokenizer):
        """The preprocessor of the task's features; a task type whose preprocessor takes more
        of its options (a question's length) passes them."""
        return self.preprocessor_class(tokenizer, sequence_length=self.sequence_length)

    @property
    def num_train(self) -> int:
        return len(self.train)

    @property
    def num_eval(self) -> int:
        return len(self.evaluation)

    @property
    def num_test(self) -> int | None:
        return None if self.test is None else len(self.test)

    def num_train_features(self) -> int:
        """Rows the training dataset draws from (SQuAD: windows); the pass length."""
        return self.num_train

    @abc.abstractmethod
    def recipe(self) -> Recipe | EpochRecipe: ...

    @abc.abstractmethod
    def build_model(self, backbone: AlbertBackbone) -> keras.Model: ...

    @abc.abstractmethod
    def objective(self, model: keras.Model) -> Objective:
        """The loss (with weights) and train metrics of `model`."""

    def compile(self, model: keras.Model, optimizer: keras.optimizers.Optimizer) -> None:
        """`model.compile` with the task's objective (for `model.fit`)."""
        model.compile(optimizer=optimizer, **self.objective(model).compile_kwargs())

    @abc.abstractmethod
    def train_dataset(self, batch_size: int, seed: int) -> tf.data.Dataset:
        """Shuffled, repeated global batches `(x, y)` (full: the last partial one dropped)."""

    @abc.abstractmethod
    def evaluate(
        self, model: keras.Model, batch_size: int, output_dir: str | None = None
    ) -> dict[str, float]:
        """The eval data's official metrics; with `output_dir`, the predictions files too: the
        eval data's and, with `options.test_data`, the test data's (`test_predictions.*`)."""

    def format_results(self, results: dict[str, float]) -> str:
        """`evaluate`'s results as the driver prints them after each evaluation (a task adds
        what a reader of the numbers must know)."""
        return ", ".join(f"{name}={value:.4g}" for name, value in results.items())

    def summary(self) -> dict:
        """What the task adds to `summary.json` (counts, skipped rows, labels)."""
        return {
            "num_train_examples": self.num_train,
            "num_eval_examples": self.num_eval,
            "num_test_examples": self.num_test,
        }


def predict_packed(model: keras.Model, inputs, **kwargs):
    """`model.predict` on the model's own inputs (token ids, as the task's datasets pack them
    through `FinetuningTask.preprocessor`), whether or not `model` carries the preprocessor
    (with one, `model.predict` takes raw inputs)."""
    return keras.Model.predict(model, inputs, **kwargs)
