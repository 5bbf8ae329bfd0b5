"""Raw text → ALBERT pretraining examples (SOP pairs, n-gram whole-word masking) → TFRecords.

The pipeline, one document at a time (memory holds one document per worker plus a bounded
write-shuffle buffer, never the corpus):

1. ``iter_documents`` streams input files and groups their lines into documents by a
   ``document_split`` rule. Bad inputs (missing paths, empty or binary files, invalid UTF-8 lines,
   over-long lines, directories without files) are skipped and counted, never fatal.
2. Worker processes split paragraphs into sentences with `sentencex` (Wikimedia's sentence
   segmenter: actively maintained, native code at tens of MB/s, abbreviation aware, no data files
   to download at run time), tokenize them, and build examples with
   ``create_examples_from_document``: segment pairs as in the original
   ``create_pretraining_data.py`` (target length ``max_seq_length - 3``, ``short_seq_prob``
   shorter targets, a chunk split at a random sentence boundary), the sentence-order label
   (1 = A and B swapped) or NSP, and ``mask_tokens``.
3. The main process writes the examples, in document order through a seeded shuffle buffer,
   round-robin to ``num_shards`` TFRecord files with the original feature names.

Determinism: every document gets its own ``random.Random`` seeded from ``(random_seed,
document_index)``; the writer's shuffle has its own seeded generator and sees examples in
document order whatever the number of workers. The same input and seed give byte-identical files
with 1 or N workers (the original is not: its n-gram draw uses numpy's unseeded global RNG).

Differences from the original, on purpose:

- A one-sentence chunk in SOP mode is split at a random whole-word boundary inside the sentence
  (A = first part, B = rest). The original pairs it with a random other document's text while
  still calling it "swapped", which mixes NSP negatives into the SOP task.
- The masking budget is ``round(masked_lm_prob * non-special tokens)`` (the original counts
  ``[CLS]``/``[SEP]`` too), n-gram spans never cross a segment boundary, a span that would
  overshoot the budget is kept with probability ``remaining / span_size`` (so the expected
  masked count equals the budget and long spans are not systematically cut short), and a random
  replacement is never a special token.
- Examples are shuffled through a bounded buffer instead of all in memory.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import glob
import itertools
import math
import multiprocessing
import multiprocessing.pool
import os
import pickle
import random
import re
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Literal, Protocol, runtime_checkable

import numpy as np

DocumentSplit = Literal["original", "blank_line", "heading", "file"]
SentencePairTask = Literal["sop", "nsp"]

# Level-1 headings of Gutenberg-style books ("CHAPTER I", "Chapter 12", "VOLUME II") and of
# WikiText (" = Title = "; section headings " = = Section = = " stay inside the article).
DEFAULT_HEADING_PATTERN = (
    r"^\s*(?:(?:CHAPTER|Chapter|VOLUME|Volume|BOOK|Book|PART|Part)\b[^a-z]*|= [^=].*[^=] =)\s*$"
)
# Section headings inside a document (WikiText's " = = Section = = "): they end a paragraph and
# are not text.
DEFAULT_SECTION_PATTERN = r"^\s*= (?:= )+.*=\s*$"

# The original's TFRecord feature names; our names exist only after parsing.
ORIGINAL_FEATURE_NAMES = (
    "input_ids",
    "input_mask",
    "segment_ids",
    "masked_lm_positions",
    "masked_lm_ids",
    "masked_lm_weights",
    "next_sentence_labels",
    "token_boundary",
)

_BINARY_PROBE_BYTES = 8192


@runtime_checkable
class TokenizerLike(Protocol):
    """What example creation needs from a tokenizer (``keras_albert.text.tokenizer``'s has it).

    ``encode`` applies ALBERT's normalization and SentencePiece; ``is_word_start(i)`` is true for
    a piece that begins with "▁". The object must be picklable to be used with ``num_workers > 1``.
    """

    vocabulary_size: int
    pad_id: int
    unk_id: int
    cls_id: int
    sep_id: int
    mask_id: int
    special_ids: set[int]

    def encode(self, text: str) -> list[int]: ...

    def id_to_piece(self, i: int) -> str: ...

    def piece_to_id(self, p: str) -> int: ...

    def is_word_start(self, i: int) -> bool: ...


@dataclasses.dataclass(frozen=True)
class PretrainingDataConfig:
    """How examples are made. Defaults are the original ALBERT ``create_pretraining_data.py``'s.

    Args:
        max_seq_length: tokens per example including ``[CLS]`` and two ``[SEP]``.
        max_predictions_per_seq: hard cap on masked positions per example.
        masked_lm_prob: fraction of non-special tokens to mask; 0 writes unmasked examples (for
            the reader's dynamic masking).
        max_ngram: longest masked span, in words; p(n) ∝ 1/n for n = 1..max_ngram.
        short_seq_prob: probability of a target length drawn uniformly from [2, max_seq_length - 3].
        dupe_factor: how many times each document is turned into examples, with different
            chunking and masks.
        task: "sop" (sentence order: label 1 = segments swapped) or "nsp" (label 1 = B from
            another document), for the paper's comparison.
        random_seed: seed of everything random.
        document_split: "original" (one sentence per line, blank line between documents, no
            sentence splitter), "blank_line" (each blank-line separated paragraph is a document),
            "heading" (a line matching ``heading_pattern`` starts a document; the heading line
            itself is not text), "file" (one file is one document).
        heading_pattern: regular expression for "heading".
        section_pattern: lines that end a paragraph and are dropped (section headings), in
            every mode but "original".
        language: language code for the sentence splitter.
        max_line_bytes: a longer line is skipped and counted (it is not prose).
        nsp_partner_window: NSP draws the random document among this many previous documents.
        write_shuffle_buffer: examples held in memory by the writer's shuffle (1 = no shuffle).
    """

    max_seq_length: int = 512
    max_predictions_per_seq: int = 20
    masked_lm_prob: float = 0.15
    max_ngram: int = 3
    short_seq_prob: float = 0.1
    dupe_factor: int = 40
    task: SentencePairTask = "sop"
    random_seed: int = 12345
    document_split: DocumentSplit = "heading"
    heading_pattern: str = DEFAULT_HEADING_PATTERN
    section_pattern: str = DEFAULT_SECTION_PATTERN
    language: str = "en"
    max_line_bytes: int = 1_000_000
    nsp_partner_window: int = 16
    write_shuffle_buffer: int = 10_000

    def __post_init__(self):
        def check(condition: bool, name: str, expected: str):
            if not condition:
                raise ValueError(f"`{name}` must be {expected}; received {getattr(self, name)!r}")

        check(self.max_seq_length >= 5, "max_seq_length", "an integer >= 5")
        check(self.max_predictions_per_seq >= 0, "max_predictions_per_seq", "an integer >= 0")
        check(0.0 <= self.masked_lm_prob < 1.0, "masked_lm_prob", "a float in [0, 1)")
        check(self.max_ngram >= 1, "max_ngram", "an integer >= 1")
        check(0.0 <= self.short_seq_prob <= 1.0, "short_seq_prob", "a float in [0, 1]")
        check(self.dupe_factor >= 1, "dupe_factor", "an integer >= 1")
        check(self.task in ("sop", "nsp"), "task", 'one of "sop", "nsp"')
        check(
            self.document_split in ("original", "blank_line", "heading", "file"),
            "document_split",
            'one of "original", "blank_line", "heading", "file"',
        )
        check(self.max_line_bytes >= 1, "max_line_bytes", "an integer >= 1")
        check(self.nsp_partner_window >= 1, "nsp_partner_window", "an integer >= 1")
        check(self.write_shuffle_buffer >= 1, "write_shuffle_buffer", "an integer >= 1")
        for name in ("heading_pattern", "section_pattern"):
            try:
                re.compile(getattr(self, name))
            except re.error as error:
                raise ValueError(
                    f"`{name}` must be a regular expression; received "
                    f"{getattr(self, name)!r} ({error})"
                ) from None

    @property
    def ngram_probabilities(self) -> list[float]:
        """p(n) ∝ 1/n for n = 1..max_ngram (6/11, 3/11, 2/11 for 3)."""
        weights = [1.0 / n for n in range(1, self.max_ngram + 1)]
        return [w / sum(weights) for w in weights]


@dataclasses.dataclass
class PretrainingExample:
    """One example before padding: ``[CLS] A [SEP] B [SEP]``.

    ``token_ids`` already carry the masking; ``mask_ids`` are the original tokens at
    ``mask_positions`` (ascending). ``span_lengths`` are the masked n-grams' lengths in words.
    """

    token_ids: list[int]
    segment_ids: list[int]
    token_boundary: list[int]
    mask_positions: list[int]
    mask_ids: list[int]
    sentence_order_label: int
    span_lengths: list[int]
    # A and B are the two halves of one sentence (a one-sentence chunk), not whole sentences.
    cut_inside_sentence: bool = False

    def original_token_ids(self) -> list[int]:
        """``token_ids`` with the masked positions restored."""
        restored = list(self.token_ids)
        for position, token_id in zip(self.mask_positions, self.mask_ids, strict=True):
            restored[position] = token_id
        return restored


@dataclasses.dataclass
class Document:
    """A document as read: paragraphs (``split_sentences``) or ready sentences (original format)."""

    index: int
    source: str
    texts: list[str]
    split_sentences: bool
    num_bytes: int = 0


@dataclasses.dataclass
class ExampleCounts:
    """What went into the examples; a worker counts one document, the summary adds them up."""

    num_sentences: int = 0
    num_examples: int = 0
    num_tokens: int = 0
    num_non_special_tokens: int = 0
    num_masked_tokens: int = 0
    num_swapped: int = 0
    num_cut_inside_sentence: int = 0
    span_length_counts: collections.Counter = dataclasses.field(default_factory=collections.Counter)

    def add_example(self, example: PretrainingExample, special: bytearray) -> None:
        self.num_examples += 1
        self.num_tokens += len(example.token_ids)
        self.num_non_special_tokens += sum(
            1 for t in example.original_token_ids() if not special[t]
        )
        self.num_masked_tokens += len(example.mask_positions)
        self.num_swapped += example.sentence_order_label
        self.num_cut_inside_sentence += example.cut_inside_sentence
        self.span_length_counts.update(example.span_lengths)

    def add_counts(self, other: ExampleCounts) -> None:
        for field in dataclasses.fields(ExampleCounts):
            setattr(self, field.name, getattr(self, field.name) + getattr(other, field.name))


@dataclasses.dataclass
class DocumentStats(ExampleCounts):
    source: str = ""
    # reason -> how many times
    skipped: collections.Counter = dataclasses.field(default_factory=collections.Counter)


@dataclasses.dataclass
class PretrainingDataSummary(ExampleCounts):
    """What ``create_pretraining_data`` read, wrote and skipped."""

    num_files: int = 0
    num_documents: int = 0
    num_heading_lines: int = 0
    # (path, reason) -> how many times; lines are counted one by one.
    skipped: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    output_files: list[str] = dataclasses.field(default_factory=list)
    seconds: float = 0.0

    @property
    def mask_rate(self) -> float:
        return self.num_masked_tokens / max(1, self.num_non_special_tokens)

    @property
    def sentence_order_balance(self) -> float:
        """Fraction of examples with label 1."""
        return self.num_swapped / max(1, self.num_examples)

    def merge_document(self, stats: DocumentStats) -> None:
        self.num_documents += 1
        self.add_counts(stats)
        for reason, count in stats.skipped.items():
            self.skipped[(stats.source, reason)] += count

    def __str__(self) -> str:
        total_spans = sum(self.span_length_counts.values())
        spans = ", ".join(
            f"{n}: {count / max(1, total_spans):.1%}"
            for n, count in sorted(self.span_length_counts.items())
        )
        lines = [
            f"files read:        {self.num_files}",
            f"documents:         {self.num_documents}",
            f"sentences:         {self.num_sentences}",
            f"heading lines:     {self.num_heading_lines} (document boundaries, not text)",
            f"examples:          {self.num_examples}",
            f"tokens:            {self.num_tokens} ({self.num_non_special_tokens} non-special)",
            f"masked tokens:     {self.num_masked_tokens} (rate {self.mask_rate:.2%})",
            f"n-gram spans:      {spans or 'none'}",
            f"label 1 (swapped / random B): {self.sentence_order_balance:.2%}",
            f"pairs cut inside one sentence: {self.num_cut_inside_sentence} "
            f"({self.num_cut_inside_sentence / max(1, self.num_examples):.1%}; the rest are "
            "whole sentences)",
            f"output files:      {len(self.output_files)}",
            f"seconds:           {self.seconds:.1f}",
        ]
        if self.skipped:
            lines.append(f"skipped ({sum(self.skipped.values())}):")
            for (path, reason), count in sorted(self.skipped.items()):
                lines.append(f"  {path}: {reason} x{count}")
        else:
            lines.append("skipped:           nothing")
        return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# Reading: files → documents, streaming, bad inputs counted.


def expand_inputs(inputs: Sequence[str], skipped: collections.Counter | None = None) -> list[str]:
    """Files named by ``inputs`` (paths, directories walked recursively, globs), sorted per input.

    A path that matches nothing or a directory without files is recorded in ``skipped``.
    """
    skipped = collections.Counter() if skipped is None else skipped
    files: list[str] = []
    for item in inputs:
        if os.path.isdir(item):
            found = sorted(
                os.path.join(root, name) for root, _, names in os.walk(item) for name in names
            )
            if not found:
                skipped[(item, "directory contains no files")] += 1
            files.extend(found)
        elif os.path.isfile(item):
            files.append(item)
        else:
            matches = sorted(p for p in glob.glob(item, recursive=True) if os.path.isfile(p))
            if not matches:
                skipped[(item, "no such file, directory or matching glob")] += 1
            files.extend(matches)
    return files


def _read_lines(
    path: str, max_line_bytes: int, skipped: collections.Counter
) -> Iterator[tuple[str, int]]:
    """Decoded lines of one file (without line ends), each with the bytes read since the
    previous one (skipped lines included, for progress); bad files and lines are counted."""
    try:
        handle = open(path, "rb")
    except OSError as error:
        skipped[(path, f"cannot open ({error.strerror})")] += 1
        return
    with handle:
        probe = handle.read(_BINARY_PROBE_BYTES)
        if not probe:
            skipped[(path, "empty file")] += 1
            return
        if b"\x00" in probe:
            skipped[(path, "binary file (NUL bytes)")] += 1
            return
        handle.seek(0)
        line_number = 0
        num_bytes = 0
        while True:
            # Bounded read: a 10 MB "line" never sits in memory whole.
            raw = handle.readline(max_line_bytes + 1)
            if not raw:
                return
            line_number += 1
            num_bytes += len(raw)
            if len(raw) > max_line_bytes and not raw.endswith(b"\n"):
                while raw and not raw.endswith(b"\n"):
                    raw = handle.readline(max_line_bytes + 1)
                    num_bytes += len(raw)
                skipped[(path, f"line longer than {max_line_bytes} bytes")] += 1
                continue
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                skipped[(path, "line with invalid UTF-8")] += 1
                continue
            if line_number == 1:
                text = text.removeprefix("\ufeff")
            yield text.rstrip("\r\n"), num_bytes
            num_bytes = 0


def iter_documents(
    files: Iterable[str],
    config: PretrainingDataConfig,
    summary: PretrainingDataSummary | None = None,
) -> Iterator[Document]:
    """Documents of ``files`` in order, by ``config.document_split``; one document in memory.

    Paragraphs (blank-line separated, line-wrapping undone) are kept apart so a sentence never
    spans two of them. Skips and heading lines are counted in ``summary``.
    """
    summary = PretrainingDataSummary() if summary is None else summary
    heading = re.compile(config.heading_pattern)
    section = re.compile(config.section_pattern)
    split = config.document_split
    index = 0
    texts: list[str] = []
    paragraph: list[str] = []
    num_bytes = 0
    source = ""

    def end_paragraph():
        if paragraph:
            texts.append(" ".join(" ".join(paragraph).split()))
            paragraph.clear()

    def end_document() -> Document | None:
        nonlocal index, num_bytes
        end_paragraph()
        document = None
        if texts:
            document = Document(index, source, list(texts), split != "original", num_bytes)
            index += 1
            num_bytes = 0
        texts.clear()
        return document

    for path in files:
        summary.num_files += 1
        source = path
        for line, line_bytes in _read_lines(path, config.max_line_bytes, summary.skipped):
            num_bytes += line_bytes
            blank = not line.strip()
            if split == "original":
                if blank:
                    document = end_document()
                    if document:
                        yield document
                else:
                    texts.append(" ".join(line.split()))
                continue
            if split == "heading" and not blank and heading.match(line):
                summary.num_heading_lines += 1
                document = end_document()
                if document:
                    yield document
                continue
            if not blank and section.match(line):
                summary.num_heading_lines += 1
                end_paragraph()
                continue
            if blank:
                end_paragraph()
                if split == "blank_line":
                    document = end_document()
                    if document:
                        yield document
            else:
                paragraph.append(line)
        # A file always ends its last document: documents never span files.
        document = end_document()
        if document:
            yield document


# ---------------------------------------------------------------------------------------------
# Examples: sentences → segment pairs → masked examples. Pure Python, one rng per document.


class _TokenTables:
    """Per-vocabulary lookups, built once per process."""

    def __init__(self, tokenizer: TokenizerLike):
        size = tokenizer.vocabulary_size
        self.special = bytearray(size)
        for i in tokenizer.special_ids:
            self.special[i] = 1
        self.word_start = bytearray(1 if tokenizer.is_word_start(i) else 0 for i in range(size))
        self.replacements = [i for i in range(size) if not self.special[i]]
        self.cls_id = tokenizer.cls_id
        self.sep_id = tokenizer.sep_id
        self.mask_id = tokenizer.mask_id


def mask_tokens(
    token_ids: Sequence[int],
    rng: random.Random,
    tables: _TokenTables,
    config: PretrainingDataConfig,
) -> tuple[list[int], list[int], list[int], list[int]]:
    """N-gram whole-word masking of one ``[CLS] A [SEP] B [SEP]`` sequence.

    A word is a piece for which ``is_word_start`` holds plus the pieces that follow it (a word
    also starts after a special token). Spans of n words, n ~ p(n) ∝ 1/n, are placed uniformly
    among the runs of n still unmasked words of one segment until the budget
    ``min(max_predictions_per_seq, round(masked_lm_prob * non-special tokens))`` is met; the span
    that would overshoot it is kept with probability ``remaining / span_size``. Each masked token
    becomes ``[MASK]`` (80%), a random non-special token (10%) or stays (10%).

    Returns:
        ``(masked_token_ids, mask_positions, mask_ids, span_lengths)``.
    """
    # words[k] = [first piece, end piece, block]; a block is the run between special tokens.
    words: list[list[int]] = []
    block = 0
    previous_special = True
    for position, token_id in enumerate(token_ids):
        if tables.special[token_id]:
            block += 1
            previous_special = True
            continue
        if previous_special or tables.word_start[token_id]:
            words.append([position, position + 1, block])
        else:
            words[-1][1] = position + 1
        previous_special = False
    num_candidates = sum(end - start for start, end, _ in words)
    budget = 0
    if config.masked_lm_prob > 0 and num_candidates:
        budget = max(1, math.floor(config.masked_lm_prob * num_candidates + 0.5))
    budget = min(budget, config.max_predictions_per_seq)

    ngram_cumulative = [float(c) for c in np.cumsum(config.ngram_probabilities)]
    covered = bytearray(len(words))
    num_words = len(words)

    def fits(start: int, n: int) -> bool:
        end = start + n
        if end > num_words or words[start][2] != words[end - 1][2]:
            return False
        return not any(covered[start:end])

    def place(n: int) -> int | None:
        # Rejection sampling is uniform over the valid starts and cheap while most words are
        # free; the exhaustive scan is the rare fallback.
        for _ in range(32):
            start = rng.randrange(num_words)
            if fits(start, n):
                return start
        valid = [start for start in range(num_words) if fits(start, n)]
        return rng.choice(valid) if valid else None

    masked: list[int] = []
    span_lengths: list[int] = []
    while len(masked) < budget:
        draw = rng.random()
        n = next((k + 1 for k, c in enumerate(ngram_cumulative) if draw < c), config.max_ngram)
        start = place(n)
        while start is None and n > 1:
            n -= 1
            start = place(n)
        if start is None:
            break
        positions = [p for w in words[start : start + n] for p in range(w[0], w[1])]
        remaining = budget - len(masked)
        if len(positions) > remaining:
            keep = (
                len(masked) + len(positions) <= config.max_predictions_per_seq
                and rng.random() * len(positions) < remaining
            )
            if not keep:
                break
        covered[start : start + n] = b"\x01" * n
        masked.extend(positions)
        span_lengths.append(n)
        if len(positions) > remaining:
            break

    masked.sort()
    output = list(token_ids)
    mask_ids = [token_ids[p] for p in masked]
    for position in masked:
        draw = rng.random()
        if draw < 0.8:
            output[position] = tables.mask_id
        elif draw < 0.9:
            output[position] = rng.choice(tables.replacements)
    return output, masked, mask_ids, span_lengths


def _truncate_pair(
    tokens_a: list[int], tokens_b: list[int], max_num_tokens: int, rng: random.Random
) -> None:
    """Trim the longer segment from a random end until the pair fits (as the original)."""
    while len(tokens_a) + len(tokens_b) > max_num_tokens:
        longer = tokens_a if len(tokens_a) > len(tokens_b) else tokens_b
        if rng.random() < 0.5:
            del longer[0]
        else:
            longer.pop()


def _split_sentence(sentence: list[int], rng: random.Random, tables: _TokenTables):
    """A and B from one sentence, cut at a random word start; None for a one-word sentence."""
    cuts = [i for i in range(1, len(sentence)) if tables.word_start[sentence[i]]]
    if not cuts:
        return None
    cut = rng.choice(cuts)
    return sentence[:cut], sentence[cut:]


def create_examples_from_document(
    sentences: list[list[int]],
    rng: random.Random,
    tables: _TokenTables,
    config: PretrainingDataConfig,
    partner: list[list[int]] | None = None,
    skipped: collections.Counter | None = None,
) -> list[PretrainingExample]:
    """One pass (of ``dupe_factor``) over a tokenized document, as the original's
    ``create_instances_from_document``.

    Sentences are gathered into a chunk until the target length is reached; the chunk is split
    at a random sentence boundary into A and B (inside the sentence, at a word start, when the
    chunk is one sentence). SOP: with probability 0.5 A and B are swapped (label 1). NSP: with
    probability 0.5 B is taken from ``partner`` instead (label 1) and the unused sentences of the
    chunk go back to the document.
    """
    skipped = collections.Counter() if skipped is None else skipped
    max_num_tokens = config.max_seq_length - 3

    def new_target() -> int:
        if rng.random() < config.short_seq_prob:
            return rng.randint(2, max_num_tokens)
        return max_num_tokens

    examples: list[PretrainingExample] = []
    target = new_target()
    chunk: list[list[int]] = []
    chunk_length = 0
    i = 0
    while i < len(sentences):
        chunk.append(sentences[i])
        chunk_length += len(sentences[i])
        if i == len(sentences) - 1 or chunk_length >= target:
            a_end = rng.randint(1, len(chunk) - 1) if len(chunk) >= 2 else 1
            random_b = config.task == "nsp" and partner and rng.random() < 0.5
            cut_inside_sentence = False
            if random_b:
                tokens_a = [t for s in chunk[:a_end] for t in s]
                target_b = max(1, target - len(tokens_a))
                tokens_b = []
                for sentence in partner[rng.randrange(len(partner)) :]:
                    tokens_b.extend(sentence)
                    if len(tokens_b) >= target_b:
                        break
                i -= len(chunk) - a_end
                label = 1
            else:
                if len(chunk) >= 2:
                    tokens_a = [t for s in chunk[:a_end] for t in s]
                    tokens_b = [t for s in chunk[a_end:] for t in s]
                else:
                    pair = _split_sentence(chunk[0], rng, tables)
                    if pair is None:
                        skipped["one-word chunk (cannot form a pair)"] += 1
                        tokens_a = tokens_b = None
                    else:
                        tokens_a, tokens_b = list(pair[0]), list(pair[1])
                        cut_inside_sentence = True
                label = 0
                if tokens_a is not None and config.task == "sop" and rng.random() < 0.5:
                    tokens_a, tokens_b = tokens_b, tokens_a
                    label = 1
            if tokens_a is not None:
                _truncate_pair(tokens_a, tokens_b, max_num_tokens, rng)
                token_ids = [tables.cls_id, *tokens_a, tables.sep_id, *tokens_b, tables.sep_id]
                segment_ids = [0] * (len(tokens_a) + 2) + [1] * (len(tokens_b) + 1)
                token_boundary = [
                    1 if tables.special[t] or tables.word_start[t] else 0 for t in token_ids
                ]
                masked_ids, positions, mask_ids, spans = mask_tokens(token_ids, rng, tables, config)
                examples.append(
                    PretrainingExample(
                        masked_ids,
                        segment_ids,
                        token_boundary,
                        positions,
                        mask_ids,
                        label,
                        spans,
                        cut_inside_sentence,
                    )
                )
            chunk = []
            chunk_length = 0
            target = new_target()
        i += 1
    return examples


# ---------------------------------------------------------------------------------------------
# Workers.

_worker_tokenizer: TokenizerLike | None = None
_worker_tables: _TokenTables | None = None
_worker_config: PretrainingDataConfig | None = None
_worker_keeps_examples = False


def _init_worker(
    tokenizer: TokenizerLike | Callable[[], TokenizerLike],
    config: PretrainingDataConfig,
    keep_examples: bool,
) -> None:
    global _worker_tokenizer, _worker_tables, _worker_config, _worker_keeps_examples
    if not isinstance(tokenizer, TokenizerLike):
        tokenizer = tokenizer()  # a factory, already checked in the main process
    _worker_tokenizer = tokenizer
    _worker_tables = _TokenTables(tokenizer)
    _worker_config = config
    _worker_keeps_examples = keep_examples


def document_sentences(
    document: Document, tokenizer: TokenizerLike, language: str = "en"
) -> list[list[int]]:
    """Token ids of the document's sentences (paragraphs split by `sentencex`); none empty."""
    if document.split_sentences:
        import sentencex

        texts = [s.strip() for p in document.texts for s in sentencex.segment(language, p)]
    else:
        texts = document.texts
    return [ids for ids in (tokenizer.encode(t) for t in texts if t) if ids]


def _process_document(
    task: tuple[Document, Document | None],
) -> tuple[DocumentStats, list[tuple[bytes, PretrainingExample | None]], int]:
    """Stats, serialized records (with their examples if asked for) and bytes consumed."""
    document, partner = task
    config, tokenizer, tables = _worker_config, _worker_tokenizer, _worker_tables
    stats = DocumentStats(source=document.source)
    sentences = document_sentences(document, tokenizer, config.language)
    stats.num_sentences = len(sentences)
    partner_sentences = document_sentences(partner, tokenizer, config.language) if partner else None
    if not sentences:
        stats.skipped["document without tokens"] += 1
        return stats, [], document.num_bytes
    # String seeds are hashed with SHA-512 by `random`: stable across runs and platforms.
    rng = random.Random(f"{config.random_seed}/{document.index}")
    records = []
    for _ in range(config.dupe_factor):
        for example in create_examples_from_document(
            sentences, rng, tables, config, partner_sentences, stats.skipped
        ):
            features = pad_example(example, config.max_seq_length, config.max_predictions_per_seq)
            records.append(
                (serialize_features(features), example if _worker_keeps_examples else None)
            )
            stats.add_example(example, tables.special)
    return stats, records, document.num_bytes


def _tasks(
    documents: Iterator[Document], config: PretrainingDataConfig
) -> Iterator[tuple[Document, Document | None]]:
    """Pairs each document with its NSP partner: a seeded pick among the previous
    ``nsp_partner_window`` documents (the next one for the first)."""
    if config.task != "nsp":
        for document in documents:
            yield document, None
        return
    history: collections.deque[Document] = collections.deque(maxlen=config.nsp_partner_window)
    first = next(documents, None)
    if first is None:
        return
    second = next(documents, None)
    yield first, second
    if second is None:
        return
    history.append(first)
    for document in itertools.chain([second], documents):
        rng = random.Random(f"{config.random_seed}/partner/{document.index}")
        yield document, history[rng.randrange(len(history))]
        history.append(document)


def ordered_bounded_map(
    pool: multiprocessing.pool.Pool, function: Callable, items: Iterable, window: int
) -> Iterator:
    """``pool.imap`` with at most ``window`` items in flight.

    ``Pool.imap`` drains its input iterator as fast as it can, which would read the whole corpus
    into the task queue; this pulls the next document only when one result has been taken.
    """
    pending: collections.deque = collections.deque()
    for item in items:
        pending.append(pool.apply_async(function, (item,)))
        if len(pending) >= window:
            yield pending.popleft().get()
    while pending:
        yield pending.popleft().get()


# ---------------------------------------------------------------------------------------------
# Writing.


def pad_example(
    example: PretrainingExample, max_seq_length: int, max_predictions_per_seq: int
) -> dict[str, np.ndarray]:
    """The example as the original's feature dict (padded with zeros; weights 1.0 per mask)."""
    length = len(example.token_ids)
    num_masked = len(example.mask_positions)
    if length > max_seq_length or num_masked > max_predictions_per_seq:
        raise ValueError(
            f"example has {length} tokens and {num_masked} masks; expected at most "
            f"{max_seq_length} and {max_predictions_per_seq}"
        )

    def padded(values, size, dtype=np.int64):
        array = np.zeros(size, dtype)
        array[: len(values)] = values
        return array

    return {
        "input_ids": padded(example.token_ids, max_seq_length),
        "input_mask": padded([1] * length, max_seq_length),
        "segment_ids": padded(example.segment_ids, max_seq_length),
        "masked_lm_positions": padded(example.mask_positions, max_predictions_per_seq),
        "masked_lm_ids": padded(example.mask_ids, max_predictions_per_seq),
        "masked_lm_weights": padded([1.0] * num_masked, max_predictions_per_seq, np.float32),
        "next_sentence_labels": np.array([example.sentence_order_label], np.int64),
        "token_boundary": padded(example.token_boundary, max_seq_length),
    }


@functools.cache
def _example_message_class():
    """``tensorflow.Example`` built with protobuf alone, in a private descriptor pool.

    Workers serialize without importing TensorFlow; the schema is tensorflow/core/example's
    (example.proto, feature.proto), so the bytes are those of ``tf.train.Example``.
    """
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    field = descriptor_pb2.FieldDescriptorProto
    file = descriptor_pb2.FileDescriptorProto(
        name="keras_albert/example.proto", package="tensorflow", syntax="proto3"
    )

    def message(name, *fields, nested=()):
        proto = file.message_type.add(name=name)
        proto.nested_type.extend(nested)
        for number, (field_name, label, kind, type_name) in enumerate(fields, 1):
            proto.field.add(
                name=field_name, number=number, label=label, type=kind, type_name=type_name
            )
        return proto

    repeated, optional = field.LABEL_REPEATED, field.LABEL_OPTIONAL
    message("BytesList", ("value", repeated, field.TYPE_BYTES, None))
    message("FloatList", ("value", repeated, field.TYPE_FLOAT, None))
    message("Int64List", ("value", repeated, field.TYPE_INT64, None))
    feature = message(
        "Feature",
        ("bytes_list", optional, field.TYPE_MESSAGE, ".tensorflow.BytesList"),
        ("float_list", optional, field.TYPE_MESSAGE, ".tensorflow.FloatList"),
        ("int64_list", optional, field.TYPE_MESSAGE, ".tensorflow.Int64List"),
    )
    feature.oneof_decl.add(name="kind")
    for f in feature.field:
        f.oneof_index = 0
    entry = descriptor_pb2.DescriptorProto(name="FeatureEntry")
    entry.options.map_entry = True
    entry.field.add(name="key", number=1, label=optional, type=field.TYPE_STRING)
    entry.field.add(
        name="value",
        number=2,
        label=optional,
        type=field.TYPE_MESSAGE,
        type_name=".tensorflow.Feature",
    )
    message(
        "Features",
        ("feature", repeated, field.TYPE_MESSAGE, ".tensorflow.Features.FeatureEntry"),
        nested=[entry],
    )
    message("Example", ("features", optional, field.TYPE_MESSAGE, ".tensorflow.Features"))
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("tensorflow.Example"))


def serialize_features(features: dict[str, np.ndarray]) -> bytes:
    """A serialized ``tf.train.Example`` with the original's feature names and types."""
    example = _example_message_class()()
    feature = example.features.feature
    for name in ORIGINAL_FEATURE_NAMES:
        values = features[name]
        if values.dtype == np.float32:
            feature[name].float_list.value.extend(values.tolist())
        else:
            feature[name].int64_list.value.extend(values.tolist())
    return example.SerializeToString(deterministic=True)


def shard_paths(output_prefix: str, num_shards: int) -> list[str]:
    """``{prefix}-00000-of-00004.tfrecord`` ..."""
    return [f"{output_prefix}-{i:05d}-of-{num_shards:05d}.tfrecord" for i in range(num_shards)]


def create_pretraining_data(
    inputs: Sequence[str],
    output_prefix: str,
    tokenizer: TokenizerLike | Callable[[], TokenizerLike],
    config: PretrainingDataConfig = PretrainingDataConfig(),
    num_workers: int = 1,
    num_shards: int = 1,
    progress: bool = True,
    on_example: Callable[[PretrainingExample], None] | None = None,
    start_method: Literal["spawn", "fork", "forkserver"] = "spawn",
) -> PretrainingDataSummary:
    """Turns text files into sharded TFRecords of pretraining examples.

    Args:
        inputs: files, directories (walked) or globs.
        output_prefix: shards are ``{output_prefix}-{i:05d}-of-{num_shards:05d}.tfrecord``;
            its directory is created.
        tokenizer: a ``TokenizerLike``, pickled to the workers when ``num_workers > 1``, or a
            picklable zero-argument factory of one, called once per process (for tokenizers
            holding TensorFlow resources, e.g.
            ``functools.partial(AlbertTokenizer, proto=path, lowercase=True)``).
        config: how examples are made.
        num_workers: processes making examples (output does not depend on it).
        num_shards: output files; examples are dealt round-robin after the shuffle buffer.
        progress: show a tqdm bar over input bytes.
        on_example: called with every example in written order (tests, statistics).
        start_method: how workers start. "spawn" (safe anywhere): each imports what the
            tokenizer needs, for a TensorFlow-backed tokenizer ~5 CPU seconds per worker.
            "fork" (POSIX): workers inherit the main process's tokenizer instance without
            pickling or building it again; safe when its ``encode`` runs no TensorFlow ops
            (as ``AlbertTokenizer``'s Python path), since a forked child must not use a
            TensorFlow runtime started in the parent. Output does not depend on it.

    Returns:
        The summary: counts, mask rate, label balance, n-gram histogram, skipped inputs.
    """
    factory = None
    if not isinstance(tokenizer, TokenizerLike) and callable(tokenizer):
        factory, tokenizer = tokenizer, tokenizer()
    if not isinstance(tokenizer, TokenizerLike):
        raise TypeError(
            f"`tokenizer` must provide the TokenizerLike interface (vocabulary_size, *_id, "
            f"special_ids, encode, id_to_piece, piece_to_id, is_word_start) or be a factory "
            f"of one; received {type(tokenizer).__name__}"
        )
    if num_workers < 1 or num_shards < 1:
        raise ValueError(
            f"`num_workers` and `num_shards` must be >= 1; received {num_workers}, {num_shards}"
        )
    if start_method not in multiprocessing.get_all_start_methods():
        raise ValueError(
            f"`start_method` must be one of {multiprocessing.get_all_start_methods()}; "
            f"received {start_method!r}"
        )
    import tensorflow as tf
    from tqdm import tqdm

    started = time.perf_counter()
    summary = PretrainingDataSummary()
    files = expand_inputs(inputs, summary.skipped)
    total_bytes = sum(os.path.getsize(f) for f in files)
    tasks = _tasks(iter_documents(files, config, summary), config)

    paths = shard_paths(output_prefix, num_shards)
    os.makedirs(os.path.dirname(os.path.abspath(output_prefix)), exist_ok=True)
    writers = [tf.io.TFRecordWriter(p) for p in paths]
    shuffle_rng = random.Random(f"{config.random_seed}/write")
    buffer: list[tuple[bytes, PretrainingExample | None]] = []
    num_written = 0

    def write(record: bytes, example: PretrainingExample | None) -> None:
        nonlocal num_written
        writers[num_written % num_shards].write(record)
        num_written += 1
        if on_example is not None:
            on_example(example)

    if num_workers == 1:
        _init_worker(tokenizer, config, on_example is not None)
        results = map(_process_document, tasks)
        pool = None
    else:
        # A forked worker inherits the built tokenizer (Pool arguments are not pickled then).
        source = tokenizer if start_method == "fork" else factory or tokenizer
        if start_method != "fork":
            try:
                pickle.dumps(source)
            except Exception as error:
                raise TypeError(
                    f"`tokenizer` ({type(source).__name__}) cannot be pickled to the worker "
                    f"processes ({error}); pass a picklable factory of it instead, e.g. "
                    f"functools.partial(TokenizerClass, ...), use start_method='fork' or "
                    f"num_workers=1"
                ) from error
        worker_args = (source, config, on_example is not None)
        context = multiprocessing.get_context(start_method)
        pool = context.Pool(num_workers, initializer=_init_worker, initargs=worker_args)
        results = ordered_bounded_map(pool, _process_document, tasks, 4 * num_workers)
    bar = tqdm(total=total_bytes, unit="B", unit_scale=True, disable=not progress)
    try:
        for stats, records, num_bytes in results:
            summary.merge_document(stats)
            for item in records:
                if len(buffer) < config.write_shuffle_buffer:
                    buffer.append(item)
                    continue
                slot = shuffle_rng.randrange(len(buffer))
                write(*buffer[slot])
                buffer[slot] = item
            bar.update(num_bytes)
            bar.set_postfix(examples=num_written + len(buffer), refresh=False)
        shuffle_rng.shuffle(buffer)
        for item in buffer:
            write(*item)
    finally:
        bar.close()
        if pool is not None:
            pool.terminate()
        for writer in writers:
            writer.close()
    summary.output_files = paths
    summary.seconds = time.perf_counter() - started
    return summary
