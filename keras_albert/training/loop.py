"""One training loop for every `tf.distribute` strategy `build_strategy` makes.

One device, `MirroredStrategy`, `MultiWorkerMirroredStrategy` and `TPUStrategy` take the same
path: the input comes from `strategy.distribute_datasets_from_function` (the dataset function
gets the `tf.distribute.InputContext`), a compiled function runs `steps_per_execution` steps
per call (`tf.function`, each replica's step optionally XLA-compiled) through `strategy.run`,
and what the steps report is reduced with `strategy.reduce(SUM, ..., axis=None)`.

The task says what one replica does with its share of a batch (`replica_fn`): it returns its
share of the global loss — the replicas' values SUM to the loss of the global batch, so the
gradients the optimizer sums over replicas are the global batch's (`global_sum` gives a
replica the global normalizer, e.g. the number of real predictions of the whole batch) — and
a flat dict of float sums (loss numerators, counts, hits) the loop adds up over replicas and
steps. The optimizer's `apply` sums the gradients over replicas (our `Lamb` and `AdamW` clip
after that sum, as one device would: `training.clipping`).

Keras's `model.fit` stays what users call on the plain Keras models; this loop is what the
drivers use, because Keras 3.15's `fit` cannot run under `MultiWorkerMirroredStrategy`
(keras-team/keras#20585).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import keras
import numpy as np
import tensorflow as tf

ReplicaFn = Callable[[keras.Model, object, bool], tuple[tf.Tensor, dict]]


def global_sum(value: tf.Tensor) -> tf.Tensor:
    """Inside `replica_fn`: `value` summed over every replica of the step (all workers)."""
    context = tf.distribute.get_replica_context()
    if context is None:  # called outside `strategy.run`: one replica
        return value
    return context.all_reduce(tf.distribute.ReduceOp.SUM, value)


def replica_share(
    dataset: tf.data.Dataset, global_batch_size: int, input_context: tf.distribute.InputContext
) -> tf.data.Dataset:
    """A dataset of global batches → this input pipeline's replicas' shares of each.

    Replica `r` (of `R`) gets rows `[r * b, (r + 1) * b)` of every global batch, `b = B / R`,
    whatever the number of workers: the replicas together see exactly the global batches a
    single device would, so results do not depend on the topology and a run may resume on
    another one. Each pipeline reads the whole stream (and keeps its share). A short last
    batch (evaluation) gives shorter, possibly empty, shares: every replica still gets one
    element per global batch, so every worker runs the same number of steps.
    """
    replicas = input_context.num_replicas_in_sync
    if replicas == 1:
        return dataset
    per_replica = input_context.get_per_replica_batch_size(global_batch_size)
    local = replicas // input_context.num_input_pipelines
    first = input_context.input_pipeline_id * local

    def shares(*batch):
        parts = None
        for j in range(local):
            start = (first + j) * per_replica
            share = tf.nest.map_structure(lambda t, s=start: t[s : s + per_replica], batch)
            part = tf.data.Dataset.from_tensors(share if len(share) > 1 else share[0])
            parts = part if parts is None else parts.concatenate(part)
        return parts

    return dataset.flat_map(shares)


class TrainingLoop:
    """Compiled, distributed train and evaluation steps for one model.

    Args:
        strategy: the strategy the model and the optimizer were built under.
        model: a Keras model (built under `strategy.scope()`).
        optimizer: its optimizer (built on `model.trainable_variables`); a
            `keras.optimizers.LossScaleOptimizer` (`training.loss_scale.DynamicLossScale`)
            scales the loss, and the sums then count the steps it skipped (`skipped_steps`).
        replica_fn: `(model, batch, training) -> (loss, sums)`: this replica's share of the
            global loss, and a dict of float32 scalars to add up (see the module doc).
        steps_per_execution: the most steps one call of the compiled function runs.
        jit_compile: XLA-compile each replica's train step.

    Example:

        loop = TrainingLoop(strategy, model, optimizer, replica_fn)
        iterator = loop.iterator(lambda context: make_dataset(context))
        sums = loop.train(iterator, 10)  # 10 steps; numpy float64 sums over them
    """

    def __init__(
        self,
        strategy: tf.distribute.Strategy,
        model: keras.Model,
        optimizer: keras.optimizers.Optimizer,
        replica_fn: ReplicaFn,
        steps_per_execution: int = 1,
        jit_compile: bool = False,
    ):
        self.strategy = strategy
        self.model = model
        self.optimizer = optimizer
        self.replica_fn = replica_fn
        self.steps_per_execution = int(steps_per_execution)
        self.jit_compile = bool(jit_compile)
        self._keys: tuple[str, ...] | None = None
        self._train_function = None
        self._eval_function = None

    # --- Input ---

    def iterator(self, dataset_fn: Callable[[tf.distribute.InputContext], tf.data.Dataset]):
        """An iterator over `strategy.distribute_datasets_from_function(dataset_fn)`."""
        return iter(self.distribute(dataset_fn))

    def distribute(self, dataset_fn):
        return self.strategy.distribute_datasets_from_function(dataset_fn)

    # --- Steps ---

    def _flatten(self, loss, sums) -> tf.Tensor:
        """`loss` then the sums (sorted keys) as one vector (float32, or float64 if one of
        them is): one reduction per step."""
        keys = tuple(sorted(sums))
        if self._keys is None:
            self._keys = keys
        elif keys != self._keys:
            raise ValueError(f"`replica_fn` returned other sums: {keys} after {self._keys}")
        values = [loss] + [sums[key] for key in keys]
        dtype = tf.float64 if any(v.dtype == tf.float64 for v in values) else tf.float32
        return tf.stack([tf.cast(tf.reshape(v, []), dtype) for v in values])

    def _replica_train_step(self, batch):
        model, optimizer = self.model, self.optimizer
        with tf.GradientTape() as tape:
            loss, sums = self.replica_fn(model, batch, True)
            if model.losses:  # regularizers: the replicas' shares sum to them once
                loss = loss + tf.add_n(model.losses) / self.strategy.num_replicas_in_sync
            scaling = isinstance(optimizer, keras.optimizers.LossScaleOptimizer)
            scaled = optimizer.scale_loss(loss) if scaling else loss
        variables = model.trainable_variables
        gradients = tape.gradient(scaled, variables)
        if scaling:
            step_before = tf.identity(optimizer.iterations)
        optimizer.apply(gradients, variables)
        if scaling:  # a step with non-finite gradients left the step counter where it was
            skipped = tf.cast(tf.equal(optimizer.iterations, step_before), tf.float32)
            sums = {**sums, "skipped_steps": skipped / self.strategy.num_replicas_in_sync}
        return self._flatten(loss, sums)

    def _replica_eval_step(self, batch):
        loss, sums = self.replica_fn(self.model, batch, False)
        return self._flatten(loss, sums)

    def _make_train_function(self):
        strategy = self.strategy
        replica_step = tf.function(self._replica_train_step, jit_compile=self.jit_compile)

        def one_step(iterator):
            values = strategy.run(replica_step, args=(next(iterator),))
            return strategy.reduce(tf.distribute.ReduceOp.SUM, values, axis=None)

        @tf.function
        def train_function(iterator, num_steps):
            totals = one_step(iterator)
            for _ in tf.range(num_steps - 1):
                totals = totals + one_step(iterator)
            return totals

        return train_function

    def train(self, iterator, num_steps: int) -> dict[str, float]:
        """Runs `num_steps` optimizer steps, `steps_per_execution` per compiled call.

        Returns the sums over the steps (float64): `loss` (of the per-step global losses)
        and each of `replica_fn`'s sums, added over replicas.
        """
        if self._train_function is None:
            self._train_function = self._make_train_function()
        totals = None
        done = 0
        while done < num_steps:
            count = min(self.steps_per_execution, num_steps - done)
            values = self._train_function(iterator, tf.constant(count, tf.int32))
            values = np.asarray(values, np.float64)
            totals = values if totals is None else totals + values
            done += count
        return self._named(totals)

    def evaluate(self, dataset_fn) -> dict[str, float]:
        """One pass over `strategy.distribute_datasets_from_function(dataset_fn)`: the sums
        over every batch (`loss` is the sum of the batches' losses)."""
        if self._eval_function is None:
            strategy = self.strategy

            @tf.function(reduce_retracing=True)  # a short last batch: one more trace at most
            def eval_function(batch):
                values = strategy.run(self._replica_eval_step, args=(batch,))
                return strategy.reduce(tf.distribute.ReduceOp.SUM, values, axis=None)

            self._eval_function = eval_function
        totals, batches = None, 0
        for batch in self.distribute(dataset_fn):
            values = np.asarray(self._eval_function(batch), np.float64)
            totals = values if totals is None else totals + values
            batches += 1
        if totals is None:
            raise ValueError("The evaluation dataset is empty.")
        return {**self._named(totals), "batches": float(batches)}

    def _named(self, totals: np.ndarray) -> dict[str, float]:
        return dict(zip(("loss", *self._keys), (float(v) for v in totals), strict=True))


def run_callbacks(callbacks: Iterable, method: str, *args) -> None:
    """Calls `method(*args)` on each callback that has it."""
    for callback in callbacks:
        function = getattr(callback, method, None)
        if function is not None:
            function(*args)
