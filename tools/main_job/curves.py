"""The main job's curves: pretraining and fine-tuning histories as one PNG."""

import csv
import os

from main_job.options import MainJobOptions


def _read_history(path: str) -> list[dict]:
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as f:
        return list(csv.DictReader(f))


def plot_curves(options: MainJobOptions, reference_lines: tuple = ()) -> str:
    """A PNG of the pretraining and fine-tuning curves; returns its path.

    `reference_lines`: `(value, label)` pairs drawn across the pretraining accuracy panel.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pretraining = _read_history(options.path("pretraining", "model", "history.csv"))
    finetuning = _read_history(options.path("finetuning", "sst2", "history.csv"))
    panels = [
        (pretraining, "step", ("mlm_loss", "sop_loss"), "pretraining losses"),
        (pretraining, "step", ("mlm_accuracy", "sop_accuracy"), "pretraining accuracy"),
        (finetuning, "epoch", ("loss", "accuracy"), "SST-2 fine-tuning"),
    ]
    panels = [panel for panel in panels if panel[0]] or panels[:1]  # steps not run: no panel
    figure, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 4), squeeze=False)
    for axis, (rows, x_name, names, title) in zip(axes[0], panels, strict=True):
        for name in names:
            for prefix, style in (("", ".-"), ("val_", "o--")):
                points = [
                    (float(row[x_name]), float(row[prefix + name]))
                    for row in rows
                    if row.get(prefix + name) not in (None, "", "NA")  # NA: no evaluation then
                ]
                if points:
                    label = ("held-out " if prefix else "train ") + name
                    axis.plot(*zip(*points, strict=True), style, label=label)
        if title == "pretraining accuracy":
            for value, label in reference_lines:
                axis.axhline(value, ls=":", color="gray", label=label)
        axis.set_title(title)
        axis.set_xlabel(x_name)
        if axis.get_legend_handles_labels()[0]:
            axis.legend(fontsize=7)
    figure.tight_layout()
    path = options.path("curves.png")
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return path
