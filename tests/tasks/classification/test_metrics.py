"""The official GLUE metrics: equal to formulas written here from their definitions, and to
the library calls."""

import numpy as np
import pytest
from scipy import stats
from sklearn import metrics as sklearn_metrics

from keras_albert.tasks.classification import reader as glue
from keras_albert.tasks.classification.metrics import compute_metrics, predictions_from_logits

LABELS = np.array([1, 0, 1, 1, 0, 0, 1, 0, 1, 1, 0, 1])
PREDICTIONS = np.array([1, 0, 0, 1, 0, 1, 1, 1, 1, 0, 0, 1])
SCORES = np.array([4.8, 0.2, 3.1, 2.2, 1.0, 2.5, 3.3, 0.9, 4.1, 1.9, 0.0, 2.5])
SCORE_PREDICTIONS = np.array([4.1, 0.9, 2.0, 2.7, 1.4, 1.3, 3.9, 0.3, 3.5, 1.0, 0.5, 2.6])


def _confusion(labels, predictions):
    tp = np.sum((labels == 1) & (predictions == 1))
    tn = np.sum((labels == 0) & (predictions == 0))
    fp = np.sum((labels == 0) & (predictions == 1))
    fn = np.sum((labels == 1) & (predictions == 0))
    return tp, tn, fp, fn


def test_classification_metrics_equal_their_definitions_and_sklearn():
    tp, tn, fp, fn = _confusion(LABELS, PREDICTIONS)
    for name, expected, library in [
        ("SST-2", {"accuracy": (tp + tn) / len(LABELS)}, None),
        (
            "MRPC",
            {"f1": 2 * tp / (2 * tp + fp + fn), "accuracy": (tp + tn) / len(LABELS)},
            {"f1": sklearn_metrics.f1_score(LABELS, PREDICTIONS)},
        ),
        (
            "CoLA",
            {
                "matthews_correlation": (tp * tn - fp * fn)
                / np.sqrt(float((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn)))
            },
            {"matthews_correlation": sklearn_metrics.matthews_corrcoef(LABELS, PREDICTIONS)},
        ),
    ]:
        results = compute_metrics(glue.get_task(name), LABELS, PREDICTIONS)
        assert set(results) == set(expected)
        for metric, value in expected.items():
            assert results[metric] == pytest.approx(value, abs=1e-12)
        for metric, value in (library or {}).items():
            assert results[metric] == pytest.approx(value, abs=1e-12)
    # Hand-checked: tp=5, tn=3, fp=2, fn=2.
    assert (tp, tn, fp, fn) == (5, 3, 2, 2)


def test_multiclass_accuracy():
    labels = np.array([0, 1, 2, 2, 1, 0])
    predictions = np.array([0, 2, 2, 2, 1, 1])
    results = compute_metrics(glue.get_task("MNLI"), labels, predictions)
    assert results == {"accuracy": pytest.approx(4 / 6)}


def test_regression_metrics_equal_their_definitions_and_scipy():
    results = compute_metrics(glue.get_task("STS-B"), SCORES, SCORE_PREDICTIONS)
    pearson = np.corrcoef(SCORES, SCORE_PREDICTIONS)[0, 1]
    # Spearman: Pearson of the ranks, ties sharing their mean rank.
    spearman = np.corrcoef(stats.rankdata(SCORES), stats.rankdata(SCORE_PREDICTIONS))[0, 1]
    assert results["pearson"] == pytest.approx(pearson, abs=1e-12)
    assert results["spearman"] == pytest.approx(spearman, abs=1e-12)
    assert results["pearson"] == pytest.approx(stats.pearsonr(SCORES, SCORE_PREDICTIONS)[0])
    assert results["spearman"] == pytest.approx(stats.spearmanr(SCORES, SCORE_PREDICTIONS)[0])
    constant = compute_metrics(glue.get_task("STS-B"), SCORES, np.ones(12))
    assert constant == {"pearson": 0.0, "spearman": 0.0}


def test_predictions_from_logits_and_shape_check():
    logits = np.array([[0.1, 2.0, -1.0], [3.0, 0.0, 0.0]])
    np.testing.assert_array_equal(predictions_from_logits(glue.get_task("MNLI"), logits), [1, 0])
    np.testing.assert_allclose(
        predictions_from_logits(glue.get_task("STS-B"), [[0.5], [2.0]]), [0.5, 2.0]
    )
    message = r"`predictions` must have the shape of `labels`, \(12,\): labels and predictions"
    with pytest.raises(ValueError, match=message + " differ in shape"):
        compute_metrics(glue.get_task("SST-2"), LABELS, PREDICTIONS[:3])
