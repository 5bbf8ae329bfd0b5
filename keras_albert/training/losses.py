"""The pretraining losses, as ALBERT's `run_pretraining.py` computes them."""

from __future__ import annotations

import keras
import tensorflow as tf
from keras import ops

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
    predictions).

    Args:
        name: optional name of the loss. Defaults to `"masked_lm_loss"`.
        dtype: dtype of the computation. Defaults to float32 (the logits are float32 under
            every policy).

    Example:

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
    num_replicas = tf.distribute.get_strategy().num_replicas_in_sync
    if num_replicas > 1:
        loss = loss / num_replicas
    return loss


def sentence_order_loss() -> keras.losses.Loss:
    """The SOP loss: the mean cross-entropy over the batch (the original's
    `get_sentence_order_output`), from the `(batch, 2)` logits."""
    return keras.losses.SparseCategoricalCrossentropy(from_logits=True, name="sentence_order_loss")
