"""SQuAD exact match and F1, as the official v1.1 and v2.0 evaluation scripts define them.

Definitions (the official `evaluate-v2.0.py`, which gives the v1.1 script's numbers on data
without unanswerable questions):

- an answer is normalized by lowercasing, dropping ASCII punctuation (`string.punctuation`),
  replacing the whole words "a", "an", "the" by a space, and collapsing whitespace;
- exact match is equality of normalized strings; F1 is the harmonic mean of precision and recall
  of the normalized tokens (a multiset); if either side has no token, F1 is 1 when both are empty
  and 0 otherwise;
- each score is the maximum over the question's gold answers; gold answers that normalize to ""
  are dropped and a question left with none (unanswerable) has the single gold answer "";
- with no-answer probabilities (`null_odds`), an answer is replaced by "" when its probability is
  above `no_answer_threshold` (1.0 by default, as the script), and `best_exact`/`best_f1` are the
  scores at the threshold that maximizes them (`best_*_thresh`), found by sweeping the questions in
  order of their no-answer probability.

`evaluate(dataset, predictions, null_odds)` returns the official keys: `exact`, `f1`, `total`,
`HasAns_exact`, `HasAns_f1`, `HasAns_total`, `NoAns_*` (when such questions exist), and
`best_exact`, `best_exact_thresh`, `best_f1`, `best_f1_thresh` (when `null_odds` is given).
Questions missing from `predictions` score 0, as in the official script, and are counted in
`missing`.
"""

from __future__ import annotations

import collections
import json
import os
import re
import string
from collections.abc import Mapping

from keras_albert.text.files import write_text_atomically

_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)


def normalize_answer(text: str) -> str:
    """Lowercase, drop punctuation and the articles a/an/the, collapse whitespace."""
    text = text.lower()
    text = "".join(char for char in text if char not in _PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def answer_tokens(text: str) -> list[str]:
    return normalize_answer(text).split() if text else []


def exact_score(gold: str, prediction: str) -> int:
    return int(normalize_answer(gold) == normalize_answer(prediction))


def f1_score(gold: str, prediction: str) -> float:
    gold_tokens = answer_tokens(gold)
    prediction_tokens = answer_tokens(prediction)
    if not gold_tokens or not prediction_tokens:
        return float(gold_tokens == prediction_tokens)
    common = collections.Counter(gold_tokens) & collections.Counter(prediction_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        return 0.0
    precision = num_same / len(prediction_tokens)
    recall = num_same / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def gold_answers(dataset: Mapping) -> tuple[dict[str, list[str]], dict[str, bool]]:
    """Question id → its gold answer texts ([""] when none is left after normalization), and
    question id → whether the question has answers in the file (the script's `has_ans`)."""
    golds, has_answer = {}, {}
    articles = dataset["data"] if isinstance(dataset, Mapping) else dataset
    for article in articles:
        for paragraph in article["paragraphs"]:
            for question in paragraph["qas"]:
                answers = question.get("answers", [])
                texts = [a["text"] for a in answers if normalize_answer(a["text"])]
                golds[question["id"]] = texts or [""]
                has_answer[question["id"]] = bool(answers)
    return golds, has_answer


def _best_threshold(
    predictions: Mapping[str, str],
    scores: Mapping[str, float],
    null_odds: Mapping[str, float],
    has_answer: Mapping[str, bool],
) -> tuple[float, float]:
    # Start from "every question answered with no answer" and move the threshold up past each
    # question in order of its no-answer probability.
    current = sum(1 for qid in has_answer if not has_answer[qid])
    best, best_threshold = current, 0.0
    for qid in sorted(null_odds, key=lambda k: null_odds[k]):
        if qid not in scores:
            continue
        if has_answer[qid]:
            current += scores[qid]
        else:
            current += -1 if predictions[qid] else 0
        if current > best:
            best, best_threshold = current, null_odds[qid]
    return 100.0 * best / len(scores), best_threshold


def evaluate(
    dataset: Mapping,
    predictions: Mapping[str, str],
    null_odds: Mapping[str, float] | None = None,
    no_answer_threshold: float = 1.0,
) -> dict:
    """The official SQuAD v2.0 evaluation (v1.1's numbers on answerable-only data).

    Args:
        dataset: the SQuAD JSON (the dict with "data", or its "data" list).
        predictions: question id → answer text ("" for no answer).
        null_odds: question id → no-answer probability or score, as the script's `na_prob`.
        no_answer_threshold: the script's `--na-prob-thresh`.
    """
    golds, has_answer = gold_answers(dataset)
    exact, f1 = {}, {}
    for qid, texts in golds.items():
        if qid not in predictions:
            continue
        prediction = predictions[qid]
        exact[qid] = max(exact_score(gold, prediction) for gold in texts)
        f1[qid] = max(f1_score(gold, prediction) for gold in texts)
    missing = len(golds) - len(exact)
    if null_odds is None:
        null_odds_or_zero = {qid: 0.0 for qid in golds}
    else:
        null_odds_or_zero = null_odds
    exact_thresholded, f1_thresholded = {}, {}
    for qid in exact:
        if null_odds_or_zero[qid] > no_answer_threshold:
            exact_thresholded[qid] = f1_thresholded[qid] = float(not has_answer[qid])
        else:
            exact_thresholded[qid], f1_thresholded[qid] = exact[qid], f1[qid]

    def summary(qids):
        # The script divides by all questions, so a missing prediction counts as 0.
        total = len(qids)
        return {
            "exact": 100.0 * sum(exact_thresholded.get(qid, 0) for qid in qids) / total,
            "f1": 100.0 * sum(f1_thresholded.get(qid, 0) for qid in qids) / total,
            "total": total,
        }

    results = summary(list(golds))
    for prefix, wanted in (("HasAns", True), ("NoAns", False)):
        qids = [qid for qid in golds if has_answer[qid] == wanted]
        if qids:
            results.update({f"{prefix}_{key}": value for key, value in summary(qids).items()})
    if null_odds is not None and exact:
        results["best_exact"], results["best_exact_thresh"] = _best_threshold(
            predictions, exact, null_odds, has_answer
        )
        results["best_f1"], results["best_f1_thresh"] = _best_threshold(
            predictions, f1, null_odds, has_answer
        )
    if missing:
        results["missing"] = missing
    return results


def write_json(value, path: str | os.PathLike) -> None:
    """Writes `value` as JSON atomically (a temporary file renamed into place)."""
    write_text_atomically(path, json.dumps(value, indent=2, ensure_ascii=False) + "\n")
