"""GLUE-style task files as people have them, and the tf.data pipeline that feeds a classifier.

A `TaskSpec` (`keras_albert.tasks.classification.specs`, re-exported here) says which columns
hold the text(s) and the label, the label list (or regression) and the official metrics.
`read_examples(path, task)` reads a task file in any of the layouts the task knows (first one
whose columns the header has), checks every row and raises `DataFormatError` naming the file and
line of the first bad one (or, with `skip_invalid=True`, skips bad rows and counts them).
`make_dataset` tokenizes and packs in the graph, through the classifier's preprocessor.

Layouts known (column names as in the files):
- GLUE TSV (read as the original `run_classifier._read_tsv`: tab-separated, no quoting);
- CoLA's headerless raw files (`source, label, original label, sentence`), as GLUE and the
  dataset authors ship train/dev;
- RTE as exported by Hugging Face `datasets` (`sentence1, sentence2, label, idx`, CSV-quoted,
  label 0 = entailment, 1 = not_entailment), as in ../shared/data/glue/RTE;
- GLUE test files (no label column) for prediction;
- generic CSV/TSV: `generic_task(text_columns, label_column, labels)`.
"""

from __future__ import annotations

import csv
import dataclasses
import math
import os

import numpy as np
import tensorflow as tf
from tqdm.auto import tqdm

from keras_albert.tasks.classification.preprocessor import AlbertClassifierPreprocessor

# The task table lives in glue_tasks; its names are re-exported here (one import for users).
from keras_albert.tasks.classification.specs import (  # noqa: F401
    CLASSIFICATION_METRICS,
    REGRESSION_METRICS,
    TASKS,
    Layout,
    TaskSpec,
    generic_task,
    get_task,
)
from keras_albert.text.pipeline import example_batches, served_from_memory, trim_padding
from keras_albert.validation import require_not_directory


class DataFormatError(ValueError):
    """A task file that cannot be read as the task says; the message names file and line."""


@dataclasses.dataclass
class Examples:
    """The rows of a task file.

    `texts` holds one list of strings per text column; `labels` is int32 class indices,
    float32 scores (regression) or `None` for an unlabeled file; `ids` are the file's id
    column or, without one, the example's index from 0; `line_numbers` the (1-based) line each
    example ends on.
    """

    path: str
    task: TaskSpec
    texts: tuple[list[str], ...]
    labels: np.ndarray | None
    ids: list[str]
    line_numbers: list[int]
    num_skipped: int = 0
    skipped: list[str] = dataclasses.field(default_factory=list)
    # The field separator the file was read with (a `.csv` given the default tab: a comma).
    delimiter: str = "\t"

    def __len__(self) -> int:
        return len(self.ids)


def _delimiter_for(path: str, layout: Layout) -> str:
    if layout.delimiter == "\t" and path.endswith(".csv"):
        return ","
    return layout.delimiter


def _reader(file, layout: Layout, delimiter: str):
    if layout.quoting:
        return csv.reader(file, delimiter=delimiter)
    return csv.reader(file, delimiter=delimiter, quoting=csv.QUOTE_NONE)


def _choose_layout(
    path: str, first_line: str, task: TaskSpec, labeled: bool
) -> tuple[Layout, list[str] | None]:
    """The first layout whose named columns the header has (or a headerless one)."""
    headerless = None
    for layout in task.layouts:
        if not layout.header:
            headerless = headerless or layout
            continue
        delimiter = _delimiter_for(path, layout)
        header = next(_reader([first_line], layout, delimiter))
        header = [name.strip() for name in header]
        needed = [*layout.text_columns, *layout.requires]
        if labeled:
            needed.append(layout.label_column)
        if all(column in header for column in needed):
            return layout, header
    if headerless is not None:
        return headerless, None
    expected = "; ".join(
        ", ".join(
            str(c)
            for c in (*layout.text_columns, *layout.requires)
            + ((layout.label_column,) if labeled else ())
        )
        for layout in task.layouts
    )
    raise DataFormatError(
        f"{path}:1: the header {first_line.rstrip(chr(10) + chr(13))!r} lacks the columns "
        f"{task.name} needs; expected a header with: {expected}"
    )


def _column_index(header: list[str] | None, column: str | int) -> int:
    return column if header is None else header.index(column)


def read_examples(
    path: str | os.PathLike,
    task: TaskSpec | str,
    labeled: bool = True,
    skip_invalid: bool = False,
    progress: bool = False,
    name: str = "path",
) -> Examples:
    """Reads a task file; every row checked.

    Args:
        path: the file (anything `tf.io.gfile` opens).
        task: a `TaskSpec` or a GLUE task name.
        labeled: whether the file has labels (train/dev); `False` for test files.
        skip_invalid: skip bad rows (counted in `num_skipped`, reasons in `skipped`) instead
            of raising.
        progress: show a progress bar.
        name: what errors call `path` (the option it came from: "train_data", ...).

    Raises:
        DataFormatError: "<path>:<line>: ..." for an empty file, a header without the task's
            columns, a row with the wrong number of fields, a label outside the label list,
            or a regression target that is not a finite number.
    """
    task = get_task(task) if isinstance(task, str) else task
    path = os.fspath(path)
    if not tf.io.gfile.exists(path):
        raise FileNotFoundError(f"Task file not found: {path!r}")
    require_not_directory(name, path, tf.io.gfile.isdir)
    with tf.io.gfile.GFile(path, "rb") as file:
        raw = file.read()
    # utf-8-sig: GLUE's MRPC files start with a byte-order mark.
    text = raw.decode("utf-8-sig", errors="replace")
    lines = text.splitlines(keepends=True)
    if not any(line.strip() for line in lines):
        raise DataFormatError(f"{path}:1: the file is empty; expected {task.name} examples")
    layout, header = _choose_layout(path, lines[0], task, labeled)
    delimiter = _delimiter_for(path, layout)
    text_indices = [_column_index(header, c) for c in layout.text_columns]
    label_index = _column_index(header, layout.label_column) if labeled else None
    id_index = None
    if layout.id_column is not None and (header is None or layout.id_column in header):
        id_index = _column_index(header, layout.id_column)
    num_fields = len(header) if header is not None else None
    min_fields = 1 + max(i for i in (*text_indices, label_index, id_index) if i is not None)

    texts: tuple[list[str], ...] = tuple([] for _ in text_indices)
    labels, ids, line_numbers, skipped = [], [], [], []
    reader = _reader(lines, layout, delimiter)
    if header is not None:
        next(reader)
    # disable=None: a bar on a terminal only, none in a redirected log.
    disable = None if progress else True
    for row in tqdm(reader, desc=os.path.basename(path), unit=" rows", disable=disable):
        line = reader.line_num
        if not row or (len(row) == 1 and not row[0].strip()):
            continue  # blank line
        try:
            if num_fields is not None and len(row) != num_fields:
                raise DataFormatError(
                    f"{path}:{line}: expected {num_fields} fields as in the header "
                    f"({', '.join(header)}), found {len(row)}"
                )
            if len(row) < min_fields:
                raise DataFormatError(
                    f"{path}:{line}: expected at least {min_fields} fields (text in "
                    f"column(s) {list(layout.text_columns)}, label in column "
                    f"{layout.label_column}), found {len(row)}"
                )
            label = _parse_label(row[label_index], task, layout, path, line) if labeled else None
        except DataFormatError as error:
            if not skip_invalid:
                raise
            skipped.append(str(error))
            continue
        for values, index in zip(texts, text_indices, strict=True):
            values.append(row[index])
        labels.append(label)
        # Without an id column: the example's row among the file's examples, from 0.
        ids.append(row[id_index] if id_index is not None else str(len(ids)))
        line_numbers.append(line)
    if not ids:
        reason = f"; {len(skipped)} invalid rows skipped, first: {skipped[0]}" if skipped else ""
        raise DataFormatError(f"{path}:{len(lines)}: no examples in the file{reason}")
    if labeled:
        dtype = np.float32 if task.is_regression else np.int32
        label_array = np.asarray(labels, dtype=dtype)
    else:
        label_array = None
    return Examples(
        path, task, texts, label_array, ids, line_numbers, len(skipped), skipped, delimiter
    )


def _parse_label(value: str, task: TaskSpec, layout: Layout, path: str, line: int):
    value = value.strip()
    if task.is_regression:
        try:
            score = float(value)
        except ValueError:
            score = math.nan
        if not math.isfinite(score):
            raise DataFormatError(
                f"{path}:{line}: the regression target {value!r} is not a finite number"
            )
        return score
    if layout.label_is_index:
        if value.isdigit() and int(value) < len(task.labels):
            return int(value)
        raise DataFormatError(
            f"{path}:{line}: label {value!r} is not a label index in "
            f"0..{len(task.labels) - 1} (for {', '.join(task.labels)})"
        )
    if value not in task.labels:
        raise DataFormatError(
            f"{path}:{line}: label {value!r} is not one of the {task.name} labels "
            f"{list(task.labels)}"
        )
    return task.labels.index(value)


def make_dataset(
    examples: Examples, tokenizer, sequence_length: int, *args, **kwargs
) -> tf.data.Dataset:
    """Batches of `({"token_ids", "segment_ids", "padding_mask"}, label)` from `examples`,
    packed to `sequence_length` by an `AlbertClassifierPreprocessor` on `tokenizer`: the other
    arguments (`batch_size`, `training`, ...) are those of `make_preprocessed_dataset`."""
    preprocessor = AlbertClassifierPreprocessor(tokenizer, sequence_length)
    return make_preprocessed_dataset(examples, preprocessor, *args, **kwargs)


def make_preprocessed_dataset(
    examples: Examples,
    preprocessor: AlbertClassifierPreprocessor,
    batch_size: int,
    training: bool = False,
    seed: int | None = None,
    input_context: tf.distribute.InputContext | None = None,
    in_memory: bool = False,
    pad_to_multiple_of: int | None = None,
    group_by_length: bool = False,
) -> tf.data.Dataset:
    """Batches of `({"token_ids", "segment_ids", "padding_mask"}, label)` from `examples`,
    tokenized and packed by `preprocessor` (its tokenizer and packer: the features of a model
    that carries it, called on the texts).

    Tokenization and packing run in the graph, after batching.
    Training datasets are shuffled and repeated forever, and drop the last partial batch;
    evaluation datasets keep every example in file order. Unlabeled examples give `x` only.
    With an `input_context`, each input pipeline reads its shard and `batch_size` (global)
    is divided among the replicas.

    `in_memory=True` (evaluation only) runs the pipeline once and serves the packed tensors
    from memory (`keras_albert.text.pipeline.served_from_memory`).

    `pad_to_multiple_of` (None: every batch is `preprocessor.sequence_length` long, static
    shapes as TPUs need): each batch is cut to its longest example rounded up to a multiple of
    it (`keras_albert.text.pipeline.trim_padding`; exact). `group_by_length` (training)
    batches examples of similar token counts together (`example_batches(lengths=...)`), so
    that dynamic padding pads little.
    """
    if in_memory and training:
        raise ValueError("`in_memory` is for evaluation datasets; a training one repeats")
    texts = tuple(tf.constant(values, dtype=tf.string) for values in examples.texts)
    features = texts if examples.labels is None else (texts, examples.labels)
    lengths = None
    if group_by_length:
        lengths = sum(preprocessor.tokenizer(segment).row_lengths() for segment in texts)
    dataset = example_batches(
        features, len(examples), batch_size, training, seed, input_context, lengths=lengths
    )

    # tf.data passes a tuple element's parts as separate arguments; segments: one or two
    # (batch,) string tensors.
    if examples.labels is None:
        dataset = dataset.map(
            lambda *segments: preprocessor.pack(list(segments)),
            num_parallel_calls=tf.data.AUTOTUNE,
        )
    else:
        dataset = dataset.map(
            lambda segments, label: (preprocessor.pack(list(segments)), label),
            num_parallel_calls=tf.data.AUTOTUNE,
        )
    if in_memory:
        dataset = served_from_memory(dataset, batch_size)
    if pad_to_multiple_of is not None:
        dataset = trim_padding(dataset, pad_to_multiple_of)
    return dataset.prefetch(tf.data.AUTOTUNE)
