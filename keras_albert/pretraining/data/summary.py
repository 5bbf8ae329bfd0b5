"""Counts of what example creation read, made and skipped: per document and for the whole run."""

from __future__ import annotations

import collections
import dataclasses
import json

from keras_albert.pretraining.data.documents import ReadCounts
from keras_albert.pretraining.data.records import PretrainingExample


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
class PretrainingDataSummary(ExampleCounts, ReadCounts):
    """What `create_pretraining_data` read, wrote and skipped (`skipped` by (path, reason))."""

    num_documents: int = 0
    output_files: list[str] = dataclasses.field(default_factory=list)
    seconds: float = 0.0

    @property
    def mask_rate(self) -> float:
        return self.num_masked_tokens / max(1, self.num_non_special_tokens)

    @property
    def sentence_order_balance(self) -> float:
        """Fraction of examples with label 1."""
        return self.num_swapped / max(1, self.num_examples)

    def merge(self, other: PretrainingDataSummary) -> None:
        """Adds `other`'s counts (a part of the corpus: a file, a worker's share)."""
        self.add_counts(other)
        self.num_files += other.num_files
        self.num_heading_lines += other.num_heading_lines
        self.num_documents += other.num_documents
        self.skipped.update(other.skipped)

    def to_json(self) -> str:
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        fields["span_length_counts"] = sorted(self.span_length_counts.items())
        fields["skipped"] = [[path, reason, n] for (path, reason), n in self.skipped.items()]
        return json.dumps(fields)

    @classmethod
    def from_json(cls, text: str) -> PretrainingDataSummary:
        fields = json.loads(text)
        fields["span_length_counts"] = collections.Counter(dict(fields["span_length_counts"]))
        fields["skipped"] = collections.Counter(
            {(path, reason): n for path, reason, n in fields["skipped"]}
        )
        return cls(**fields)

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
