"""Dropout whose replicas each draw their own masks."""

import keras

from keras_albert.validation import require_rate

if keras.backend.backend() == "tensorflow":
    import tensorflow as tf  # the replica context of a `tf.distribute` strategy


@keras.saving.register_keras_serializable(package="keras_albert")
class ReplicaDropout(keras.layers.Dropout):
    """`keras.layers.Dropout` (same seed generator, same masks on one replica) whose replicas
    each draw their own masks under a `tf.distribute` strategy.

    Keras draws a dropout mask from a `SeedGenerator`: one state variable, mirrored under a
    strategy, that every replica reads and advances alike. Every replica then drew the same
    masks for its share of the global batch: replica k's rows got the pattern of replica 0's.
    Here each replica folds its id in the strategy (global across workers) into the seed it
    draws (`tf.random.fold_in`, whose documentation gives this very use). The state stays one
    variable that every replica advances alike, so a checkpoint holds it once and a resumed
    run draws the masks it would have drawn (`training.checkpoints`); the replicas' masks are
    independent, each a function of the generator's seed, the number of draws before it and
    the replica id. With one replica (no strategy, `OneDeviceStrategy`) nothing is folded: the
    masks are `keras.layers.Dropout`'s, bit for bit. On JAX and PyTorch it IS
    `keras.layers.Dropout`: `keras.distribution.DataParallel` draws one mask for the global
    batch (an array sharded over the devices), so no two devices share a pattern.

    Args:
        rate: float in [0, 1), the fraction of the inputs set to 0 in training.
        seed: int or None, the generator's initial seed (None: drawn from Python's `random`,
            which `keras.utils.set_random_seed` seeds).
        noise_shape: None only: each mask has the inputs' shape (no dropout of ALBERT's
            shares a mask along an axis).

    Example:
    >>> import keras
    >>> import numpy as np
    >>> from keras_albert.layers.dropout import ReplicaDropout
    >>> layer = ReplicaDropout(0.5, seed=1)
    >>> keras.ops.convert_to_numpy(layer(np.ones((2, 3)), training=False)).tolist()
    [[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]
    """

    def __init__(self, rate, seed=None, noise_shape=None, **kwargs):
        require_rate("rate", rate)
        if noise_shape is not None:
            raise ValueError(f"`noise_shape` must be None. Received: noise_shape={noise_shape!r}")
        super().__init__(rate, seed=seed, **kwargs)

    def call(self, inputs, training=False):
        if keras.backend.backend() != "tensorflow" or not (training and self.rate > 0):
            return super().call(inputs, training=training)
        context = tf.distribute.get_replica_context()  # None in a cross-replica context
        if context is None or context.num_replicas_in_sync == 1:
            return super().call(inputs, training=training)
        # The (2,) int64 state to int32 as Keras's TensorFlow backend casts it for every
        # stateless op (XLA takes int32 seeds only).
        seed = tf.cast(tf.math.floormod(self.seed_generator.next(), tf.int32.max - 1), tf.int32)
        seed = tf.random.fold_in(seed, tf.cast(context.replica_id_in_sync_group, tf.int32))
        return tf.nn.experimental.stateless_dropout(inputs, rate=self.rate, seed=seed)
