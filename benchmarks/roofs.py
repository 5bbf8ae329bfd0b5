"""What a training step could reach on this machine: the measured GEMM roof per dtype and the
FLOPs of an ALBERT training step, shared by the precision benchmarks.

`gemm_roof` times a backend's own matrix multiply — TensorFlow's `tf.matmul`, JAX's
`jnp.matmul` under `jax.jit`, PyTorch's `torch.matmul` — by default at the shapes that dominate
ALBERT-base (tokens × 768 by 768 × 3072), so "fraction of the roof" compares a step with what
the kernels of the backend it ran on reach on the same device, not with a datasheet.
`training_flops_per_sequence` counts the multiply-adds of forward + backward (3 × forward: two
matrix multiplies back for each one forward) of every encoder pass (the shared block counts
each time it runs), the attention products, the embedding projection and the heads. Imports no
framework until `gemm_roof` is called, and then only the one of its `backend`.
"""

import time

BACKENDS = ("tensorflow", "jax", "torch")


def gemm_roof(dtype: str = "float32", device: str | None = None, rows: int = 1024,
              inner: int = 768, columns: int = 3072, seconds: float = 1.0,
              backend: str = "tensorflow") -> float:  # fmt: skip
    """GFLOP/s of `backend`'s matrix multiply of (rows × inner) by (inner × columns) in `dtype`
    on `device` (TensorFlow's `/CPU:0` or `/GPU:0`, PyTorch's `cpu` or `cuda`; JAX's default
    device; None: the backend's default), XLA-free on TensorFlow, best of three timed
    stretches of about `seconds / 3` each. Calls are queued back to back and waited for at the
    end of each stretch, as a training step's kernels are."""
    if backend not in BACKENDS:
        raise ValueError(f"`backend` must be one of {BACKENDS}. Received: backend={backend!r}")
    multiply, wait = _MATMULS[backend](dtype, device, rows, inner, columns)
    wait(multiply())  # trace, compile, allocate
    flops = 2.0 * rows * inner * columns
    best = 0.0
    for _ in range(3):
        count, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds / 3:
            result = multiply()
            count += 1
        wait(result)
        best = max(best, flops * count / (time.perf_counter() - start) / 1e9)
    return best


def _tensorflow_matmul(dtype, device, rows, inner, columns):
    import tensorflow as tf  # here: the other backends' machines may have no TensorFlow

    with tf.device(device or "/CPU:0"):
        a = tf.cast(tf.random.stateless_normal((rows, inner), (1, 2)), dtype)
        b = tf.cast(tf.random.stateless_normal((inner, columns), (3, 4)), dtype)
    # One element back: the product stays on the device (no copy of it is timed).
    matmul = tf.function(lambda x, y: tf.reduce_sum(tf.cast(tf.matmul(x, y)[0, :1], "float32")))

    def multiply():
        with tf.device(device or "/CPU:0"):
            return matmul(a, b)

    return multiply, lambda result: float(result)


def _jax_matmul(dtype, device, rows, inner, columns):
    import jax

    keys = jax.random.split(jax.random.key(0))
    a = jax.random.normal(keys[0], (rows, inner)).astype(dtype)
    b = jax.random.normal(keys[1], (inner, columns)).astype(dtype)
    if device is not None:
        a, b = jax.device_put(a, device), jax.device_put(b, device)
    # The whole product is returned: XLA could compute a slice of it alone.
    matmul = jax.jit(jax.numpy.matmul)
    return lambda: matmul(a, b), lambda result: result.block_until_ready()


def _torch_matmul(dtype, device, rows, inner, columns):
    import torch

    device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    generator = torch.Generator(device=device).manual_seed(0)
    a = torch.randn(rows, inner, device=device, generator=generator).to(getattr(torch, dtype))
    b = torch.randn(inner, columns, device=device, generator=generator).to(getattr(torch, dtype))

    def wait(result):
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    return lambda: torch.matmul(a, b), wait


_MATMULS = {"tensorflow": _tensorflow_matmul, "jax": _jax_matmul, "torch": _torch_matmul}


def forward_flops_per_sequence(config, sequence_length: int, num_masked: int = 0,
                               num_outputs: int = 0) -> float:  # fmt: skip
    """FLOPs of one sequence's forward pass through an ALBERT of `config` (an `AlbertConfig`):
    `num_masked` MLM predictions (0: no MLM head), `num_outputs` per-position outputs of a
    token head (2 for a span head)."""
    h, i, e = config.hidden_dim, config.intermediate_dim, config.embedding_dim
    per_token_layer = 4 * h * h + 2 * h * i  # Q, K, V, output; the two feed-forward layers
    forward = 2 * sequence_length * (config.num_layers * per_token_layer + e * h)
    forward += config.num_layers * 4 * sequence_length**2 * h  # scores and weighted values
    forward += 2 * num_masked * (h * e + e * config.vocabulary_size)
    forward += 2 * sequence_length * h * num_outputs
    return float(forward)


def training_flops_per_sequence(config, sequence_length: int, num_masked: int = 0,
                                num_outputs: int = 0) -> float:  # fmt: skip
    """FLOPs of one sequence's forward + backward (3 × `forward_flops_per_sequence`)."""
    return 3.0 * forward_flops_per_sequence(config, sequence_length, num_masked, num_outputs)


def against_the_roof(medians: dict[str, float], flops_per_sequence: float,
                     precision: str) -> dict:  # fmt: skip
    """TensorFlow's GEMM roof in `precision`'s compute dtype, measured now, and each
    implementation's share of it: `medians` (sequences/s) × `flops_per_sequence` / the roof.
    Printed and returned for the result file."""
    dtype = "bfloat16" if "bfloat16" in precision else "float32"
    roof = gemm_roof(dtype)
    fractions = {name: rate * flops_per_sequence / 1e9 / roof for name, rate in medians.items()}
    print(f"  GEMM roof ({dtype}, TensorFlow): {roof:.1f} GFLOP/s; share of it: "
          + ", ".join(f"{name} {share:.2f}" for name, share in fractions.items()))  # fmt: skip
    return {"gemm_roof_gflops": roof, "gemm_roof_dtype": dtype,
            "flops_per_sequence": flops_per_sequence, "fraction_of_roof": fractions}  # fmt: skip
