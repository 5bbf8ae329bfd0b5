"""MLM + SOP in the two forms a pretrainer trains with: `pretraining_replica_fn`, the training
loop's `replica_fn` (this replica's share of the global batch's loss, normalized by the global
counts so that it does not depend on how the batch is split, and the sums the logs are made
of), and `compile_pretrainer`, the same losses and Keras's metrics for `model.fit` and for what
`pretrainer.keras` carries (on every Keras backend). The losses themselves are
`keras_albert.pretraining.losses`; the pretraining driver (`keras_albert.pretraining.driver`)
uses both.
"""

from __future__ import annotations

import keras

from keras_albert.models import AlbertPretrainer
from keras_albert.pretraining.losses import (
    MaskedLMLoss,
    pretraining_loss,
    pretraining_sums,
    sentence_order_loss,
)


def pretraining_replica_fn(sentence_order_loss_weight: float = 1.0):
    """The loop's `replica_fn` for MLM + SOP: this replica's share of the global batch's loss
    (normalized by the global counts, `losses.pretraining_loss`) and its sums."""
    # The loop is TensorFlow's (`tf.distribute`): imported here, so that `compile_pretrainer`
    # runs on every Keras backend.
    from keras_albert.training.loop import global_sum

    def replica_fn(model, batch, training):
        x, labels, weights = batch
        outputs = model(x, training=training)
        sums = pretraining_sums(labels, outputs, weights)
        totals = {key: global_sum(sums[key]) for key in ("mlm_weight", "sop_weight")}
        return pretraining_loss(sums, totals, sentence_order_loss_weight), sums

    return replica_fn


def compile_pretrainer(
    model: AlbertPretrainer,
    optimizer: keras.optimizers.Optimizer,
    steps_per_execution: int = 1,
    jit_compile: bool | str = "auto",
    sentence_order_loss_weight: float = 1.0,
) -> None:
    """Compiles `model` with the MLM + SOP losses and the pretraining metrics.

    The total loss is `masked_lm_loss + sentence_order_loss_weight * sentence_order_loss`
    (`MaskedLMLoss`, mean SOP cross-entropy; the original's weight is 1). Logged: `loss`,
    Keras's `mlm_logits_loss` / `sop_logits_loss`, and the metrics the driver reports as
    `mlm_loss` / `sop_loss` / `mlm_accuracy` / `sop_accuracy` (`keras_albert.training.logs`):
    `mlm_logits_mlm_mean_loss` and `sop_logits_sop_mean_loss` (the task losses as exact
    weighted means over everything seen, as the original's evaluation: batches of any size
    count by their examples, padded prediction slots not at all), `mlm_logits_mlm_accuracy`
    and `sop_logits_sop_accuracy`. Labels and sample weights are dicts keyed by `mlm_logits`
    and `sop_logits`.
    """
    model.compile(
        optimizer=optimizer,
        loss={"mlm_logits": MaskedLMLoss(), "sop_logits": sentence_order_loss()},
        loss_weights={"mlm_logits": 1.0, "sop_logits": sentence_order_loss_weight},
        weighted_metrics={
            task: [
                keras.metrics.SparseCategoricalCrossentropy(
                    from_logits=True, name=f"{name}_mean_loss"
                ),
                keras.metrics.SparseCategoricalAccuracy(name=f"{name}_accuracy"),
            ]
            for task, name in (("mlm_logits", "mlm"), ("sop_logits", "sop"))
        },
        steps_per_execution=steps_per_execution,
        jit_compile=jit_compile,
    )
