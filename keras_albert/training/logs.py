"""Keras's log and metric names → ours, for history rows, TensorBoard and summaries.

The losses logged per pretraining task are the exact weighted means of the `*_mean_loss`
metrics (the original's eval metrics: `tf.metrics.mean(loss, weights)`), not Keras's per-output
loss trackers, which average batches equally whatever their size; those are dropped.
"""

from __future__ import annotations

import numpy as np

# `compile_pretrainer`'s metric names (output name + metric name) → ours.
_LOG_NAMES = {
    "mlm_logits_mlm_mean_loss": "mlm_loss",
    "sop_logits_sop_mean_loss": "sop_loss",
    "mlm_logits_mlm_accuracy": "mlm_accuracy",
    "sop_logits_sop_accuracy": "sop_accuracy",
}
_DROPPED_LOGS = ("mlm_logits_loss", "sop_logits_loss")


def with_our_names(logs: dict) -> dict:
    """Keras's logs (`val_` ones too) under our names, without Keras's per-output losses."""
    renamed = {}
    for key, value in logs.items():
        prefix = "val_" if key.startswith("val_") else ""
        keras_name = key.removeprefix(prefix)
        if keras_name not in _DROPPED_LOGS:
            renamed[prefix + _LOG_NAMES.get(keras_name, keras_name)] = value
    return renamed


def as_floats(logs: dict) -> dict:
    """`with_our_names`, each value a Python float (for JSON)."""
    return {key: float(np.asarray(value)) for key, value in with_our_names(logs).items()}
