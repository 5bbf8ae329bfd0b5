"""RACE as a fine-tuning task: the model, its loss and metrics, evaluation and predictions.

The pieces a driver plugs together (the data side is `keras_albert.text.race`):

    examples = read_race(train_paths)
    model = build_race_model(backbone)
    compile_race_model(model, optimizer)
    model.fit(make_race_dataset(examples, tokenizer, ..., training=True), steps_per_epoch=...)
    metrics = evaluate_race(model, read_race(eval_paths), tokenizer, ..., predictions_path=...)

`RACE_RECIPE` holds the original README's hyperparameters for RACE (`run_race.py` with
`--max_seq_length=512 --max_qa_length=128 --train_batch_size=32 --learning_rate=1e-5
--train_step=12000 --warmup_step=1000`).
"""

from __future__ import annotations

import keras
import numpy as np

from keras_albert.models import AlbertBackbone, AlbertMultipleChoice
from keras_albert.text.race import (
    MAX_QA_LENGTH,
    RaceExamples,
    accuracy_by_level,
    make_race_dataset,
    write_race_predictions,
)

RACE_RECIPE = {"learning_rate": 1e-5, "batch_size": 32, "train_steps": 12000, "warmup_steps": 1000}
RACE_SEQUENCE_LENGTH = 512
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


def compile_race_model(model: AlbertMultipleChoice, optimizer, **compile_kwargs) -> None:
    model.compile(optimizer=optimizer, loss=race_loss(), metrics=race_metrics(), **compile_kwargs)


def predict_race(
    model: AlbertMultipleChoice,
    examples: RaceExamples,
    tokenizer,
    sequence_length: int = RACE_SEQUENCE_LENGTH,
    batch_size: int = 8,
    max_qa_length: int = MAX_QA_LENGTH,
) -> np.ndarray:
    """Probabilities `(questions, choices)`; absent choices get 0."""
    unlabeled = RaceExamples(
        examples.ids,
        examples.articles,
        examples.questions,
        examples.options,
        None,
        examples.levels,
        examples.sources,
    )
    dataset = make_race_dataset(
        unlabeled, tokenizer, sequence_length, batch_size, max_qa_length=max_qa_length
    )
    logits = np.concatenate([np.asarray(model(features, training=False)) for features in dataset])
    return _softmax(logits)


def evaluate_race(
    model: AlbertMultipleChoice,
    examples: RaceExamples,
    tokenizer,
    sequence_length: int = RACE_SEQUENCE_LENGTH,
    batch_size: int = 8,
    max_qa_length: int = MAX_QA_LENGTH,
    predictions_path: str | None = None,
) -> dict[str, float]:
    """Accuracy (and per level when known); writes the predictions file when asked."""
    probabilities = predict_race(
        model, examples, tokenizer, sequence_length, batch_size, max_qa_length
    )
    if predictions_path is not None:
        write_race_predictions(predictions_path, examples, probabilities)
    return accuracy_by_level(examples, np.argmax(probabilities, axis=-1))


def _softmax(logits: np.ndarray) -> np.ndarray:
    shifted = logits - logits.max(axis=-1, keepdims=True)
    exponentials = np.exp(shifted)
    return exponentials / exponentials.sum(axis=-1, keepdims=True)
