"""The main job's curves as one PNG: pretraining (losses; held-out MLM and SOP accuracy vs
steps) beside SST-2 fine-tuning from the pretraining checkpoint and from scratch."""

import csv
import os

from .options import MainJobOptions


def pyplot():
    """matplotlib's pyplot on the file-only backend (no display on the machines it runs on)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_png(figure, path: str) -> str:
    """`figure` laid out and written to `path` under a temporary name, then renamed (never a
    half-written plot), then closed; returns `path`."""
    figure.tight_layout()
    figure.savefig(f"{path}.incomplete.png", dpi=100)
    pyplot().close(figure)
    os.replace(f"{path}.incomplete.png", path)
    return path


def _read_history(path: str) -> list[dict]:
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _finetuning_history(directory: str) -> list[dict]:
    """The run's history rows (one per evaluation, with its `step`)."""
    return _read_history(os.path.join(directory, "history.csv"))


def _points(rows: list[dict], x_name: str, y_name: str) -> list[tuple[float, float]]:
    return [
        (float(row[x_name]), float(row[y_name]))
        for row in rows
        if row.get(y_name) not in (None, "", "NA")  # NA: no evaluation then
    ]


def plot_curves(options: MainJobOptions, reference_lines: tuple = ()) -> str:
    """A PNG of the pretraining and fine-tuning curves; returns its path.

    `reference_lines`: `(value, label)` pairs drawn across the pretraining accuracy panel.
    """
    plt = pyplot()
    pretraining = _read_history(options.path("pretraining", "model", "history.csv"))
    finetuning = {
        "from pretraining": _finetuning_history(options.finetuning_dir(from_scratch=False)),
        "from scratch": _finetuning_history(options.finetuning_dir(from_scratch=True)),
    }
    # (title, [(label, rows, column, style)], reference lines)
    panels = [
        (
            "pretraining losses",
            [
                (f"{prefix}{name}", pretraining, f"{column_prefix}{name}", style)
                for name in ("mlm_loss", "sop_loss")
                for prefix, column_prefix, style in (
                    ("train ", "", ".-"),
                    ("held-out ", "val_", "o--"),
                )
            ],
            (),
        ),
        (
            "pretraining, held-out accuracy",
            [
                ("held-out MLM accuracy", pretraining, "val_mlm_accuracy", "o-"),
                ("held-out SOP accuracy", pretraining, "val_sop_accuracy", "s-"),
            ],
            reference_lines,
        ),
        (
            "SST-2 dev accuracy",
            [(name, rows, "val_accuracy", "o-") for name, rows in finetuning.items()],
            (),
        ),
        (
            "SST-2 training loss",
            [(name, rows, "loss", "o-") for name, rows in finetuning.items()],
            (),
        ),
    ]
    figure, axes = plt.subplots(1, len(panels), figsize=(4.5 * len(panels), 4), squeeze=False)
    for axis, (title, curves, references) in zip(axes[0], panels, strict=True):
        for label, rows, column, style in curves:
            points = _points(rows, "step", column)
            if points:
                axis.plot(*zip(*points, strict=True), style, label=label)
        for value, label in references:
            axis.axhline(value, ls=":", color="gray", label=label)
        axis.set_title(title)
        axis.set_xlabel("step")
        if axis.get_legend_handles_labels()[0]:
            axis.legend(fontsize=7)
        else:  # the step has not run (yet)
            axis.text(0.5, 0.5, "not run", ha="center", va="center", transform=axis.transAxes)
    return save_png(figure, options.path("curves.png"))
