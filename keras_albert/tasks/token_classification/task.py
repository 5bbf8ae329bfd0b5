"""Named entities as a `FinetuningTask`: CoNLL sentences (`features`) → an
`AlbertTokenClassifier` head → entity precision, recall and F1, and the predictions files.

    task = TokenClassificationTask(options, tokenizer)  # reads train / eval (/ test) data
    task.labels                                   # from the training file; saved with the model
    model = task.build_model(backbone)            # one output per tag
    task.compile(model, optimizer)                # first-piece cross-entropy and accuracy
    model.fit(task.train_dataset(batch_size, seed), steps_per_epoch=...)
    metrics = task.evaluate(model, batch_size, output_dir)   # {"f1", ...} and the files

The original ALBERT has no NER recipe; `NER_RECIPE` is Hugging Face `run_ner`'s defaults
(learning rate 5e-5, batch 32, 3 epochs, no warmup, sequence length 128), steps set from the
file size. `evaluate` with `output_dir` writes `eval_predictions.conll`
(`word<TAB>gold<TAB>predicted`, `write_conll_predictions`) and, with `test_data` (a CoNLL file
of words only, read with `labeled=False`), `test_predictions.conll` (`word<TAB>predicted`).
"""

from __future__ import annotations

import os

import keras
import numpy as np

from keras_albert.tasks.finetuning_task import FinetuningTask
from keras_albert.tasks.recipes import EpochRecipe
from keras_albert.tasks.token_classification import defaults
from keras_albert.tasks.token_classification.features import (
    IGNORE_LABEL,
    ConllSentences,
    entity_scores,
    label_list,
    make_ner_dataset,
    read_conll,
    word_predictions,
    write_conll_predictions,
)
from keras_albert.tasks.token_classification.model import AlbertTokenClassifier
from keras_albert.tasks.token_classification.preprocessor import AlbertTokenClassifierPreprocessor
from keras_albert.training.objective import Objective

NER_RECIPE = EpochRecipe(**defaults.RECIPE)


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


class TokenClassificationTask(FinetuningTask):
    """Named entities through the fine-tuning driver: CoNLL `train_data` / `eval_data` (/ a
    words-only `test_data`), the label list from the training file, entity F1 as the main
    metric."""

    default_sequence_length = defaults.SEQUENCE_LENGTH
    preprocessor_class = AlbertTokenClassifierPreprocessor

    def __init__(self, options, tokenizer):
        super().__init__(options, tokenizer)
        self.name, self.main_metric = "ner", "f1"
        self.train = read_conll(options.train_data, name="train_data")
        self.evaluation = read_conll(options.eval_data, name="eval_data")
        self.test = (
            read_conll(options.test_data, labeled=False, name="test_data")
            if options.test_data
            else None
        )
        self.labels = label_list(self.train.tags)
        self._eval_inputs = None

    def recipe(self):
        return NER_RECIPE

    def build_model(self, backbone):
        return AlbertTokenClassifier(
            backbone,
            num_classes=len(self.labels),
            labels=list(self.labels),
            dropout=self.options.dropout,
            initializer_range=backbone.albert_config.initializer_range,
        )

    def objective(self, model):
        # Cross-entropy over the first piece of each word; -100 (other pieces, padding) skipped.
        loss = keras.losses.SparseCategoricalCrossentropy(
            from_logits=True, ignore_class=IGNORE_LABEL, name="ner_loss"
        )
        return Objective(loss, metrics=[FirstPieceAccuracy()])

    def train_dataset(self, batch_size, seed):
        return make_ner_dataset(
            self.train, self.tokenizer, self.labels, self.sequence_length, batch_size,
            training=True, seed=seed,
        )  # fmt: skip

    def evaluate(self, model, batch_size, output_dir=None):
        """Entity `precision`, `recall`, `f1` (micro) and `f1_<type>` for every type of the
        labels and of the gold tags (0 when absent: the keys do not depend on the
        predictions), plus `num_cut_words`."""
        if self._eval_inputs is None:  # the eval set is tokenized once, not at every evaluation
            self._eval_inputs = self._inputs(self.evaluation, batch_size)
        predicted, cut = self._predict(model, self._eval_inputs)
        if output_dir is not None:
            path = os.path.join(output_dir, "eval_predictions.conll")
            write_conll_predictions(path, self.evaluation, predicted)
            if self.test is not None:
                test, _ = self._predict(model, self._inputs(self.test, batch_size))
                path = os.path.join(output_dir, "test_predictions.conll")
                write_conll_predictions(path, self.test, test)
        scores = entity_scores(self.evaluation.tags, predicted)
        metrics = {key: scores["micro"][key] for key in ("precision", "recall", "f1")}
        kinds = {tag[2:] for tag in self.labels if tag != "O"}
        kinds |= {tag[2:] for tags in self.evaluation.tags for tag in tags if tag != "O"}
        for kind in sorted(kinds):
            metrics[f"f1_{kind}"] = scores[kind]["f1"] if kind in scores else 0.0
        metrics["num_cut_words"] = cut
        return metrics

    def _inputs(self, sentences: ConllSentences, batch_size: int) -> list:
        """`(features, word_positions)` per batch, in order, packed once and kept in memory."""
        unlabeled = ConllSentences(sentences.path, sentences.words, None, sentences.line_numbers)
        dataset = make_ner_dataset(
            unlabeled, self.tokenizer, self.labels, self.sequence_length, batch_size,
            with_positions=True,
        )  # fmt: skip
        return [(features, positions.to_list()) for features, positions in dataset]

    def _predict(self, model: keras.Model, inputs: list) -> tuple[list[list[str]], int]:
        """The tag of every word (from its first piece) and the number of words cut."""
        tags, cut = [], 0
        for features, positions in inputs:
            logits = np.asarray(model.predict_on_batch(features))
            batch_tags, batch_cut = word_predictions(logits, positions, self.labels)
            tags += batch_tags
            cut += batch_cut
        return tags, cut

    def summary(self):
        return {**super().summary(), "labels": self.labels}
