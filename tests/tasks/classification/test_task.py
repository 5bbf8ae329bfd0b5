"""`ClassificationTask.evaluate` beside the official metrics: the eval data's majority baseline,
and a model that predicts one class for every row said to be it (stub models of constant
logits on real dev rows; the expected shares are counted from the file here)."""

import collections
import csv
import os

import keras
import numpy as np
import pytest

from keras_albert.finetuning.options import FinetuningOptions
from keras_albert.finetuning.task_choice import make_task
from keras_albert.text.tokenizer import AlbertTokenizer
from tests.text._paths import ALBERT_SPM, DATA_DIR

GLUE = os.path.join(DATA_DIR, "glue")


class ConstantLogits(keras.Model):
    """The same logits for every row."""

    def __init__(self, logits):
        super().__init__()
        self.constant = np.asarray(logits, "float32")

    def call(self, inputs):
        batch = keras.ops.shape(inputs["token_ids"])[0]
        return keras.ops.broadcast_to(self.constant, (batch, *self.constant.shape))


@pytest.fixture(scope="module")
def tokenizer():
    return AlbertTokenizer(ALBERT_SPM)


def _task(name, stem, tokenizer):
    path = os.path.join(GLUE, f"{stem}_dev.tsv")
    options = FinetuningOptions(
        name, path, path, "unused", preset="albert_base_v2", sequence_length=32, verbose=0
    )
    return make_task(options, tokenizer)


def _label_counts(stem):
    """The dev file's label column, counted (RTE's labels are class indices)."""
    with open(os.path.join(GLUE, f"{stem}_dev.tsv"), encoding="utf-8") as file:
        rows = list(csv.DictReader(file, delimiter="\t"))
    return collections.Counter(row["label"] for row in rows).most_common(), len(rows)


def test_one_class_for_every_row_is_said_to_be_the_majority_baseline(tokenizer):
    task = _task("RTE", "rte", tokenizer)
    counts, num_rows = _label_counts("rte")
    (majority, majority_count), (minority, minority_count) = counts
    assert majority_count > minority_count  # an unbalanced file: the two cases differ

    logits = np.zeros(2)
    logits[int(majority)] = 1.0
    results = task.evaluate(ConstantLogits(logits), batch_size=4)
    assert results["majority_accuracy"] == pytest.approx(majority_count / num_rows)
    assert results["accuracy"] == pytest.approx(majority_count / num_rows)
    assert results["num_predicted_classes"] == 1
    line = task.format_results(results)
    assert f"majority_accuracy={majority_count / num_rows:.4g}" in line
    assert line.endswith(f": one class for all {num_rows} rows = majority baseline"), line

    # One class, but not the majority's: below the baseline, not equal to it.
    results = task.evaluate(ConstantLogits(logits[::-1]), batch_size=4)
    assert results["accuracy"] == pytest.approx(minority_count / num_rows)
    assert results["majority_accuracy"] == pytest.approx(majority_count / num_rows)
    line = task.format_results(results)
    assert line.endswith(f": one class for all {num_rows} rows") and "= majority" not in line

    # Two classes predicted: the baseline is shown, nothing is said.
    line = task.format_results({**results, "num_predicted_classes": 2})
    assert line.endswith(f"majority_accuracy={majority_count / num_rows:.4g}"), line


def test_regression_has_no_majority_baseline(tokenizer):
    task = _task("STS-B", "stsb", tokenizer)
    results = task.evaluate(ConstantLogits([2.5]), batch_size=4)
    assert set(results) == {"loss", "pearson", "spearman"}
    assert "majority" not in task.format_results(results)
