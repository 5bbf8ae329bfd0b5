"""What every replica of one strategy draws in training, fed the same inputs: the masks of a
`ReplicaDropout` and the outputs of small models with dropout, in its own process.

Run by test_dropout.py as

    python replica_dropout_run.py STRATEGY OUTPUT.npz [--logical-cpus N]

because logical devices and TF_CONFIG must be in place before TensorFlow initializes. Every
case is built twice from the same seed and called twice (the generators advance in between);
writes `{case}/run{k}/draw{t}/replica{r}` for each replica `r` of this process (its id in the
whole strategy, across workers).
"""

import argparse
import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from keras_albert import AlbertClassifier  # noqa: E402
from keras_albert.layers import ReplicaDropout  # noqa: E402
from tests.helpers import random_inputs, subprocess_strategy, tiny_backbone  # noqa: E402

SEED = 3
INPUTS = random_inputs(batch_size=2)
ONES = np.ones((4, 32), "float32")


def layer_case(jit_compile=False):
    layer = ReplicaDropout(0.5)
    return tf.function(lambda: layer(ONES, training=True), jit_compile=jit_compile)


def backbone_case(**dropouts):
    backbone = tiny_backbone(**dropouts)
    return lambda: backbone(INPUTS, training=True)["sequence_output"]


def classifier_case():
    classifier = AlbertClassifier(tiny_backbone(), num_classes=3, dropout=0.5)
    return lambda: classifier(INPUTS, training=True)


CASES = {
    "layer": layer_case,
    "layer_xla": lambda: layer_case(jit_compile=True),
    "hidden": lambda: backbone_case(dropout=0.1),  # embedding, attention and FFN outputs
    "attention": lambda: backbone_case(attention_dropout=0.1),
    "classifier": classifier_case,
    "no_dropout": backbone_case,
}


def main():
    args, strategy = subprocess_strategy(argparse.ArgumentParser())

    def run(function):
        return strategy.experimental_local_results(tf.function(strategy.run)(function))

    replica_ids = run(lambda: tf.distribute.get_replica_context().replica_id_in_sync_group)
    results = {"num_replicas": strategy.num_replicas_in_sync}
    for name, make in CASES.items():
        if name == "layer_xla" and len(strategy.extended.worker_devices) > 1:
            # XLA cannot reach a variable's copy on another logical CPU of the same process
            # ("tfvariable_on_a_different_device", Keras's Dropout too): one CPU per process.
            continue
        for k in range(2):
            with strategy.scope():
                keras.utils.set_random_seed(SEED)
                function = make()
            for t in range(2):
                outputs = run(function)
                for replica, output in zip(replica_ids, outputs, strict=True):
                    results[f"{name}/run{k}/draw{t}/replica{int(replica)}"] = np.asarray(output)
    np.savez(args.output, **results)


if __name__ == "__main__":
    main()
