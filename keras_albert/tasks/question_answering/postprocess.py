"""Model outputs over SQuAD windows → answer texts, no-answer scores and the prediction files.

Two decoders, one per answerability head (see `AlbertQuestionAnswerer`):

- `decode_null_span` (BERT / Hugging Face style): in each window the `n_best_size` best start
  and end positions are paired; a pair is kept when both are context tokens, start ≤ end, the
  span is at most `max_answer_length` tokens and the window is the start token's max-context
  window; the score is start logit + end logit. The null score is the smallest
  `start_logits[0] + end_logits[0]` over the question's windows; `null_odds` = null score − best
  span score.
- `decode_answer_class` (the original ALBERT v2 head): pairs are the head's top-k starts × top-k
  ends per start, scored by start log-prob + end log-prob; `null_odds` is the smallest
  answerability logit (`cls_logits`) over the question's windows, as the original.

Windows of one question are merged (features must come grouped by question, as
`squad_features` yields them); candidates with the same text are kept once (the best). A
question is answered "" when its `null_odds` > `null_score_threshold` (v2; None = always answer,
as v1.1). Answers are `context[answer_start:answer_end]`, exact substrings of the context.
`write_prediction_files` writes `predictions.json`, `null_odds.json`, `nbest_predictions.json`;
`write_test_predictions` the submission files of a test file, `test_predictions.json` (and for
v2.0 `test_null_odds.json`).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import os
from collections.abc import Iterable, Mapping

import numpy as np

from keras_albert.tasks.question_answering import defaults
from keras_albert.tasks.question_answering.features import SquadFeature
from keras_albert.tasks.question_answering.metrics import evaluate, write_json
from keras_albert.validation import require_positive_int


@dataclasses.dataclass
class SquadPredictions:
    """Per question id: the answer, the no-answer score, the n-best list and the best span."""

    predictions: dict[str, str]
    null_odds: dict[str, float]
    nbest: dict[str, list[dict]]
    best_span: dict[str, dict]


@dataclasses.dataclass(frozen=True)
class _Candidate:
    window: int
    start: int
    end: int
    start_score: float
    end_score: float

    @property
    def score(self) -> float:
        return self.start_score + self.end_score


def _valid(feature: SquadFeature, start: int, end: int, max_answer_length: int) -> bool:
    length = len(feature.token_ids)
    if not (0 <= start < length and 0 <= end < length):
        return False
    if feature.token_starts[start] < 0 or feature.token_starts[end] < 0:
        return False
    if not feature.max_context[start] or end < start:
        return False
    return end - start + 1 <= max_answer_length


def _span_text(feature: SquadFeature, start: int, end: int) -> tuple[str, int, int]:
    begin, stop = int(feature.token_starts[start]), int(feature.token_ends[end])
    context = feature.context
    # A span that begins or ends on whitespace (a lone "▁" piece) is trimmed to its text.
    while begin < stop and context[begin].isspace():
        begin += 1
    while stop > begin and context[stop - 1].isspace():
        stop -= 1
    return context[begin:stop], begin, stop


def _softmax(scores: list[float]) -> list[float]:
    if not scores:
        return []
    top = max(scores)
    exps = [math.exp(score - top) for score in scores]
    total = sum(exps)
    return [value / total for value in exps]


def _finish(
    qid: str,
    features: list[SquadFeature],
    candidates: list[_Candidate],
    null_score: float | None,
    n_best_size: int,
    result: SquadPredictions,
    null_score_threshold: float | None,
) -> None:
    candidates.sort(key=lambda candidate: candidate.score, reverse=True)
    nbest, seen = [], set()
    for candidate in candidates:
        if len(nbest) >= n_best_size:
            break
        text, begin, stop = _span_text(features[candidate.window], candidate.start, candidate.end)
        if text in seen or not text:
            continue
        seen.add(text)
        nbest.append(
            {
                "text": text,
                "answer_start": begin,
                "answer_end": stop,
                "start_score": candidate.start_score,
                "end_score": candidate.end_score,
                "score": candidate.score,
            }
        )
    best = nbest[0] if nbest else {"text": "", "answer_start": 0, "answer_end": 0, "score": None}
    if null_score is not None:
        null_entry = {"text": "", "answer_start": 0, "answer_end": 0, "score": null_score}
        nbest.append(null_entry)
        nbest.sort(key=lambda entry: entry["score"], reverse=True)
        nbest = nbest[:n_best_size]
        odds = null_score - best["score"] if best["score"] is not None else math.inf
    else:
        odds = 0.0 if best["score"] is not None else math.inf
    for entry, probability in zip(nbest, _softmax([e["score"] for e in nbest]), strict=True):
        entry["probability"] = probability
    result.null_odds[qid] = float(odds)
    result.nbest[qid] = nbest
    result.best_span[qid] = best
    result.predictions[qid] = best["text"]
    if null_score_threshold is not None and odds > null_score_threshold:
        result.predictions[qid] = ""


def _by_question(features: Iterable[SquadFeature], num_rows: int):
    features = list(features)
    if len(features) != num_rows:
        raise ValueError(
            f"The outputs must have one row per feature. Received: {num_rows} rows for "
            f"{len(features)} features"
        )
    groups = itertools.groupby(enumerate(features), key=lambda pair: pair[1].qid)
    seen = set()
    for qid, group in groups:
        if qid in seen:
            raise ValueError(f"The windows of question {qid!r} are not consecutive.")
        seen.add(qid)
        rows, windows = zip(*group, strict=True)
        yield qid, list(rows), list(windows)


def decode_null_span(
    features: Iterable[SquadFeature],
    start_logits: np.ndarray,
    end_logits: np.ndarray,
    n_best_size: int = defaults.N_BEST_SIZE,
    max_answer_length: int = defaults.MAX_ANSWER_LENGTH,
    version_2: bool = False,
    null_score_threshold: float | None = defaults.NULL_SCORE_THRESHOLD,
) -> SquadPredictions:
    """Answers from `start_logits`/`end_logits` (num_features, sequence_length)."""
    require_positive_int("n_best_size", n_best_size)
    require_positive_int("max_answer_length", max_answer_length)
    start_logits, end_logits = np.asarray(start_logits), np.asarray(end_logits)
    result = SquadPredictions({}, {}, {}, {})
    for qid, rows, windows in _by_question(features, len(start_logits)):
        candidates, null_score = [], None
        for window, (row, feature) in enumerate(zip(rows, windows, strict=True)):
            starts, ends = start_logits[row], end_logits[row]
            window_null = float(starts[0] + ends[0])
            null_score = window_null if null_score is None else min(null_score, window_null)
            best_starts = np.argsort(-starts, kind="stable")[:n_best_size]
            best_ends = np.argsort(-ends, kind="stable")[:n_best_size]
            for start in best_starts:
                for end in best_ends:
                    if _valid(feature, int(start), int(end), max_answer_length):
                        candidates.append(
                            _Candidate(
                                window, int(start), int(end), float(starts[start]), float(ends[end])
                            )
                        )
        _finish(
            qid,
            windows,
            candidates,
            null_score if version_2 else None,
            n_best_size,
            result,
            null_score_threshold if version_2 else None,
        )
    return result


def decode_answer_class(
    features: Iterable[SquadFeature],
    outputs: Mapping[str, np.ndarray],
    n_best_size: int = defaults.N_BEST_SIZE,
    max_answer_length: int = defaults.MAX_ANSWER_LENGTH,
    null_score_threshold: float | None = defaults.NULL_SCORE_THRESHOLD,
) -> SquadPredictions:
    """Answers from the answer-class head's `start_top_log_probs`, `start_top_index` (n, k),
    `end_top_log_probs`, `end_top_index` (n, k * k) and `cls_logits` (n,)."""
    require_positive_int("n_best_size", n_best_size)
    require_positive_int("max_answer_length", max_answer_length)
    start_log_probs = np.asarray(outputs["start_top_log_probs"])
    start_index = np.asarray(outputs["start_top_index"])
    end_log_probs = np.asarray(outputs["end_top_log_probs"])
    end_index = np.asarray(outputs["end_top_index"])
    cls_logits = np.asarray(outputs["cls_logits"])
    num_starts = start_index.shape[1]
    num_ends = end_index.shape[1] // num_starts
    result = SquadPredictions({}, {}, {}, {})
    for qid, rows, windows in _by_question(features, len(cls_logits)):
        candidates = []
        for window, (row, feature) in enumerate(zip(rows, windows, strict=True)):
            for i in range(num_starts):
                for j in range(num_ends):
                    start = int(start_index[row, i])
                    end = int(end_index[row, i * num_ends + j])
                    if _valid(feature, start, end, max_answer_length):
                        candidates.append(
                            _Candidate(
                                window,
                                start,
                                end,
                                float(start_log_probs[row, i]),
                                float(end_log_probs[row, i * num_ends + j]),
                            )
                        )
        null_odds = float(min(cls_logits[row] for row in rows))
        _finish(qid, windows, candidates, None, n_best_size, result, None)
        result.null_odds[qid] = null_odds
        if null_score_threshold is not None and null_odds > null_score_threshold:
            result.predictions[qid] = ""
    return result


def apply_null_threshold(result: SquadPredictions, threshold: float) -> dict[str, str]:
    """The answers with no-answer decided at `threshold` (e.g. the evaluation's best_f1_thresh)."""
    return {
        qid: "" if result.null_odds[qid] > threshold else result.best_span[qid]["text"]
        for qid in result.predictions
    }


def _finite_null_odds(result: SquadPredictions) -> dict[str, float]:
    # JSON has no infinity: a question without any valid span gets 1e30 ("no answer" at any
    # threshold the official script would try).
    return {qid: (odds if math.isfinite(odds) else 1e30) for qid, odds in result.null_odds.items()}


def write_prediction_files(result: SquadPredictions, output_dir: str | os.PathLike) -> None:
    """`predictions.json`, `null_odds.json` and `nbest_predictions.json` in `output_dir`."""
    write_json(result.predictions, os.path.join(output_dir, "predictions.json"))
    write_json(_finite_null_odds(result), os.path.join(output_dir, "null_odds.json"))
    write_json(result.nbest, os.path.join(output_dir, "nbest_predictions.json"))


def write_test_predictions(
    result: SquadPredictions, output_dir: str | os.PathLike, version_2: bool
) -> None:
    """The submission files of unlabeled questions: `test_predictions.json` (question id →
    answer text, "" for no answer) and, for v2.0, `test_null_odds.json`."""
    write_json(result.predictions, os.path.join(output_dir, "test_predictions.json"))
    if version_2:
        write_json(_finite_null_odds(result), os.path.join(output_dir, "test_null_odds.json"))


def evaluation_metrics(
    dataset: Mapping, result: SquadPredictions, null_score_threshold: float | None = None
) -> dict:
    """The official metrics of `result` (see `write_evaluation`), without writing anything."""
    if null_score_threshold is None:
        return evaluate(dataset, result.predictions)
    metrics = evaluate(
        dataset, result.predictions, result.null_odds, no_answer_threshold=null_score_threshold
    )
    metrics["null_score_threshold"] = null_score_threshold
    return metrics


def write_evaluation(
    dataset: Mapping,
    result: SquadPredictions,
    output_dir: str | os.PathLike,
    null_score_threshold: float | None = None,
) -> dict:
    """Writes the three prediction files and `metrics.json` (official keys); returns the metrics.

    With `null_score_threshold` (v2) the metrics count an answer as "no answer" exactly where
    the predictions do (null odds above the threshold), and also report the best thresholds.
    """
    write_prediction_files(result, output_dir)
    metrics = evaluation_metrics(dataset, result, null_score_threshold)
    write_json(metrics, os.path.join(output_dir, "metrics.json"))
    return metrics
