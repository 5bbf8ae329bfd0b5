"""SQuAD v1.1 / v2.0 JSON → question-answering windows, with character offsets for every token.

`read_squad_examples(path)` yields one `SquadExample` per question (v2.0's `is_impossible` and
v1.1 files alike). `squad_features(examples, tokenizer)` yields `SquadFeature` windows, streaming:

- each window is `[CLS] question [SEP] context window [SEP]` padded to `sequence_length`, the
  question cut to `max_query_length` tokens, successive windows starting `doc_stride` context
  tokens apart (the original `run_squad` / `squad_utils` windowing);
- every context token keeps `[start, end)` character offsets into the ORIGINAL context string,
  so an answer is `context[start_of_first:end_of_last]`, an exact substring with the caller's
  case, accents and spacing. The offsets come from following each character through the original
  normalization (`AlbertTokenizer.normalize`: collapse whitespace, NFKD, drop combining marks,
  lowercase), which is done character by character here and checked to give the same text, and
  then SentencePiece's own surface offsets (its `nmt_nfkc` normalizer runs inside it);
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
import unicodedata
from collections.abc import Iterable, Iterator, Mapping

import numpy as np

from keras_albert.validation import require_int, require_positive_int


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


@dataclasses.dataclass(frozen=True)
class ContextTokens:
    """A text's token ids and each token's `[start, end)` character span in the text."""

    ids: list[int]
    starts: list[int]
    ends: list[int]


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


def read_squad_examples(source: str | os.PathLike | Mapping) -> Iterator[SquadExample]:
    """The questions of a SQuAD v1.1 or v2.0 JSON file (or its parsed dict), in file order."""
    if isinstance(source, Mapping):
        dataset, name = source, "<dict>"
    else:
        name = os.fspath(source)
        with open(name, encoding="utf-8") as f:
            dataset = json.load(f)
    if "data" not in dataset:
        raise SquadFormatError(f"{name!r} is not SQuAD JSON: it has no 'data' list.")
    for article in dataset["data"]:
        for paragraph in article["paragraphs"]:
            context = paragraph["context"]
            for question in paragraph["qas"]:
                qid = question["id"]
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
                        "is_impossible."
                    )
                yield SquadExample(
                    qid, question["question"], context, tuple(answers), is_impossible
                )


def _normalize_with_origins(tokenizer, text: str) -> tuple[str, list[int]]:
    """`tokenizer.normalize(text)` and, for each of its characters, the index in `text` of the
    character it came from. A run of whitespace becomes one space from the run's first character."""
    if tokenizer.normalize_quotes:
        raise ValueError(
            "Character offsets need `normalize_quotes=False` (its two-character rewrite is not "
            "followed). Received: normalize_quotes=True"
        )
    characters, origins = [], []
    pending_space = None
    for index, character in enumerate(text):
        if character.isspace():
            if characters and pending_space is None:
                pending_space = index
            continue
        if pending_space is not None:
            characters.append(" ")
            origins.append(pending_space)
            pending_space = None
        if tokenizer.strip_accents:
            # NFKD of a string is the NFKD of each character followed by a reordering of
            # combining marks only; as those are dropped, character by character is exact.
            decomposed = unicodedata.normalize("NFKD", character)
            pieces = [c for c in decomposed if not unicodedata.combining(c)]
        else:
            pieces = [character]
        characters.extend(pieces)
        origins.extend([index] * len(pieces))
    normalized = "".join(characters)
    if tokenizer.lowercase:
        # Lowercasing the whole string (final sigma is contextual) keeps each character's
        # lowercase length; a character that lowercases to two (İ) repeats its origin.
        lowered = normalized.lower()
        lengths = [len(c.lower()) for c in characters]
        if sum(lengths) == len(lowered):
            origins = [o for o, n in zip(origins, lengths, strict=True) for _ in range(n)]
            normalized = lowered
    if normalized != tokenizer.normalize(text):
        raise ValueError(f"Character alignment failed for the text beginning {text[:60]!r}")
    return normalized, origins


def tokenize_with_offsets(tokenizer, text: str) -> ContextTokens:
    """`tokenizer.encode(text)` with each token's `[start, end)` character span in `text`.

    A token's span runs from the first to the last non-space character it covers; characters
    the normalization drops (combining marks of a decomposed accent) stay with the token before
    them. A token that covers no character (a lone "▁") gets the empty span where the next
    token starts.
    """
    if tokenizer.wordpiece:
        raise ValueError(
            "`tokenizer` must be a SentencePiece tokenizer: character offsets of WordPiece "
            "tokens are not implemented. Received: a tokenizer with wordpiece=True"
        )
    normalized, origins = _normalize_with_origins(tokenizer, text)
    encoded = normalized.encode("utf-8")
    # The character index of every byte offset (and of the end).
    byte_to_char = np.zeros(len(encoded) + 1, dtype=np.int64)
    position = 0
    for char_index, character in enumerate(normalized):
        width = len(character.encode("utf-8"))
        byte_to_char[position : position + width] = char_index
        position += width
    byte_to_char[len(encoded)] = len(normalized)
    produces_output = np.zeros(len(text) + 1, dtype=bool)
    produces_output[origins] = True

    proto = tokenizer._processor.encode(normalized, return_type="proto")
    ids, starts, ends = [], [], []
    for piece in proto.pieces:
        begin, end = int(byte_to_char[piece.begin]), int(byte_to_char[piece.end])
        while begin < end and normalized[begin] == " ":
            begin += 1
        while end > begin and normalized[end - 1] == " ":
            end -= 1
        if begin == end:
            span = None
        else:
            start = origins[begin]
            stop = origins[end - 1] + 1
            while stop < len(text) and not produces_output[stop] and not text[stop].isspace():
                stop += 1
            span = (start, stop)
        text_piece = piece.piece
        if len(text_piece) > 1 and text_piece[-1] == "," and text_piece[-2].isdigit():
            parts = tokenizer._split_digit_comma(text_piece)
            part_ids = [tokenizer.piece_to_id(part) for part in parts]
            # The comma is the span's last character; the number keeps the rest.
            spans = [span if span is None else (span[0], max(span[0], span[1] - 1))] * (
                len(parts) - 1
            ) + [span if span is None else (max(span[0], span[1] - 1), span[1])]
        else:
            part_ids, spans = [piece.id], [span]
        for part_id, part_span in zip(part_ids, spans, strict=True):
            ids.append(part_id)
            starts.append(None if part_span is None else part_span[0])
            ends.append(None if part_span is None else part_span[1])
    # Empty tokens take the empty span at the start of the next token (or the end of the text).
    following = len(text)
    for index in range(len(ids) - 1, -1, -1):
        if starts[index] is None:
            starts[index] = ends[index] = following
        else:
            following = starts[index]
    return ContextTokens(ids=ids, starts=starts, ends=ends)


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
    sequence_length: int = 384,
    doc_stride: int = 128,
    max_query_length: int = 64,
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
