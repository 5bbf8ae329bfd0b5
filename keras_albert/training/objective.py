"""A task's training objective — what `model.compile` takes as `loss`, `loss_weights` and
`metrics` — as the training loop's `replica_fn`, and the train logs from the loop's sums.

One objective serves both ways of training a task model: `compile_kwargs()` for users who call
`model.fit` themselves, `replica_fn` for `keras_albert.training.loop.TrainingLoop`, which the
fine-tuning driver runs under every strategy.

The loss is the global batch's mean, whatever the number of replicas: each replica sums its
per-element losses (the loss object with `reduction="none"`) and divides by the element count
of the WHOLE global batch (`loop.global_sum`; with `ignore_class`, the labeled elements only,
e.g. NER's first pieces), so the replicas' shares sum to what one device computes for the
global batch (equal to Keras's `sum_over_batch_size` mean on one device; Keras's own `fit`
under a strategy averages the replicas' means instead, which differs when they hold different
numbers of labeled tokens).
The metrics are Keras metrics run without state (`stateless_update_state` from zeros each
step): their variables are sums (totals and counts), which the loop adds up over replicas and
steps, and `logs` turns into results with `stateless_result`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import keras
import numpy as np
import tensorflow as tf

from keras_albert.training.loop import global_sum


class Objective:
    """Loss, loss weights and train metrics of a task model.

    Args:
        loss: a `keras.losses.Loss`, or a dict of them keyed by output name (multi-output
            models: the outputs without a loss take no part).
        loss_weights: with a dict `loss`, a weight per output (default 1).
        metrics: Keras metrics of the (single) output, or a dict of lists keyed by output name;
            their state must add up (means, accuracies, counts: every built-in mean metric).

    Example:

        objective = Objective(keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                              metrics=[keras.metrics.SparseCategoricalAccuracy("accuracy")])
        model.compile(optimizer, **objective.compile_kwargs())           # for model.fit
        loop = TrainingLoop(strategy, model, optimizer, objective.replica_fn)
        logs = objective.logs(loop.train(iterator, 100), 100)  # {"loss": ..., "accuracy": ...}
    """

    def __init__(
        self,
        loss: keras.losses.Loss | Mapping[str, keras.losses.Loss],
        loss_weights: Mapping[str, float] | None = None,
        metrics: Sequence[keras.metrics.Metric] | Mapping[str, Sequence] | None = None,
    ):
        if loss_weights is not None and not isinstance(loss, Mapping):
            raise ValueError(
                "`loss_weights` must be given only with a dict `loss` (one weight per output). "
                f"Received: loss_weights={dict(loss_weights)!r}"
            )
        self.loss = loss
        self.loss_weights = dict(loss_weights or {})
        if metrics is None:
            self.metrics: dict[str | None, list] = {}
        elif isinstance(metrics, Mapping):
            self.metrics = {output: list(items) for output, items in metrics.items() if items}
        else:
            self.metrics = {None: list(metrics)} if metrics else {}
        # Each loss without reduction (its elements' losses), and its ignored label if any.
        losses = loss.values() if isinstance(loss, Mapping) else [loss]
        self._unreduced = {id(fn): _unreduced(fn) for fn in losses}
        # The metrics' zero state (read once, eagerly), and one log name per metric.
        self._named_metrics = []
        for output, items in self.metrics.items():
            for metric in items:
                name = metric.name if output is None else f"{output}_{metric.name}"
                zeros = [np.zeros(v.shape, v.dtype) for v in metric.variables]
                if any(z.shape != () for z in zeros):
                    raise ValueError(
                        f"`metrics` must keep scalar state (sums and counts). Received: "
                        f"{name} with variables of shapes {[z.shape for z in zeros]}"
                    )
                self._named_metrics.append((name, output, metric, zeros))

    @property
    def names(self) -> tuple[str, ...]:
        """The names `logs` returns: `loss`, then the metrics'."""
        return ("loss", *(name for name, *_ in self._named_metrics))

    def compile_kwargs(self) -> dict:
        """`loss`, `loss_weights` and `metrics` for `model.compile`."""
        kwargs: dict = {"loss": self.loss}
        if self.loss_weights:
            kwargs["loss_weights"] = self.loss_weights
        if self.metrics:
            kwargs["metrics"] = self.metrics.get(None) or {
                output: items for output, items in self.metrics.items()
            }
        return kwargs

    def replica_fn(self, model: keras.Model, batch, training: bool) -> tuple[tf.Tensor, dict]:
        """The loop's `replica_fn`: this replica's share of the loss, and the metrics' state."""
        x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(batch)
        y_pred = model(x, training=training)
        if isinstance(self.loss, Mapping):
            loss = tf.add_n(
                [
                    self.loss_weights.get(output, 1.0)
                    * self.loss_share(loss_fn, y[output], y_pred[output],
                                      _select(sample_weight, output))
                    for output, loss_fn in self.loss.items()
                ]
            )  # fmt: skip
        else:
            loss = self.loss_share(self.loss, y, y_pred, sample_weight)
        sums = {}
        for name, output, metric, zeros in self._named_metrics:
            state = metric.stateless_update_state(
                [tf.constant(z) for z in zeros],
                y if output is None else y[output],
                y_pred if output is None else y_pred[output],
                _select(sample_weight, output),
            )
            for index, value in enumerate(state):
                sums[f"{name}/{index}"] = tf.cast(value, tf.float32)
        return loss, sums

    def loss_share(self, loss_fn, y, y_pred, sample_weight=None) -> tf.Tensor:
        """This replica's share of `loss_fn`'s mean over the global batch (float32)."""
        unreduced, ignore_class = self._unreduced[id(loss_fn)]
        values = tf.cast(unreduced(y, y_pred, sample_weight), tf.float32)
        if ignore_class is None:
            count = tf.cast(tf.size(values), tf.float32)
        else:
            count = tf.reduce_sum(tf.cast(tf.not_equal(tf.cast(y, tf.int32), ignore_class),
                                          tf.float32))  # fmt: skip
        return tf.math.divide_no_nan(tf.reduce_sum(values), global_sum(count))

    def logs(self, sums: dict[str, float], num_steps: int) -> dict[str, float]:
        """`loss` (the mean over the steps) and each metric's result over every example."""
        logs = {"loss": sums["loss"] / num_steps}
        for name, _, metric, zeros in self._named_metrics:
            state = [
                tf.constant(sums[f"{name}/{index}"], dtype=zero.dtype)
                for index, zero in enumerate(zeros)
            ]
            logs[name] = float(metric.stateless_result(state))
        return logs


def _unreduced(loss_fn: keras.losses.Loss):
    """`loss_fn` with `reduction="none"` (same class and settings), and its `ignore_class`."""
    config = loss_fn.get_config()
    return type(loss_fn).from_config({**config, "reduction": "none"}), config.get("ignore_class")


def _select(sample_weight, output):
    if isinstance(sample_weight, Mapping):
        return sample_weight.get(output)
    return sample_weight
