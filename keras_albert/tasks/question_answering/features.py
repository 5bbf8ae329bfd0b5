"""SQuAD v1.1 / v2.0 JSON → question-answering windows, with character offsets for every token.

`read_squad_examples(path)` yields one `SquadExample` per question (v2.0's `is_impossible` and
v1.1 files alike; with `labeled=False`, test files: questions without answers).
`squad_features(examples, tokenizer)` yields `SquadFeature` windows, streaming:

- each window is `[CLS] question [SEP] context window [SEP]` padded to `sequence_length`, the
  question cut to `max_query_length` tokens, successive windows starting `doc_stride` context
  tokens apart (the original `run_squad` / `squad_utils` windowing);
- every context token keeps `[start, end)` character offsets into the ORIGINAL context string,
  so an answer is `context[start_of_first:end_of_last]`, an exact substring with the caller's
  case, accents and spacing (`keras_albert.text.offsets.tokenize_with_offsets`);
- training labels: the first gold answer's token span, or `[CLS]` (position 0) for an
  unanswerable question and for a window that does not contain the whole answer
  (`is_impossible` = 1 for that window, as the original v2 data);
- `max_context[i]`: whether window i is the one where token i has the most context (the
  original `_check_is_max_context`), computed from the neighbouring windows only.

Everything is linear in the context length: one tokenization per context (cached across the
questions of a paragraph), windows cost O(sequence_length) each.
"""

from __future__ import annotations

import bisect
import dataclasses
import json
import os
from collections.abc import Iterable, Iterator, Mapping

import numpy as np

from keras_albert.tasks.question_answering import defaults
from keras_albert.text.offsets import ContextTokens, tokenize_with_offsets
from keras_albert.validation import require_int, require_not_directory, require_positive_int


class SquadFormatError(ValueError):
    """A SQuAD file that cannot be read; the message names the question id."""


@dataclasses.dataclass(frozen=True)
class SquadExample:
    """One question over one context.

    Args:
        qid: the question id.
        question: the question text.
        context: the paragraph text, as in the file.
        answers: the gold answers as `(text, character start in context)`; empty when
            unanswerable.
        is_impossible: SQuAD v2.0's flag (False for v1.1 files).
    """

    qid: str
    question: str
    context: str
    answers: tuple[tuple[str, int], ...]
    is_impossible: bool


@dataclasses.dataclass
class SquadFeature:
    """One window of one question. Arrays have shape (sequence_length,).

    `token_starts`/`token_ends` are character offsets into `context` for context tokens and -1
    elsewhere; `start_position`/`end_position` are the label token positions (0 = [CLS]);
    `window_start` is the index (among the context's tokens) of the window's first context token,
    which sits at position `context_offset`.
    """

    qid: str
    window_index: int
    window_start: int
    context_offset: int
    context: str
    token_ids: np.ndarray
    segment_ids: np.ndarray
    padding_mask: np.ndarray
    token_starts: np.ndarray
    token_ends: np.ndarray
    max_context: np.ndarray
    start_position: int
    end_position: int
    is_impossible: bool


def read_squad_json(path: str | os.PathLike, name: str = "path") -> dict:
    """The parsed SQuAD v1.1 / v2.0 JSON file `path` (`name`: what errors call it).

    Raises:
        SquadFormatError: naming the file, when it is not JSON (a TSV given by mistake) or
            has no `data` list.
    """
    path = os.fspath(path)
    require_not_directory(name, path)
    with open(path, encoding="utf-8") as file:
        try:
            dataset = json.load(file)
        except (json.JSONDecodeError, UnicodeDecodeError) as error:
            raise SquadFormatError(
                f"`{name}` must be a SQuAD JSON file: {path} is not JSON ({error})."
            ) from None
    _require_squad_layout(dataset, path)
    return dataset


def _require_squad_layout(dataset, name: str) -> None:
    if not isinstance(dataset, Mapping) or not isinstance(dataset.get("data"), list):
        raise SquadFormatError(f"{name!r} is not SQuAD JSON: it has no 'data' list.")


def read_squad_examples(
    source: str | os.PathLike | Mapping, labeled: bool = True
) -> Iterator[SquadExample]:
    """The questions of a SQuAD v1.1 or v2.0 JSON file (or its parsed dict), in file order.

    Args:
        source: the file, or its parsed dict.
        labeled: whether every question carries its gold: `answers` (at their
            `answer_start`), or v2.0's `is_impossible`. `False` reads a test file (questions
            without either); any `answers` there are ignored, and every example has none.

    Raises:
        SquadFormatError: naming the file and the question, for a file without the
            data → paragraphs → context / qas → id / question layout, an answer not at its
            `answer_start`, or (labeled) a question without an answer nor `is_impossible`.
    """
    if isinstance(source, Mapping):
        dataset, name = source, "<dict>"
    else:
        name = os.fspath(source)
        dataset = read_squad_json(name)
    _require_squad_layout(dataset, name)
    for number, article in enumerate(dataset["data"]):
        where = f"{name!r} article {number}"
        _require_fields(article, {"paragraphs": list}, where)
        for index, paragraph in enumerate(article["paragraphs"]):
            where = f"{name!r} article {number} paragraph {index}"
            _require_fields(paragraph, {"context": str, "qas": list}, where)
            context = paragraph["context"]
            for question in paragraph["qas"]:
                _require_fields(question, {"id": str, "question": str}, where)
                qid = question["id"]
                if not labeled:
                    yield SquadExample(qid, question["question"], context, (), False)
                    continue
                is_impossible = bool(question.get("is_impossible", False))
                answers = []
                for answer in [] if is_impossible else question.get("answers", []):
                    text, start = answer["text"], answer["answer_start"]
                    if context[start : start + len(text)] != text:
                        raise SquadFormatError(
                            f"Question {qid!r} in {name!r}: the answer {text!r} is not at "
                            f"character {start} of its context "
                            f"(found {context[start : start + len(text)]!r})."
                        )
                    answers.append((text, start))
                if not is_impossible and not answers:
                    raise SquadFormatError(
                        f"Question {qid!r} in {name!r} has no answer and is not marked "
                        "is_impossible (a test file without answers is read as `test_data`)."
                    )
                yield SquadExample(
                    qid, question["question"], context, tuple(answers), is_impossible
                )


def _require_fields(item, fields: dict[str, type], where: str) -> None:
    if not isinstance(item, Mapping):
        raise SquadFormatError(f"{where}: expected a JSON object, found {type(item).__name__}.")
    for field, kind in fields.items():
        if not isinstance(item.get(field), kind):
            raise SquadFormatError(
                f"{where}: `{field}` must be a {kind.__name__} (the SQuAD layout data → "
                f"paragraphs → context, qas → id, question). Received: {item.get(field)!r:.80}"
            )


def answer_token_span(tokens: ContextTokens, start: int, end: int) -> tuple[int, int]:
    """The first and last token covering characters `[start, end)` of the text."""
    first = bisect.bisect_right(tokens.ends, start)
    last = bisect.bisect_left(tokens.starts, end) - 1
    first = min(first, len(tokens.ids) - 1)
    return first, max(first, last)


def window_starts(num_tokens: int, window_length: int, doc_stride: int) -> list[int]:
    """Start offsets of the windows over `num_tokens` context tokens (the original's loop)."""
    starts = [0]
    while starts[-1] + window_length < num_tokens:
        starts.append(starts[-1] + min(window_length, doc_stride))
    return starts


def _max_context(starts: list[int], window_length: int, num_tokens: int, window: int) -> np.ndarray:
    # For each token of `window`: does this window give it the most context, min(left, right)
    # + 0.01 * length, the first window winning ties? Only overlapping neighbours can compete.
    def score(w, position):
        length = min(window_length, num_tokens - starts[w])
        end = starts[w] + length - 1
        if not starts[w] <= position <= end:
            return None
        return min(position - starts[w], end - position) + 0.01 * length

    length = min(window_length, num_tokens - starts[window])
    result = np.zeros(length, dtype=bool)
    for offset in range(length):
        position = starts[window] + offset
        best, best_window = None, None
        candidate = window
        while candidate > 0 and score(candidate - 1, position) is not None:
            candidate -= 1
        while candidate < len(starts):
            value = score(candidate, position)
            if value is None:
                break
            if best is None or value > best:
                best, best_window = value, candidate
            candidate += 1
        result[offset] = best_window == window
    return result


def squad_features(
    examples: Iterable[SquadExample],
    tokenizer,
    sequence_length: int = defaults.SEQUENCE_LENGTH,
    doc_stride: int = defaults.DOC_STRIDE,
    max_query_length: int = defaults.MAX_QUERY_LENGTH,
) -> Iterator[SquadFeature]:
    """Windows of every example, in order (see the module docstring)."""
    require_positive_int("doc_stride", doc_stride)
    require_positive_int("max_query_length", max_query_length)
    require_int("sequence_length", sequence_length)
    if sequence_length < max_query_length + 4:
        raise ValueError(
            "`sequence_length` must leave room for [CLS], the question, two [SEP] and one context "
            f"token: at least max_query_length + 4 = {max_query_length + 4}. Received: "
            f"sequence_length={sequence_length}, max_query_length={max_query_length}"
        )
    cached_context, context_tokens = None, None
    for example in examples:
        if example.context is not cached_context:
            cached_context = example.context
            context_tokens = tokenize_with_offsets(tokenizer, example.context)
        query = tokenizer.encode(example.question)[:max_query_length]
        window_length = sequence_length - len(query) - 3
        num_tokens = len(context_tokens.ids)
        if example.answers:
            text, start = example.answers[0]
            answer = answer_token_span(context_tokens, start, start + len(text))
        else:
            answer = None
        starts = window_starts(num_tokens, window_length, doc_stride)
        offset = len(query) + 2
        for window, window_start in enumerate(starts):
            length = min(window_length, num_tokens - window_start)
            window_end = window_start + length
            token_ids = np.full(sequence_length, tokenizer.pad_id, dtype=np.int32)
            ids = [tokenizer.cls_id, *query, tokenizer.sep_id]
            ids += context_tokens.ids[window_start:window_end] + [tokenizer.sep_id]
            token_ids[: len(ids)] = ids
            segment_ids = np.zeros(sequence_length, dtype=np.int32)
            segment_ids[offset : len(ids)] = 1
            padding_mask = (np.arange(sequence_length) < len(ids)).astype(np.int32)
            token_starts = np.full(sequence_length, -1, dtype=np.int32)
            token_ends = np.full(sequence_length, -1, dtype=np.int32)
            token_starts[offset : offset + length] = context_tokens.starts[window_start:window_end]
            token_ends[offset : offset + length] = context_tokens.ends[window_start:window_end]
            max_context = np.zeros(sequence_length, dtype=bool)
            max_context[offset : offset + length] = _max_context(
                starts, window_length, num_tokens, window
            )
            inside = answer is not None and window_start <= answer[0] and answer[1] < window_end
            start_position = answer[0] - window_start + offset if inside else 0
            end_position = answer[1] - window_start + offset if inside else 0
            yield SquadFeature(
                qid=example.qid,
                window_index=window,
                window_start=window_start,
                context_offset=offset,
                context=example.context,
                token_ids=token_ids,
                segment_ids=segment_ids,
                padding_mask=padding_mask,
                token_starts=token_starts,
                token_ends=token_ends,
                max_context=max_context,
                start_position=start_position,
                end_position=end_position,
                is_impossible=not inside,
            )


def feature_arrays(features: Iterable[SquadFeature]) -> dict[str, np.ndarray]:
    """Stacked model inputs and labels: `token_ids`, `segment_ids`, `padding_mask` (batch, seq)
    int32 and `start_positions`, `end_positions`, `is_impossible` (batch,) int32."""
    columns = {name: [] for name in ("token_ids", "segment_ids", "padding_mask")}
    labels = {name: [] for name in ("start_positions", "end_positions", "is_impossible")}
    for feature in features:
        for name in columns:
            columns[name].append(getattr(feature, name))
        labels["start_positions"].append(feature.start_position)
        labels["end_positions"].append(feature.end_position)
        labels["is_impossible"].append(int(feature.is_impossible))
    arrays = {name: np.stack(values).astype(np.int32) for name, values in columns.items()}
    arrays.update({name: np.asarray(values, np.int32) for name, values in labels.items()})
    return arrays
