"""Named entities as a fine-tuning task: the model, its loss and metrics, evaluation.

The pieces a driver plugs together (the data side is `keras_albert.text.conll`):

    train = read_conll(train_file)
    labels = label_list(train.tags)           # saved with the model: the tag of each output
    model = build_ner_model(backbone, labels)
    compile_ner_model(model, optimizer)
    model.fit(make_ner_dataset(train, tokenizer, labels, ..., training=True), ...)
    metrics = evaluate_ner(model, read_conll(eval_file), tokenizer, labels, ...,
                           predictions_path=...)

The original ALBERT has no NER recipe; `NER_RECIPE` is Hugging Face `run_ner`'s defaults
(learning rate 5e-5, batch 32, 3 epochs, sequence length 128), steps set from the file size.
"""

from __future__ import annotations

from collections.abc import Sequence

import keras
import numpy as np

from keras_albert.models import AlbertBackbone, AlbertTokenClassifier
from keras_albert.text.conll import (
    IGNORE_LABEL,
    ConllSentences,
    entity_scores,
    make_ner_dataset,
    word_predictions,
    write_conll_predictions,
)

NER_RECIPE = {"learning_rate": 5e-5, "batch_size": 32, "epochs": 3, "warmup_ratio": 0.0}
NER_SEQUENCE_LENGTH = 128
NER_MAIN_METRIC = "f1"


def build_ner_model(
    backbone: AlbertBackbone, labels: Sequence[str], dropout: float = 0.1
) -> AlbertTokenClassifier:
    """A fresh token head on `backbone`, one output per tag; the tags go into its config."""
    return AlbertTokenClassifier(
        backbone,
        num_labels=len(labels),
        labels=list(labels),
        dropout=dropout,
        initializer_range=backbone.albert_config.initializer_range,
    )


def ner_loss() -> keras.losses.Loss:
    """Cross-entropy over the first piece of each word; -100 (other pieces, padding) skipped."""
    return keras.losses.SparseCategoricalCrossentropy(
        from_logits=True, ignore_class=IGNORE_LABEL, name="ner_loss"
    )


@keras.saving.register_keras_serializable(package="keras_albert")
class FirstPieceAccuracy(keras.metrics.Metric):
    """Tag accuracy over the labeled positions (each word's first piece) only."""

    def __init__(self, name="word_accuracy", **kwargs):
        super().__init__(name=name, **kwargs)
        self.correct = self.add_variable((), initializer="zeros", name="correct")
        self.count = self.add_variable((), initializer="zeros", name="count")

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true = keras.ops.cast(y_true, "int32")
        labeled = keras.ops.not_equal(y_true, IGNORE_LABEL)
        hits = keras.ops.equal(keras.ops.argmax(y_pred, axis=-1), y_true) & labeled
        self.correct.assign_add(keras.ops.sum(keras.ops.cast(hits, "float32")))
        self.count.assign_add(keras.ops.sum(keras.ops.cast(labeled, "float32")))

    def result(self):
        return keras.ops.divide_no_nan(self.correct, self.count)

    def reset_state(self):
        self.correct.assign(0.0)
        self.count.assign(0.0)


def ner_metrics() -> list[keras.metrics.Metric]:
    return [FirstPieceAccuracy()]


def compile_ner_model(model: AlbertTokenClassifier, optimizer, **compile_kwargs) -> None:
    model.compile(optimizer=optimizer, loss=ner_loss(), metrics=ner_metrics(), **compile_kwargs)


def predict_ner(
    model: AlbertTokenClassifier,
    sentences: ConllSentences,
    tokenizer,
    labels: Sequence[str],
    sequence_length: int = NER_SEQUENCE_LENGTH,
    batch_size: int = 32,
) -> tuple[list[list[str]], int]:
    """The tag of every word (from its first piece) and the number of words cut."""
    unlabeled = ConllSentences(sentences.path, sentences.words, None, sentences.line_numbers)
    dataset = make_ner_dataset(
        unlabeled, tokenizer, labels, sequence_length, batch_size, with_positions=True
    )
    tags, cut = [], 0
    for features, positions in dataset:
        logits = np.asarray(model(features, training=False))
        batch_tags, batch_cut = word_predictions(logits, positions.to_list(), labels)
        tags += batch_tags
        cut += batch_cut
    return tags, cut


def evaluate_ner(
    model: AlbertTokenClassifier,
    sentences: ConllSentences,
    tokenizer,
    labels: Sequence[str],
    sequence_length: int = NER_SEQUENCE_LENGTH,
    batch_size: int = 32,
    predictions_path: str | None = None,
) -> dict[str, float]:
    """Entity `precision`, `recall`, `f1` (micro) and `f1_<type>`, plus `num_cut_words`."""
    if sentences.tags is None:
        raise ValueError("Evaluation needs a labeled CoNLL file (word and tag columns)")
    predicted, cut = predict_ner(model, sentences, tokenizer, labels, sequence_length, batch_size)
    if predictions_path is not None:
        write_conll_predictions(predictions_path, sentences, predicted)
    scores = entity_scores(sentences.tags, predicted)
    metrics = {key: scores["micro"][key] for key in ("precision", "recall", "f1")}
    for kind, values in scores.items():
        if kind != "micro":
            metrics[f"f1_{kind}"] = values["f1"]
    metrics["num_cut_words"] = cut
    return metrics
