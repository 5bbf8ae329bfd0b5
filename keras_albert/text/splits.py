"""A seeded train/dev split of a labeled CSV/TSV file (for a data set that ships as one file,
as ChnSentiCorp does), and the train texts as plain text for the pretraining data tool (stdlib
only).

    split_csv(CsvSplitOptions("reviews.csv", "runs/zh/split", text_column="review"))

writes `train.csv` and `dev.csv` (the header and the rows as read, each split in file order)
and, with `text_column`, `train.txt`: that column of the train rows, one text per paragraph
(blank lines between: `--document-split blank_line`), so that the dev texts stay out of the
pretraining data too.
"""

from __future__ import annotations

import csv
import dataclasses
import os
import random

from keras_albert import validation


@dataclasses.dataclass(frozen=True)
class CsvSplitOptions:
    """One split.

    Args:
        input: the CSV/TSV file, with a header row.
        output_dir: where train.csv, dev.csv (and train.txt) are written (made).
        dev_fraction: share of the rows drawn for dev.
        seed: seed of the draw (the same seed gives the same split).
        delimiter: the field delimiter ("," for CSV, a tab for TSV).
        text_column: a header name: write that column of the train rows to train.txt.
    """

    input: str
    output_dir: str
    dev_fraction: float = 0.1
    seed: int = 0
    delimiter: str = ","
    text_column: str | None = None

    def __post_init__(self):
        validation.require_number(
            "dev_fraction", self.dev_fraction, 0.0, 1.0, exclusive_minimum=True
        )
        validation.require_int("seed", self.seed, 0)
        if len(self.delimiter) != 1:
            raise ValueError(
                f"`delimiter` must be one character. Received: delimiter={self.delimiter!r}"
            )


def split_csv(options: CsvSplitOptions) -> dict[str, int]:
    """Writes the split; returns the row counts (`train`, `dev`) and `texts` written."""
    with open(options.input, encoding="utf-8", newline="") as file:
        rows = list(csv.reader(file, delimiter=options.delimiter))
    if len(rows) < 3:
        raise ValueError(
            "`input` must hold a header and at least two rows. "
            f"Received: input={options.input!r} ({len(rows)} lines)"
        )
    header, rows = rows[0], rows[1:]
    column = None
    if options.text_column is not None:
        if options.text_column not in header:
            raise ValueError(
                f"`text_column` must be a column of {options.input!r} ({header}). "
                f"Received: text_column={options.text_column!r}"
            )
        column = header.index(options.text_column)
    order = list(range(len(rows)))
    random.Random(options.seed).shuffle(order)
    num_dev = min(max(1, round(len(rows) * options.dev_fraction)), len(rows) - 1)
    dev = set(order[:num_dev])
    os.makedirs(options.output_dir, exist_ok=True)
    for name, keep in (("train", lambda i: i not in dev), ("dev", lambda i: i in dev)):
        path = os.path.join(options.output_dir, f"{name}.csv")
        with open(path, "w", encoding="utf-8", newline="") as file:
            writer = csv.writer(file, delimiter=options.delimiter, lineterminator="\n")
            writer.writerow(header)
            writer.writerows(row for i, row in enumerate(rows) if keep(i))
    counts = {"train": len(rows) - num_dev, "dev": num_dev, "texts": 0}
    if column is not None:
        texts = [
            " ".join(row[column].split())
            for i, row in enumerate(rows)
            if i not in dev and column < len(row) and row[column].strip()
        ]
        path = os.path.join(options.output_dir, "train.txt")
        with open(path, "w", encoding="utf-8") as file:
            file.write("\n\n".join(texts) + "\n")
        counts["texts"] = len(texts)
    return counts
