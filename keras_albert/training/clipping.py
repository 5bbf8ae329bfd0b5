"""Global-norm clipping of the gradient a single device would see, under any strategy.

Keras 3 clips each replica's partial gradient before the replicas' gradients are summed
(`BaseOptimizer.apply`), so a `tf.distribute` run with `global_clipnorm` clips other vectors
than one device does with the same global batch. `SummedGradientClipping` moves the clipping
after the sum (the TensorFlow backend's `_all_reduce_sum_gradients` hook, which also runs, as
an identity sum, on one device), as the original ALBERT's optimizers clip the global gradient.
"""

from __future__ import annotations

import keras


class SummedGradientClipping:
    """Mixin for a Keras optimizer (put it first among the bases): `clipnorm`,
    `global_clipnorm` and `clipvalue` apply to the gradients summed over replicas."""

    def _clip_gradients(self, grads):
        # Postponed to `_all_reduce_sum_gradients`: here they are still per replica.
        if keras.backend.backend() != "tensorflow":
            return super()._clip_gradients(grads)
        return grads

    def _all_reduce_sum_gradients(self, grads_and_vars):
        # (gradient, variable) pairs, summed over replicas, then clipped.
        grads_and_vars = list(super()._all_reduce_sum_gradients(grads_and_vars))
        grads = super()._clip_gradients([g for g, _ in grads_and_vars])
        return [(g, v) for g, (_, v) in zip(grads, grads_and_vars, strict=True)]


@keras.saving.register_keras_serializable(package="keras_albert")
class AdamW(SummedGradientClipping, keras.optimizers.AdamW):
    """Keras's `AdamW`, clipping the gradient summed over replicas (`SummedGradientClipping`):
    the fine-tuning optimizer, equal on one device and on many."""


def adamw(learning_rate, weight_decay_rate: float = 0.01) -> AdamW:
    """ALBERT's `--optimizer=adamw`: decoupled decay (not on LayerNorm parameters or biases),
    epsilon 1e-6, gradients clipped to global norm 1 after the sum over replicas.

    Keras's AdamW corrects the moments' bias; ALBERT's AdamWeightDecayOptimizer does not.
    """
    optimizer = AdamW(
        learning_rate=learning_rate,
        weight_decay=weight_decay_rate,
        beta_1=0.9,
        beta_2=0.999,
        epsilon=1e-6,
        global_clipnorm=1.0,
    )
    optimizer.exclude_from_weight_decay(var_names=["layer_norm", "LayerNorm", "bias"])
    return optimizer
