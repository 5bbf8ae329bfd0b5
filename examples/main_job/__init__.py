"""The main job (run by `examples/main.py`): Austen novels → tokenizer → pretraining data →
pretrained ALBERT → SST-2 → TF Serving export → served in a fresh process → summary, curves.

A package of the repository's examples, not of the library: it calls `keras_albert`'s public
functions, and `keras_albert` never imports it (an import contract in setup.cfg).
"""

from .curves import plot_curves
from .options import MainJobOptions
from .steps import STEPS, pretraining_options, run_main_job, run_steps

__all__ = [
    "STEPS",
    "MainJobOptions",
    "plot_curves",
    "pretraining_options",
    "run_main_job",
    "run_steps",
]
