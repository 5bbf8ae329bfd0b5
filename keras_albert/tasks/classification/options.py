"""The classification task type's own fine-tuning options (`ClassificationOptions`): the
columns of a generic CSV/TSV task; a GLUE task knows its own."""

from __future__ import annotations

import dataclasses

from keras_albert.tasks.classification.specs import TaskSpec, generic_task, get_task
from keras_albert.validation import require_given, require_one_of


@dataclasses.dataclass(frozen=True)
class ClassificationOptions:
    """A GLUE-style fine-tuning's own options (`--dataset` a GLUE name or "generic").

    Args:
        text_columns: generic task: the text columns, one or two (header names or indices).
        label_column: generic task: the label column.
        labels: generic task: the label values (comma-separated); none is regression.
        delimiter: generic task: the field separator.
        header: generic task: the first row names the columns.
    """

    text_columns: tuple[str, ...] | None = None
    label_column: str | None = None
    labels: tuple[str, ...] | None = None
    delimiter: str = "\t"
    header: bool = True

    def __post_init__(self):
        require_one_of("header", self.header, (True, False))

    def task_spec(self, dataset: str) -> TaskSpec:
        """The GLUE-style task `dataset` names: a GLUE name, or "generic" with these columns."""
        if dataset.lower() != "generic":
            return get_task(dataset)
        when = "for the generic task (one or two columns, with `label_column`)"
        require_given("text_columns", self.text_columns or None, when)
        require_given("label_column", self.label_column, "for the generic task")
        return generic_task(
            self.text_columns,
            self.label_column,
            self.labels,
            delimiter=self.delimiter,
            header=self.header,
        )
