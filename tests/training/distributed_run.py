"""Trains a small Keras model with Lamb under one strategy, in its own process.

Run by test_strategy.py as

    python distributed_run.py STRATEGY OUTPUT.npz [--logical-cpus N]
        [--floatx float32 float64] [--loop fit|custom]

because logical devices and TF_CONFIG must be in place before TensorFlow
initializes, which a pytest process has long done. Writes, per floatx, the
final weights and the per-step losses.

`--loop custom` trains with `strategy.run` + `Lamb.apply` instead of
`model.fit`: Keras 3.15 `fit` cannot run under MultiWorkerMirroredStrategy
(keras-team/keras#20585: `_maybe_symbolic_build` reduces a nested PerReplica
batch eagerly and fails; past that, `reduce_per_replica` takes a "mean" over
axis 0 of scalar logs).
"""

import argparse
import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from keras_albert.training.lamb import Lamb  # noqa: E402
from tests.helpers import subprocess_strategy  # noqa: E402

GLOBAL_BATCH_SIZE = 8
NUM_EXAMPLES = 32
EPOCHS = 2


def make_data():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((NUM_EXAMPLES, 4))
    y = x @ rng.standard_normal((4, 1)) + 3.0
    return x.astype(keras.config.floatx()), y.astype(keras.config.floatx())


def make_model():
    """Built and compiled by the caller under the strategy's scope."""
    model = keras.Sequential(
        [
            keras.Input((4,)),
            keras.layers.Dense(8, activation="relu", name="dense"),
            keras.layers.LayerNormalization(name="LayerNorm"),
            keras.layers.Dense(1, name="output"),
        ]
    )
    rng = np.random.default_rng(1)
    # dense kernel, bias; layer norm gamma, beta; output kernel, bias
    model.set_weights(
        [
            rng.standard_normal((4, 8)),
            rng.standard_normal(8) * 0.1,
            np.ones(8),
            np.zeros(8),
            rng.standard_normal((8, 1)),
            np.zeros(1),
        ]
    )
    return model


def make_optimizer():
    # A small clip norm so that clipping acts on every step: it must see the
    # gradient summed over replicas, as one device would.
    return Lamb(learning_rate=0.05, global_clipnorm=0.5)


def train_with_fit(strategy):
    with strategy.scope():
        model = make_model()
        model.compile(make_optimizer(), "mse")
    dataset = tf.data.Dataset.from_tensor_slices(make_data()).batch(GLOBAL_BATCH_SIZE)
    losses = []
    record = keras.callbacks.LambdaCallback(
        on_train_batch_end=lambda batch, logs: losses.append(float(logs["loss"]))
    )
    # Keras logs the running mean over the epoch; equal steps give equal means.
    model.fit(dataset, epochs=EPOCHS, callbacks=[record], verbose=0)
    return model.get_weights(), losses


def train_with_custom_loop(strategy):
    with strategy.scope():
        model = make_model()
        optimizer = make_optimizer()
        optimizer.build(model.trainable_variables)
    dataset = tf.data.Dataset.from_tensor_slices(make_data()).batch(GLOBAL_BATCH_SIZE)
    distributed = strategy.experimental_distribute_dataset(dataset)

    def replica_step(x, y):
        with tf.GradientTape() as tape:
            per_example = keras.losses.mean_squared_error(y, model(x, training=True))
            loss = tf.nn.compute_average_loss(per_example, global_batch_size=GLOBAL_BATCH_SIZE)
        gradients = tape.gradient(loss, model.trainable_variables)
        optimizer.apply(gradients, model.trainable_variables)
        return loss

    @tf.function
    def train_step(batch):
        return strategy.reduce("SUM", strategy.run(replica_step, args=batch), axis=None)

    losses = [float(train_step(batch)) for _ in range(EPOCHS) for batch in distributed]
    return model.get_weights(), losses


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--floatx", nargs="+", default=["float32"])
    parser.add_argument("--loop", choices=("fit", "custom"), default="fit")
    args, strategy = subprocess_strategy(parser)
    train = train_with_fit if args.loop == "fit" else train_with_custom_loop
    results = {"num_replicas": strategy.num_replicas_in_sync}
    for floatx in args.floatx:
        # The dtype policy is fixed at the first layer; floatx alone would not move it.
        keras.config.set_floatx(floatx)
        keras.config.set_dtype_policy(floatx)
        weights, losses = train(strategy)
        results[f"{floatx}/losses"] = np.array(losses)
        results.update({f"{floatx}/weight_{i}": w for i, w in enumerate(weights)})
    np.savez(args.output, **results)


if __name__ == "__main__":
    main()
