"""`PretrainingDataConfig`: how raw text becomes pretraining examples (stdlib only)."""

from __future__ import annotations

import dataclasses
from typing import Literal

from keras_albert import validation

DocumentSplit = Literal["original", "blank_line", "heading", "file"]
SentencePairTask = Literal["sop", "nsp"]
ShortSequenceDraw = Literal["document", "chunk"]

# Level-1 headings of Gutenberg-style books ("CHAPTER I", "Chapter 12", "VOLUME II") and of
# WikiText (" = Title = "; section headings " = = Section = = " stay inside the article).
DEFAULT_HEADING_PATTERN = (
    r"^\s*(?:(?:CHAPTER|Chapter|VOLUME|Volume|BOOK|Book|PART|Part)\b[^a-z]*|= [^=].*[^=] =)\s*$"
)
# Section headings inside a document (WikiText's " = = Section = = "): they end a paragraph and
# are not text.
DEFAULT_SECTION_PATTERN = r"^\s*= (?:= )+.*=\s*$"


@dataclasses.dataclass(frozen=True)
class PretrainingDataConfig:
    """How examples are made. Defaults are the original ALBERT `create_pretraining_data.py`'s.

    Args:
        sequence_length: tokens per example including `[CLS]` and two `[SEP]`.
        max_predictions_per_sequence: hard cap on masked positions per example.
        masked_lm_prob: fraction of non-special tokens to mask; 0 writes unmasked examples (for
            the reader's dynamic masking).
        max_ngram: longest masked span, in words; p(n) ∝ 1/n for n = 1..max_ngram.
        short_seq_prob: probability of a target length drawn uniformly from
            [2, sequence_length - 3] instead of sequence_length - 3.
        short_seq_draw: "document" (the original: one draw per document and pass, every chunk
            of that pass aims at the same target) or "chunk" (a new draw for every chunk: fewer
            and longer examples; this project's behaviour until 2026-11-23, kept to reproduce
            data written then).
        dupe_factor: how many times each document is turned into examples, with different
            chunking and masks.
        task: "sop" (sentence order: label 1 = segments swapped) or "nsp" (label 1 = B from
            another document), for the paper's comparison.
        seed: seed of everything random.
        document_split: "original" (one sentence per line, blank line between documents, no
            sentence splitter), "blank_line" (each blank-line separated paragraph is a document),
            "heading" (a line matching `heading_pattern` starts a document; the heading line
            itself is not text), "file" (one file is one document).
        heading_pattern: regular expression for "heading".
        section_pattern: lines that end a paragraph and are dropped (section headings), in
            every mode but "original".
        language: language code for the sentence splitter.
        max_line_bytes: a longer line is skipped and counted (it is not prose).
        nsp_partner_window: NSP draws the random document among this many previous documents.
        write_shuffle_buffer: records the local writer (the Beam engine: each bundle) holds
            in memory; beyond, it sorts them into shards through runs on disk (the output does
            not depend on it).
    """

    sequence_length: int = 512
    max_predictions_per_sequence: int = 20
    masked_lm_prob: float = 0.15
    max_ngram: int = 3
    short_seq_prob: float = 0.1
    short_seq_draw: ShortSequenceDraw = "document"
    dupe_factor: int = 40
    task: SentencePairTask = "sop"
    seed: int = 12345
    document_split: DocumentSplit = "heading"
    heading_pattern: str = DEFAULT_HEADING_PATTERN
    section_pattern: str = DEFAULT_SECTION_PATTERN
    language: str = "en"
    max_line_bytes: int = 1_000_000
    nsp_partner_window: int = 16
    write_shuffle_buffer: int = 10_000

    def __post_init__(self):
        validation.require_int("sequence_length", self.sequence_length, 5)
        validation.require_int("max_predictions_per_sequence", self.max_predictions_per_sequence, 0)
        validation.require_rate("masked_lm_prob", self.masked_lm_prob)
        validation.require_int("max_ngram", self.max_ngram, 1)
        validation.require_number("short_seq_prob", self.short_seq_prob, 0.0, 1.0)
        validation.require_one_of("short_seq_draw", self.short_seq_draw, ("document", "chunk"))
        validation.require_int("dupe_factor", self.dupe_factor, 1)
        validation.require_one_of("task", self.task, ("sop", "nsp"))
        validation.require_int("seed", self.seed)
        validation.require_one_of(
            "document_split", self.document_split, ("original", "blank_line", "heading", "file")
        )
        validation.require_int("max_line_bytes", self.max_line_bytes, 1)
        validation.require_int("nsp_partner_window", self.nsp_partner_window, 1)
        validation.require_int("write_shuffle_buffer", self.write_shuffle_buffer, 1)
        validation.require_pattern("heading_pattern", self.heading_pattern)
        validation.require_pattern("section_pattern", self.section_pattern)

    @property
    def ngram_probabilities(self) -> list[float]:
        """p(n) ∝ 1/n for n = 1..max_ngram (6/11, 3/11, 2/11 for 3)."""
        weights = [1.0 / n for n in range(1, self.max_ngram + 1)]
        return [w / sum(weights) for w in weights]
