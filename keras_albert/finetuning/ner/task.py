"""Named entities as a fine-tuning task: the model, its loss and metrics, evaluation.

The pieces a driver plugs together (the data side is `keras_albert.finetuning.ner.features`):

    train = read_conll(train_file)
    labels = label_list(train.tags)           # saved with the model: the tag of each output
    model = build_ner_model(backbone, labels)
    compile_ner_model(model, optimizer)
    model.fit(make_ner_dataset(train, tokenizer, labels, ..., training=True), ...)
    metrics = evaluate_ner(model, read_conll(eval_file), tokenizer, labels, ...,
                           predictions_path=...)

The original ALBERT has no NER recipe; `NER_RECIPE` is Hugging Face `run_ner`'s defaults
(learning rate 5e-5, batch 32, 3 epochs, no warmup, sequence length 128), steps set from the
file size. `NerTask` is the driver's `FinetuningTask`: it writes `eval_predictions.conll`
(`word<TAB>gold<TAB>predicted`, `write_conll_predictions`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import keras
import numpy as np

from keras_albert.finetuning.ner import defaults
from keras_albert.finetuning.ner.features import (
    IGNORE_LABEL,
    ConllSentences,
    entity_scores,
    label_list,
    make_ner_dataset,
    read_conll,
    word_predictions,
    write_conll_predictions,
)
from keras_albert.finetuning.recipes import EpochRecipe
from keras_albert.finetuning.task import FinetuningTask
from keras_albert.models import AlbertBackbone, AlbertTokenClassifier
from keras_albert.training.objective import Objective

NER_RECIPE = EpochRecipe(**defaults.RECIPE)
NER_SEQUENCE_LENGTH = defaults.SEQUENCE_LENGTH
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


def ner_objective() -> Objective:
    return Objective(ner_loss(), metrics=ner_metrics())


def compile_ner_model(model: AlbertTokenClassifier, optimizer, **compile_kwargs) -> None:
    model.compile(optimizer=optimizer, **ner_objective().compile_kwargs(), **compile_kwargs)


def ner_inputs(
    sentences: ConllSentences,
    tokenizer,
    labels: Sequence[str],
    sequence_length: int = NER_SEQUENCE_LENGTH,
    batch_size: int = 32,
) -> list[tuple[dict, list[list[int]]]]:
    """`(features, word_positions)` per batch, in order, packed once and kept in memory (an
    evaluation set scored after every epoch is tokenized only once)."""
    unlabeled = ConllSentences(sentences.path, sentences.words, None, sentences.line_numbers)
    dataset = make_ner_dataset(
        unlabeled, tokenizer, labels, sequence_length, batch_size, with_positions=True
    )
    return [(features, positions.to_list()) for features, positions in dataset]


def predict_ner(
    model: AlbertTokenClassifier,
    sentences: ConllSentences,
    tokenizer,
    labels: Sequence[str],
    sequence_length: int = NER_SEQUENCE_LENGTH,
    batch_size: int = 32,
    inputs: list | None = None,
) -> tuple[list[list[str]], int]:
    """The tag of every word (from its first piece) and the number of words cut. `inputs`:
    the sentences' `ner_inputs`, when already made."""
    if inputs is None:
        inputs = ner_inputs(sentences, tokenizer, labels, sequence_length, batch_size)
    tags, cut = [], 0
    for features, positions in inputs:
        logits = np.asarray(model.predict_on_batch(features))
        batch_tags, batch_cut = word_predictions(logits, positions, labels)
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
    inputs: list | None = None,
) -> dict[str, float]:
    """Entity `precision`, `recall`, `f1` (micro) and `f1_<type>` for every type of `labels`
    and of the gold tags (0 when absent: the keys do not depend on the predictions), plus
    `num_cut_words`."""
    if sentences.tags is None:
        raise ValueError("Evaluation needs a labeled CoNLL file (word and tag columns)")
    predicted, cut = predict_ner(
        model, sentences, tokenizer, labels, sequence_length, batch_size, inputs
    )
    if predictions_path is not None:
        write_conll_predictions(predictions_path, sentences, predicted)
    scores = entity_scores(sentences.tags, predicted)
    metrics = {key: scores["micro"][key] for key in ("precision", "recall", "f1")}
    kinds = {tag[2:] for tag in labels if tag != "O"}
    kinds |= {tag[2:] for tags in sentences.tags for tag in tags if tag != "O"}
    for kind in sorted(kinds):
        metrics[f"f1_{kind}"] = scores[kind]["f1"] if kind in scores else 0.0
    metrics["num_cut_words"] = cut
    return metrics


class NerTask(FinetuningTask):
    """Named entities through the fine-tuning driver: CoNLL `train_data` / `eval_data`, the
    label list from the training file, entity F1 as the main metric."""

    default_sequence_length = NER_SEQUENCE_LENGTH

    def __init__(self, options, tokenizer):
        super().__init__(options, tokenizer)
        self.name, self.main_metric = "ner", NER_MAIN_METRIC
        self.train = read_conll(options.train_data)
        self.evaluation = read_conll(options.eval_data)
        self.labels = label_list(self.train.tags)
        self._eval_inputs = None

    def recipe(self):
        return NER_RECIPE

    def build_model(self, backbone):
        return build_ner_model(backbone, self.labels, dropout=self.options.dropout)

    def objective(self, model):
        return ner_objective()

    def train_dataset(self, batch_size, seed):
        return make_ner_dataset(
            self.train, self.tokenizer, self.labels, self.sequence_length, batch_size,
            training=True, seed=seed,
        )  # fmt: skip

    def evaluate(self, model, batch_size, output_dir=None):
        if self._eval_inputs is None:
            self._eval_inputs = ner_inputs(
                self.evaluation, self.tokenizer, self.labels, self.sequence_length, batch_size
            )
        path = None if output_dir is None else os.path.join(output_dir, "eval_predictions.conll")
        return evaluate_ner(
            model, self.evaluation, self.tokenizer, self.labels, self.sequence_length,
            batch_size, predictions_path=path, inputs=self._eval_inputs,
        )  # fmt: skip

    def summary(self):
        return {**super().summary(), "labels": self.labels}
