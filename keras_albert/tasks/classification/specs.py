"""The GLUE-style tasks: where each kind of file keeps its columns (`Layout`), what a task
is (`TaskSpec`: texts, labels or regression, official metrics), the GLUE tasks by name
(`TASKS`, `get_task`) and any CSV/TSV task (`generic_task`). The readers and the tf.data
pipeline are `keras_albert.tasks.classification.reader`."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

CLASSIFICATION_METRICS = ("accuracy", "f1", "matthews_correlation")
REGRESSION_METRICS = ("pearson", "spearman")


@dataclasses.dataclass(frozen=True)
class Layout:
    """Where one kind of file keeps its columns.

    Columns are header names, or 0-based field indices for a headerless file (`header=False`).

    Args:
        text_columns: one column (single sentence) or two (a pair).
        label_column: the label; not needed when reading unlabeled (test) files.
        id_column: an example id written to the predictions file; otherwise the example's index
            among the file's examples, from 0.
        header: whether the first line names the columns.
        quoting: CSV quoting (`"a, b"` with `""` escapes) as Python's `csv` reads it; GLUE
            TSV files are read without (a field may start with a lone `"`).
        delimiter: the field separator; the default tab becomes a comma for a `.csv` file.
        label_is_index: labels are written as their index in the task's label list.
        requires: further header columns that must be present for this layout to be chosen
            (they tell apart layouts with the same text and label columns).
    """

    text_columns: tuple[str | int, ...]
    label_column: str | int | None
    id_column: str | int | None = None
    header: bool = True
    quoting: bool = False
    delimiter: str = "\t"
    label_is_index: bool = False
    requires: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class TaskSpec:
    """A sentence (pair) classification or regression task.

    Args:
        name: the task's name.
        layouts: the file layouts the task accepts, tried in order against the header.
        labels: the label list (file values, in class-index order); `None` for regression.
        metrics: official metrics, from `CLASSIFICATION_METRICS` or `REGRESSION_METRICS`.
        main_metric: the metric that picks the best checkpoint.
    """

    name: str
    layouts: tuple[Layout, ...]
    labels: tuple[str, ...] | None
    metrics: tuple[str, ...]
    main_metric: str

    def __post_init__(self):
        allowed = REGRESSION_METRICS if self.labels is None else CLASSIFICATION_METRICS
        for metric in self.metrics:
            if metric not in allowed:
                raise ValueError(
                    f"Task {self.name!r}: metric {metric!r} does not fit a "
                    f"{'regression' if self.labels is None else 'classification'} task; "
                    f"expected one of {allowed}"
                )
        if self.main_metric not in self.metrics:
            raise ValueError(
                f"Task {self.name!r}: main_metric {self.main_metric!r} is not one of "
                f"its metrics {self.metrics}"
            )
        if self.labels is not None and len(set(self.labels)) < 2:
            raise ValueError(
                f"Task {self.name!r}: a classification task needs at least two distinct "
                f"labels. Received: labels={self.labels}"
            )
        if not self.layouts:
            raise ValueError(f"Task {self.name!r} has no file layout")
        for layout in self.layouts:
            if len(layout.text_columns) not in (1, 2):
                raise ValueError(
                    f"Task {self.name!r}: `text_columns` must name one or two columns. "
                    f"Received: text_columns={layout.text_columns}"
                )

    @property
    def num_classes(self) -> int:
        """Outputs of the classifier: the number of labels, 1 for regression."""
        return 1 if self.labels is None else len(self.labels)

    @property
    def is_regression(self) -> bool:
        return self.labels is None


def _glue_tsv(text_columns, label_column, id_column=None, requires=()):
    return Layout(tuple(text_columns), label_column, id_column, requires=tuple(requires))


TASKS: dict[str, TaskSpec] = {
    "sst-2": TaskSpec(
        "SST-2",
        (_glue_tsv(["sentence"], "label", "index"),),
        labels=("0", "1"),
        metrics=("accuracy",),
        main_metric="accuracy",
    ),
    "mrpc": TaskSpec(
        "MRPC",
        (_glue_tsv(["#1 String", "#2 String"], "Quality", "index"),),
        labels=("0", "1"),
        metrics=("f1", "accuracy"),
        main_metric="f1",
    ),
    "sts-b": TaskSpec(
        "STS-B",
        (_glue_tsv(["sentence1", "sentence2"], "score", "index"),),
        labels=None,
        metrics=("pearson", "spearman"),
        main_metric="pearson",
    ),
    "cola": TaskSpec(
        "CoLA",
        (
            # The raw files (and GLUE's train/dev): source, label, original label, sentence.
            Layout((3,), 1, header=False),
            # GLUE's test.tsv: index, sentence.
            _glue_tsv(["sentence"], "label", "index"),
        ),
        labels=("0", "1"),
        metrics=("matthews_correlation",),
        main_metric="matthews_correlation",
    ),
    "rte": TaskSpec(
        "RTE",
        (
            _glue_tsv(["sentence1", "sentence2"], "label", "index", requires=["index"]),
            Layout(
                ("sentence1", "sentence2"),
                "label",
                "idx",
                quoting=True,
                label_is_index=True,
                requires=("idx",),
            ),
        ),
        labels=("entailment", "not_entailment"),
        metrics=("accuracy",),
        main_metric="accuracy",
    ),
    "qqp": TaskSpec(
        "QQP",
        (_glue_tsv(["question1", "question2"], "is_duplicate", "id"),),
        labels=("0", "1"),
        metrics=("f1", "accuracy"),
        main_metric="f1",
    ),
    "mnli": TaskSpec(
        "MNLI",
        (_glue_tsv(["sentence1", "sentence2"], "gold_label", "index"),),
        labels=("contradiction", "entailment", "neutral"),
        metrics=("accuracy",),
        main_metric="accuracy",
    ),
    "qnli": TaskSpec(
        "QNLI",
        (_glue_tsv(["question", "sentence"], "label", "index"),),
        labels=("entailment", "not_entailment"),
        metrics=("accuracy",),
        main_metric="accuracy",
    ),
}


def get_task(name: str) -> TaskSpec:
    """The GLUE task called `name` (case and "-" insensitive: "SST-2", "sst2", "STSB", ...)."""
    if not isinstance(name, str):
        raise TypeError(f"`task` must be a str. Received: task={name!r}")
    wanted = name.lower().replace("-", "").replace("_", "")
    for key, task in TASKS.items():
        if key.replace("-", "") == wanted:
            return task
    known = ", ".join(task.name for task in TASKS.values())
    raise ValueError(
        f"Unknown task {name!r}. Expected one of: {known}, or 'generic' with text columns, "
        "a label column and a label list."
    )


def generic_task(
    text_columns: Sequence[str | int],
    label_column: str | int,
    labels: Sequence[str] | None,
    delimiter: str = "\t",
    header: bool = True,
    quoting: bool = True,
    name: str = "generic",
) -> TaskSpec:
    """A task over any CSV/TSV file: one or two text columns and a label column.

    Columns are header names, or 0-based indices with `header=False`. `labels=None` makes it
    a regression task (Pearson/Spearman); otherwise accuracy and, for two labels, F1 of the
    second label as in MRPC/QQP.
    """
    if labels is not None:
        labels = tuple(str(label) for label in labels)
        metrics = ("accuracy", "f1") if len(labels) == 2 else ("accuracy",)
        main_metric = "accuracy"
    else:
        metrics, main_metric = ("pearson", "spearman"), "pearson"
    names = [column for column in (*text_columns, label_column) if isinstance(column, str)]
    if not header and names:
        raise ValueError(f"Without a header, columns must be indices. Received: names {names}")
    if header and len(names) != len(text_columns) + 1:
        raise ValueError(
            "With a header, columns must be names. Received: "
            f"text_columns={list(text_columns)}, label_column={label_column!r}"
        )
    layout = Layout(
        tuple(text_columns), label_column, header=header, quoting=quoting, delimiter=delimiter
    )
    return TaskSpec(name, (layout,), labels, metrics, main_metric)
