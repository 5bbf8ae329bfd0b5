"""What a training step could reach on this machine: the measured GEMM roof per dtype and the
FLOPs of an ALBERT training step, shared by the precision benchmarks.

`gemm_roof` times TensorFlow's own matrix multiply at the shapes that dominate ALBERT-base
(tokens × 768 by 768 × 3072), so "fraction of the roof" compares a step with what TensorFlow's
kernels reach on the same device, not with a datasheet. `training_flops_per_sequence` counts
the multiply-adds of forward + backward (3 × forward: two matrix multiplies back for each one
forward) of every encoder pass (the shared block counts each time it runs), the attention
products, the embedding projection and the heads.
"""

import time


def gemm_roof(dtype: str = "float32", device: str = "/CPU:0", rows: int = 1024,
              inner: int = 768, columns: int = 3072, seconds: float = 1.0) -> float:  # fmt: skip
    """GFLOP/s of `tf.matmul` of (rows × inner) by (inner × columns) in `dtype` on `device`,
    XLA-free, best of three timed stretches of about `seconds / 3` each."""
    import tensorflow as tf  # here: the FLOP count below also serves machines without TensorFlow

    with tf.device(device):
        a = tf.cast(tf.random.stateless_normal((rows, inner), (1, 2)), dtype)
        b = tf.cast(tf.random.stateless_normal((inner, columns), (3, 4)), dtype)
        matmul = tf.function(lambda x, y: tf.reduce_sum(tf.cast(tf.matmul(x, y)[0, :1], "float32")))
        float(matmul(a, b))  # trace, allocate
        flops = 2.0 * rows * inner * columns
        best = 0.0
        for _ in range(3):
            count, start = 0, time.perf_counter()
            while time.perf_counter() - start < seconds / 3:
                float(matmul(a, b))
                count += 1
            best = max(best, flops * count / (time.perf_counter() - start) / 1e9)
    return best


def training_flops_per_sequence(config, sequence_length: int, num_masked: int = 0,
                                num_outputs: int = 0) -> float:  # fmt: skip
    """FLOPs of one sequence's forward + backward through an ALBERT of `config` (an
    `AlbertConfig`): `num_masked` MLM predictions (0: no MLM head), `num_outputs` per-position
    outputs of a token head (2 for a span head)."""
    h, i, e = config.hidden_dim, config.intermediate_dim, config.embedding_dim
    per_token_layer = 4 * h * h + 2 * h * i  # Q, K, V, output; the two feed-forward layers
    forward = 2 * sequence_length * (config.num_layers * per_token_layer + e * h)
    forward += config.num_layers * 4 * sequence_length**2 * h  # scores and weighted values
    forward += 2 * num_masked * (h * e + e * config.vocabulary_size)
    forward += 2 * sequence_length * h * num_outputs
    return 3.0 * forward
