"""Trains a small Keras model through `TrainingLoop` with `DynamicLossScale` under one strategy,
in its own process, one replica's gradient made infinite at one step.

Run by test_loss_scale.py as

    python loss_scale_run.py STRATEGY OUTPUT.json [--logical-cpus N]

(logical devices must be in place before TensorFlow initializes). Step `POISONED_STEP` of
`NUM_STEPS`: the LAST replica's share of the batch carries a weight of infinity (one device:
its whole batch), so only that replica's gradient is not finite. Writes, per step, the
optimizer step, the loss scale, the skipped-step count the loop reports, whether every
variable is finite, and the largest change of any variable.
"""

import argparse
import json
import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from keras_albert.training.lamb import Lamb  # noqa: E402
from keras_albert.training.loop import TrainingLoop, global_sum, replica_share  # noqa: E402
from keras_albert.training.loss_scale import optimizer_for_precision  # noqa: E402
from tests.helpers import subprocess_strategy  # noqa: E402

GLOBAL_BATCH_SIZE = 8
NUM_STEPS = 6
POISONED_STEP = 2  # 0-based
GROWTH_STEPS = 2
INITIAL_SCALE = 1024.0


def batches(num_replicas: int) -> tf.data.Dataset:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((NUM_STEPS, GLOBAL_BATCH_SIZE, 4)).astype("float32")
    y = x.sum(-1, keepdims=True)
    weight = np.ones((NUM_STEPS, GLOBAL_BATCH_SIZE, 1), "float32")
    share = GLOBAL_BATCH_SIZE // num_replicas
    weight[POISONED_STEP, -share:] = np.inf  # the last replica's rows
    return tf.data.Dataset.from_tensor_slices((x, y, weight))


def replica_fn(model, batch, training):
    x, y, weight = batch
    errors = tf.square(tf.cast(model(x, training=training), tf.float32) - y)
    # inf * 0 on purpose nowhere: the poisoned rows' errors are positive, their loss infinite.
    total = tf.reduce_sum(weight * (errors + 1e-3))
    return total / global_sum(tf.cast(tf.size(errors), tf.float32)), {}


def main():
    args, strategy = subprocess_strategy(argparse.ArgumentParser())
    replicas = strategy.num_replicas_in_sync
    with strategy.scope():
        model = keras.Sequential(
            [keras.Input((4,)), keras.layers.Dense(8, activation="relu"), keras.layers.Dense(1)],
        )
        optimizer = optimizer_for_precision(
            Lamb(1e-2), "mixed_float16", initial_scale=INITIAL_SCALE,
            dynamic_growth_steps=GROWTH_STEPS,
        )  # fmt: skip
        optimizer.build(model.trainable_variables)
    loop = TrainingLoop(strategy, model, optimizer, replica_fn)
    iterator = loop.iterator(lambda context: replica_share(batches(replicas), 8, context))
    rows = []
    for _ in range(NUM_STEPS):
        before = [v.numpy() for v in model.trainable_variables]
        sums = loop.train(iterator, 1)
        after = [v.numpy() for v in model.trainable_variables]
        rows.append(
            {
                "step": int(optimizer.iterations.numpy()),
                "scale": float(optimizer.dynamic_scale.numpy()),
                "skipped_steps": sums["skipped_steps"],
                "finite": bool(all(np.isfinite(v).all() for v in after)),
                "change": max(
                    float(np.abs(a - b).max()) for a, b in zip(after, before, strict=True)
                ),
            }
        )
    with open(args.output, "w") as file:
        json.dump({"num_replicas": replicas, "rows": rows}, file)


if __name__ == "__main__":
    main()
