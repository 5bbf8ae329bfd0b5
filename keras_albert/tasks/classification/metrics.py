"""The official metric of each GLUE task, from scikit-learn and SciPy, and the majority
baseline beside them."""

from __future__ import annotations

import numpy as np
from scipy import stats
from sklearn import metrics as sklearn_metrics

from keras_albert.tasks.classification.reader import TaskSpec


def predictions_from_logits(task: TaskSpec, logits: np.ndarray) -> np.ndarray:
    """Class indices (argmax) or, for regression, the scores: (batch,)."""
    logits = np.asarray(logits)
    if task.is_regression:
        return logits.reshape(-1).astype(np.float32)
    return np.argmax(logits, axis=-1).astype(np.int32)


def compute_metrics(task: TaskSpec, labels: np.ndarray, predictions: np.ndarray) -> dict:
    """The task's official metrics: accuracy, F1 (of class 1), Matthews, Pearson, Spearman."""
    labels, predictions = np.asarray(labels), np.asarray(predictions)
    if labels.shape != predictions.shape:
        raise ValueError(
            f"`predictions` must have the shape of `labels`, {labels.shape}: labels and "
            f"predictions differ in shape. Received: predictions.shape={predictions.shape}"
        )
    functions = {
        "accuracy": lambda: sklearn_metrics.accuracy_score(labels, predictions),
        "f1": lambda: sklearn_metrics.f1_score(labels, predictions, zero_division=0.0),
        "matthews_correlation": lambda: sklearn_metrics.matthews_corrcoef(labels, predictions),
        "pearson": lambda: stats.pearsonr(labels, predictions).statistic,
        "spearman": lambda: stats.spearmanr(labels, predictions).statistic,
    }
    results = {}
    for name in task.metrics:
        if name in ("pearson", "spearman") and (np.ptp(predictions) == 0 or np.ptp(labels) == 0):
            results[name] = 0.0  # undefined for a constant input; SciPy warns and answers nan
        else:
            results[name] = float(functions[name]())
    return results


def majority_baseline(labels: np.ndarray, predictions: np.ndarray) -> dict:
    """`majority_accuracy`, the accuracy of predicting the most frequent label for every row,
    and `num_predicted_classes`, how many classes `predictions` use.

    A classifier that predicts one class for every row scores the share of that class,
    at most the majority's, whatever its F1 (SST-2 dev rows all called positive: accuracy
    0.775, F1 0.873): these two say so beside the official metrics."""
    labels, predictions = np.asarray(labels), np.asarray(predictions)
    counts = np.unique(labels, return_counts=True)[1]
    return {
        "majority_accuracy": float(counts.max() / len(labels)),
        "num_predicted_classes": int(len(np.unique(predictions))),
    }
