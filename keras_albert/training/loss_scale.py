"""float16's dynamic loss scaling, for the one training loop under every strategy.

Keras's `LossScaleOptimizer` scales the loss (`scale_loss`), divides the gradients by the
scale, lets the wrapped optimizer sum them over replicas and clip the sum (our `Lamb` and
`AdamW`: `training.clipping`), skips a step whose gradients are not finite (no variable, slot
or step counter changes) and halves the scale, and doubles it after `dynamic_growth_steps`
finite steps in a row. What it lacks under `tf.distribute` is one decision for all replicas:
it checks each replica's own partial gradient (and, where the strategy needs a merge call,
takes the first replica's answer), so a non-finite gradient on another replica would reach
the summed gradient and the weights. `DynamicLossScale` makes the check global: a step is
skipped on every replica when any replica's gradient is not finite.

The loop counts skipped steps (`skipped_steps` among its sums). The checkpoints hold the
wrapped optimizer only (`checkpointed_optimizer`), so a run resumes in another precision; a
float16 run that resumes starts again from `initial_scale`, which the first steps lower to
where it stood (one skipped step per halving).
"""

from __future__ import annotations

import keras
import tensorflow as tf


@keras.saving.register_keras_serializable(package="keras_albert")
class DynamicLossScale(keras.optimizers.LossScaleOptimizer):
    """`keras.optimizers.LossScaleOptimizer` whose finiteness check covers every replica.

    Args:
        inner_optimizer: the optimizer that applies the unscaled gradients.
        initial_scale: the first loss scale. Defaults to `2.0**15`.
        dynamic_growth_steps: finite steps in a row after which the scale doubles. Defaults
            to `2000`.

    Example:

    >>> import keras
    >>> import tensorflow as tf
    >>> from keras_albert.training.clipping import AdamW
    >>> from keras_albert.training.loss_scale import DynamicLossScale
    >>> optimizer = DynamicLossScale(AdamW(1e-3), initial_scale=8.0, dynamic_growth_steps=2)
    >>> variable = keras.Variable([1.0, 2.0])
    >>> optimizer.build([variable])
    >>> optimizer.apply([tf.constant([float("inf"), 1.0])], [variable])
    >>> float(optimizer.dynamic_scale.numpy()), variable.numpy().tolist()
    (4.0, [1.0, 2.0])
    """

    def check_finite(self, grads):
        finite = super().check_finite(grads)
        context = tf.distribute.get_replica_context()
        if context is None or context.num_replicas_in_sync == 1:
            return finite
        # Under `strategy.run`: the same answer on every replica (and every worker).
        non_finite = context.all_reduce(
            tf.distribute.ReduceOp.SUM, tf.cast(tf.logical_not(finite), tf.float32)
        )
        return tf.equal(non_finite, 0.0)


def optimizer_for_precision(
    optimizer: keras.optimizers.Optimizer,
    policy: str,
    initial_scale: float = 2.0**15,
    dynamic_growth_steps: int = 2000,
) -> keras.optimizers.Optimizer:
    """`optimizer` wrapped in `DynamicLossScale` under `"mixed_float16"`; itself otherwise
    (float32 and bfloat16 have float32's exponent range: no scaling)."""
    if policy != "mixed_float16":
        return optimizer
    return DynamicLossScale(
        optimizer, initial_scale=initial_scale, dynamic_growth_steps=dynamic_growth_steps
    )


def checkpointed_optimizer(optimizer: keras.optimizers.Optimizer) -> keras.optimizers.Optimizer:
    """What a checkpoint holds of `optimizer`: the wrapped optimizer of a loss-scaling one, so
    that checkpoints do not depend on the precision."""
    return getattr(optimizer, "inner_optimizer", optimizer)
