"""The pretraining losses, as ALBERT's `run_pretraining.py` computes them."""

from __future__ import annotations

import keras
from keras import ops

if keras.backend.backend() == "tensorflow":
    import tensorflow as tf  # the number of replicas of a `tf.distribute` strategy

# Added to the weight sum, as the original, so that a batch without predictions gives 0.
MASKED_LM_DENOMINATOR_EPSILON = 1e-5


@keras.saving.register_keras_serializable(package="keras_albert")
class MaskedLMLoss(keras.losses.Loss):
    """The masked-LM loss: the weighted mean negative log-likelihood of the masked tokens.

    ```
    loss = sum(w * nll) / (sum(w) + 1e-5)
    ```

    over every prediction slot of the batch, where `nll = -log softmax(logits)[label]` and `w`
    is the slot's weight (1 for a real masked token, 0 for padding). This is the original's
    `get_masked_lm_output` (google-research/albert `run_pretraining.py`), not Keras's
    `"sum_over_batch_size"` reduction, which would divide by every slot, padding included.

    Under a `tf.distribute` strategy each replica normalizes by its own weights and the
    gradients are averaged over replicas (the value is divided by the number of replicas, as
    Keras does for its own losses) — what the original did on a TPU, each core with its own
    share of the batch. It equals the single-device loss of the global batch when every
    replica's share has the same weight sum (e.g. always `max_predictions_per_sequence` real
    predictions). On JAX (`keras.distribution`) the loss is the global batch's, computed once:
    nothing to divide.

    Args:
        name: optional name of the loss. Defaults to `"masked_lm_loss"`.
        dtype: dtype of the computation. Defaults to float32 (the logits are float32 under
            every policy).

    Example:

    >>> import numpy as np
    >>> from keras_albert.pretraining.losses import MaskedLMLoss
    >>> loss = MaskedLMLoss()
    >>> labels = np.array([[1, 0]])
    >>> logits = np.array([[[0.0, 0.0], [5.0, -5.0]]])
    >>> round(float(loss(labels, logits, sample_weight=np.array([[1.0, 0.0]]))), 4)
    0.6931
    """

    def __init__(self, name: str = "masked_lm_loss", dtype=None):
        super().__init__(name=name, reduction="sum", dtype=dtype or "float32")

    def call(self, y_true, y_pred):
        # (batch, num_masked)
        return keras.losses.sparse_categorical_crossentropy(y_true, y_pred, from_logits=True)

    def __call__(self, y_true, y_pred, sample_weight=None):
        with keras.name_scope(self.name):
            y_true = ops.convert_to_tensor(y_true, "int32")
            y_pred = ops.convert_to_tensor(y_pred, self.dtype)
            nll = self.call(y_true, y_pred)
            if sample_weight is None:
                weights = ops.ones_like(nll)
            else:
                weights = ops.reshape(ops.cast(sample_weight, self.dtype), ops.shape(nll))
            loss = ops.sum(weights * nll) / (ops.sum(weights) + MASKED_LM_DENOMINATOR_EPSILON)
            return _scale_for_replicas(loss)

    def get_config(self):
        return {"name": self.name, "dtype": self.dtype}


def _scale_for_replicas(loss):
    """Divides by the number of replicas: summing the replicas' gradients averages them."""
    if keras.backend.backend() != "tensorflow":
        return loss
    num_replicas = tf.distribute.get_strategy().num_replicas_in_sync
    if num_replicas > 1:
        loss = loss / num_replicas
    return loss


def sentence_order_loss() -> keras.losses.Loss:
    """The SOP loss: the mean cross-entropy over the batch (the original's
    `get_sentence_order_output`), from the `(batch, 2)` logits."""
    return keras.losses.SparseCategoricalCrossentropy(from_logits=True, name="sentence_order_loss")


def pretraining_sums(labels: dict, outputs: dict, weights: dict) -> dict:
    """One batch's (or one replica's share's) sums for the MLM + SOP losses and metrics.

    `labels` / `weights` are keyed by the model's outputs (`mlm_logits`, `sop_logits`).
    Returns scalars (float32; float64 with float64 logits): `mlm_nll` (the weighted NLL of
    the real predictions), `mlm_weight` (their weight sum), `mlm_hits` (weighted correct
    argmaxes), and `sop_nll`, `sop_weight`, `sop_hits` likewise over the sequences. Sums add
    up exactly over replicas, steps and batches: the means are ratios of sums, whatever the
    batch sizes.
    """
    sums = {}
    for task, name in (("mlm_logits", "mlm"), ("sop_logits", "sop")):
        # float32 (the logits are float32 under the mixed policies), float64 in float64 runs.
        float64 = keras.backend.standardize_dtype(outputs[task].dtype) == "float64"
        dtype = "float64" if float64 else "float32"
        logits = ops.cast(outputs[task], dtype)
        label = ops.cast(labels[task], "int32")
        weight = ops.cast(weights[task], dtype)
        nll = ops.sparse_categorical_crossentropy(label, logits, from_logits=True)
        hits = ops.cast(ops.equal(ops.cast(ops.argmax(logits, -1), "int32"), label), dtype)
        sums[f"{name}_nll"] = ops.sum(weight * nll)
        sums[f"{name}_weight"] = ops.sum(weight)
        sums[f"{name}_hits"] = ops.sum(weight * hits)
    return sums


def pretraining_loss(sums: dict, global_sums: dict, sentence_order_loss_weight: float = 1.0):
    """This share's part of the global batch's loss: summed over the shares (replicas) it is

    ```
    sum(w * nll_mlm) / (sum(w) + 1e-5) + sentence_order_loss_weight * mean(nll_sop)
    ```

    over the whole global batch (`global_sums`: the weight sums of every share), the
    original's formula on the global batch. A replica thus weights its predictions by the
    global count of real predictions, not its own: the result does not depend on how the
    batch is split (the original on a TPU normalized per core, which `MaskedLMLoss` keeps
    for `model.fit`).
    """
    mlm = sums["mlm_nll"] / (global_sums["mlm_weight"] + MASKED_LM_DENOMINATOR_EPSILON)
    sop = sums["sop_nll"] / ops.maximum(global_sums["sop_weight"], 1.0)
    return mlm + sentence_order_loss_weight * sop


def pretraining_logs(sums: dict, sentence_order_loss_weight: float = 1.0) -> dict:
    """Means from `pretraining_sums` added up over steps or batches: `mlm_loss`,
    `mlm_accuracy`, `sop_loss`, `sop_accuracy` and their `loss` (the evaluation's total)."""
    logs = {}
    for name in ("mlm", "sop"):
        count = max(sums[f"{name}_weight"], 1e-12)
        logs[f"{name}_loss"] = sums[f"{name}_nll"] / count
        logs[f"{name}_accuracy"] = sums[f"{name}_hits"] / count
    logs["loss"] = logs["mlm_loss"] + sentence_order_loss_weight * logs["sop_loss"]
    return logs
