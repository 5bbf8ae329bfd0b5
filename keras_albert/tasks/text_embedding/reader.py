"""Sentence-pair files as the text-embedding fine-tuning reads them, and the tf.data pipelines
that feed an `AlbertTextEmbedder`.

A `PairLayout` (`keras_albert.tasks.text_embedding.options`) says where a file keeps its two
texts and (optionally) its similarity score: `STSB` is GLUE STS-B's TSV (`sentence1`,
`sentence2`, `score` 0-5), `sentence_pairs` any CSV/TSV (`TextEmbeddingOptions.pair_layout`).
`read_pairs` reads a file, every row checked (`DataFormatError` names the file and line of a
bad one, or `skip_invalid` skips and counts them). A tab-separated file is read as GLUE's TSV
files are (no quoting: STS-B has texts with a lone `"`); a comma-separated one with CSV
quoting.

Training batches are `(x, score)`: `x`'s `token_ids`, `segment_ids`, `padding_mask` are
`(batch, 2, sequence_length)`, each text of a pair packed alone (`[CLS] text [SEP]`) by the
embedder's preprocessor; `keras_albert.tasks.text_embedding.losses.PairObjective` embeds both.
"""

from __future__ import annotations

import csv
import dataclasses
import math
import os
from typing import TYPE_CHECKING

import numpy as np
import tensorflow as tf

from keras_albert.tasks.text_embedding.preprocessor import AlbertTextEmbedderPreprocessor
from keras_albert.text.pipeline import example_batches, served_from_memory
from keras_albert.validation import require_not_directory

if TYPE_CHECKING:
    from keras_albert.tasks.text_embedding.options import PairLayout


class DataFormatError(ValueError):
    """A pair file that cannot be read as its layout says; the message names file and line."""


@dataclasses.dataclass
class Pairs:
    """The pairs of a file: `first` and `second` texts, `scores` (float32, divided by the
    layout's `max_score`) or None when the file has none, `line_numbers` (1-based)."""

    path: str
    first: list[str]
    second: list[str]
    scores: np.ndarray | None
    line_numbers: list[int]
    num_skipped: int = 0
    skipped: list[str] = dataclasses.field(default_factory=list)

    def __len__(self) -> int:
        return len(self.first)


def read_pairs(
    path: str | os.PathLike,
    layout: PairLayout,
    scored: bool | None = None,
    skip_invalid: bool = False,
    name: str = "path",
) -> Pairs:
    """Reads a pair file; every row checked.

    Args:
        path: the file (anything `tf.io.gfile` opens).
        layout: its `PairLayout`.
        scored: True: the file must have the score column; False: scores are not read (a
            test file); None: read them where the header has the column (a training file
            without it trains on its pairs alone).
        skip_invalid: skip bad rows (counted, reasons in `skipped`) instead of raising.
        name: what errors call `path` (the option it came from: "train_data", ...).

    Raises:
        DataFormatError: "<path>:<line>: ..." for an empty file, a header without the
            columns, a row with too few fields or a score that is not a finite number.
    """
    path = os.fspath(path)
    if not tf.io.gfile.exists(path):
        raise FileNotFoundError(f"Pair file not found: {path!r}")
    require_not_directory(name, path, tf.io.gfile.isdir)
    with tf.io.gfile.GFile(path, "rb") as file:
        # utf-8-sig: a file saved by a spreadsheet may start with a byte-order mark.
        lines = file.read().decode("utf-8-sig", errors="replace").splitlines(keepends=True)
    if not any(line.strip() for line in lines):
        raise DataFormatError(f"{path}:1: the file is empty; expected {layout.name} pairs")
    delimiter = "," if layout.delimiter == "\t" and path.endswith(".csv") else layout.delimiter
    quoting = csv.QUOTE_NONE if delimiter == "\t" else csv.QUOTE_MINIMAL
    rows = csv.reader(lines, delimiter=delimiter, quoting=quoting)
    columns = [*layout.text_columns]
    if layout.score_column is not None and scored is not False:
        columns.append(layout.score_column)
    if layout.header:
        header = [field.strip() for field in next(rows)]
        if scored is None and layout.score_column not in header:
            columns = columns[:2]
        missing = [column for column in columns if column not in header]
        if missing:
            raise DataFormatError(
                f"{path}:1: the header {header} lacks the column(s) {missing} of "
                f"{layout.name}; expected a header with: {', '.join(map(str, columns))}"
            )
        indices = [header.index(column) for column in columns]
    else:
        indices = list(columns)
    has_scores = len(indices) == 3
    first, second, scores, line_numbers, skipped = [], [], [], [], []
    for row in rows:
        line = rows.line_num
        if not row or (len(row) == 1 and not row[0].strip()):
            continue  # blank line
        try:
            if len(row) <= max(indices):
                raise DataFormatError(
                    f"{path}:{line}: expected at least {max(indices) + 1} fields (texts in "
                    f"{list(layout.text_columns)}"
                    + (f", score in {layout.score_column!r}" if has_scores else "")
                    + f"), found {len(row)}"
                )
            if has_scores:
                scores.append(_score(row[indices[2]], layout, path, line))
        except DataFormatError as error:
            if not skip_invalid:
                raise
            skipped.append(str(error))
            continue
        first.append(row[indices[0]])
        second.append(row[indices[1]])
        line_numbers.append(line)
    if not first:
        reason = f"; {len(skipped)} invalid rows skipped, first: {skipped[0]}" if skipped else ""
        raise DataFormatError(f"{path}:{len(lines)}: no pairs in the file{reason}")
    score_array = np.asarray(scores, dtype=np.float32) if has_scores else None
    return Pairs(path, first, second, score_array, line_numbers, len(skipped), skipped)


def _score(value: str, layout: PairLayout, path: str, line: int) -> float:
    try:
        score = float(value.strip())
    except ValueError:
        score = math.nan
    if not math.isfinite(score):
        raise DataFormatError(f"{path}:{line}: the score {value.strip()!r} is not a finite number")
    return score / layout.max_score


def pair_dataset(
    pairs: Pairs,
    preprocessor: AlbertTextEmbedderPreprocessor,
    batch_size: int,
    seed: int | None = None,
) -> tf.data.Dataset:
    """Shuffled, repeated training batches `(x, score)` of `pairs` (the last partial batch
    dropped): `x` holds `(batch, 2, sequence_length)` inputs, the pair's texts packed alone by
    `preprocessor`;
    `score` is the pair's (zeros for pairs without scores: the in-batch loss ignores them)."""
    scores = pairs.scores if pairs.scores is not None else np.zeros(len(pairs), np.float32)
    texts = (tf.constant(pairs.first), tf.constant(pairs.second))
    dataset = example_batches((texts, scores), len(pairs), batch_size, training=True, seed=seed)

    def encode(texts, score):
        first, second = (preprocessor(column) for column in texts)
        # (batch, 2, sequence_length): the replicas' shares split the pairs, never a pair.
        x = {key: tf.stack([first[key], second[key]], axis=1) for key in first}
        return x, score

    return dataset.map(encode, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)


def text_dataset(
    texts: list[str], preprocessor: AlbertTextEmbedderPreprocessor, batch_size: int
) -> tf.data.Dataset:
    """The model inputs of `texts`, in order, packed by `preprocessor` once and served from
    memory (an evaluation embeds the same texts each time)."""
    dataset = example_batches(tf.constant(texts), len(texts), batch_size).map(preprocessor)
    return served_from_memory(dataset, batch_size)
