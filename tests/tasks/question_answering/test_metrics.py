"""SQuAD EM/F1 against values worked out by hand from the official v2.0 script's definitions."""

import json

import pytest

from keras_albert.tasks.question_answering.metrics import (
    evaluate,
    f1_score,
    normalize_answer,
    write_json,
)


def question(qid, *golds):
    return {"id": qid, "question": "?", "answers": [{"text": g, "answer_start": 0} for g in golds]}


DATASET = {
    "data": [
        {
            "paragraphs": [
                {
                    "context": "unused",
                    "qas": [
                        question("case_punctuation", "The Eiffel Tower", "Eiffel Tower"),
                        question("articles", "an apple a day"),
                        question("partial", "New York City"),
                        question("multiple_golds", "1990", "in 1990s"),
                        question("empty_prediction", "Paris"),
                        question("unanswerable_right"),
                        question("unanswerable_wrong"),
                    ],
                }
            ]
        }
    ]
}
PREDICTIONS = {
    "case_punctuation": "eiffel TOWER!",  # "eiffel tower" == both golds: EM 1, F1 1
    "articles": "Apple, day.",  # "apple day" == "apple day": EM 1, F1 1
    "partial": "york",  # 1 common token; P = 1, R = 1/3: F1 = 2 * (1/3) / (4/3) = 1/2
    "multiple_golds": "1990s",  # vs "1990": 0; vs "in 1990s": P = 1, R = 1/2: F1 = 2/3
    "empty_prediction": "",  # answerable, empty: EM 0, F1 0
    "unanswerable_right": "",  # gold "": EM 1, F1 1
    "unanswerable_wrong": "London",  # gold "": EM 0, F1 0
}
EXACT = [1, 1, 0, 0, 0, 1, 0]
F1 = [1, 1, 1 / 2, 2 / 3, 0, 1, 0]


def test_normalization_follows_the_official_definition():
    assert normalize_answer("  The  Eiffel-Tower, (Paris)! ") == "eiffeltower paris"
    assert normalize_answer("An apple a day; theater") == "apple day theater"
    assert normalize_answer("a") == ""
    assert f1_score("", "") == 1.0
    assert f1_score("the", "") == 1.0  # both normalize to no tokens
    assert f1_score("the cat sat", "cat cat") == pytest.approx(2 * (1 / 2) * (1 / 2) / 1)


def test_scores_without_no_answer_probabilities():
    results = evaluate(DATASET, PREDICTIONS)
    assert results["total"] == 7
    assert results["exact"] == pytest.approx(100 * sum(EXACT) / 7)
    assert results["f1"] == pytest.approx(100 * sum(F1) / 7)
    assert results["HasAns_total"] == 5
    assert results["HasAns_exact"] == pytest.approx(100 * 2 / 5)
    assert results["HasAns_f1"] == pytest.approx(100 * (1 + 1 + 1 / 2 + 2 / 3) / 5)
    assert results["NoAns_total"] == 2
    assert results["NoAns_exact"] == pytest.approx(50.0)
    assert results["NoAns_f1"] == pytest.approx(50.0)
    assert "best_f1" not in results


def test_no_answer_threshold_and_best_thresholds():
    null_odds = {
        "case_punctuation": -5.0,
        "articles": -3.0,
        "partial": 0.5,
        "multiple_golds": 2.0,
        "empty_prediction": 4.0,
        "unanswerable_right": 3.0,
        "unanswerable_wrong": 1.0,
    }
    results = evaluate(DATASET, PREDICTIONS, null_odds)
    # Above the script's threshold 1.0: multiple_golds and empty_prediction (answerable: 0) and
    # unanswerable_right (1); unanswerable_wrong (1.0, not above) keeps its 0.
    assert results["exact"] == pytest.approx(100 * 3 / 7)
    assert results["f1"] == pytest.approx(100 * (1 + 1 + 1 / 2 + 0 + 0 + 1 + 0) / 7)
    # The sweep in order of null odds starts from 2 (the unanswerables) and adds each answered
    # question's score (-1 for an unanswerable answered with text):
    # exact: 2 → 3 (-5) → 4 (-3) → 4 → 3 → 3 → 3 → 3, best 4 at -3.
    assert results["best_exact"] == pytest.approx(100 * 4 / 7)
    assert results["best_exact_thresh"] == -3.0
    # f1: 2 → 3 → 4 → 4.5 (0.5) → 3.5 → 3.5 + 2/3 → same → same, best 4.5 at 0.5.
    assert results["best_f1"] == pytest.approx(100 * 4.5 / 7)
    assert results["best_f1_thresh"] == 0.5


def test_missing_predictions_count_as_zero_and_are_reported():
    partial = {"case_punctuation": "Eiffel Tower"}
    results = evaluate(DATASET, partial)
    assert results["exact"] == pytest.approx(100 / 7)
    assert results["missing"] == 6


def test_gold_answers_that_normalize_to_nothing_count_as_empty_but_answerable():
    dataset = {"data": [{"paragraphs": [{"context": "", "qas": [question("q", "The")]}]}]}
    results = evaluate(dataset, {"q": ""})
    assert results["HasAns_total"] == 1 and results["exact"] == 100.0


def test_write_json_is_atomic_and_readable(tmp_path):
    path = tmp_path / "metrics.json"
    write_json({"exact": 1.5}, path)
    assert json.loads(path.read_text()) == {"exact": 1.5}
    assert [p.name for p in tmp_path.iterdir()] == ["metrics.json"]
