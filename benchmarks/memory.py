"""What remat saves: the bytes a gradient keeps of the forward pass, with and without
`AlbertBackbone(remat=True)`, on JAX (on this CPU).

Run by hand, on JAX (Keras reads the backend once; the prelude's default is TensorFlow):

    KERAS_BACKEND=jax python -m benchmarks.memory [--num-layers 12,24] [--base]

For each backbone (hidden 64, intermediate 256, 4 heads, batch 8 × 128 tokens, at each of
`--num-layers`; with `--base` also ALBERT-base's architecture, batch 4 × 128), without and
with remat:

1. residual bytes: what the backward pass keeps of the forward pass, the leaves of the
   function `jax.vjp` returns for the sequence output (the weights, the dropout seeds and the
   activations). This is what remat changes, whatever the device: without it every
   intermediate of every pass; with it each pass's input.
2. compiled temporary bytes: `memory_analysis().temp_size_in_bytes` of the jitted gradient
   (of the sequence output's sum) as XLA compiles it for this CPU: the memory the compiled
   step allocates beside its inputs and outputs. XLA's CPU scheduler runs the recomputations
   where it likes, early ones included; this says what it made of them here.
"""

from benchmarks import prelude  # isort: skip  (first: sets the environment)

import keras
import numpy as np

from keras_albert import AlbertBackbone
from keras_albert.config import get_preset

SMALL = dict(
    vocabulary_size=64, embedding_dim=8, hidden_dim=64, intermediate_dim=256, num_heads=4,
    max_sequence_length=128,
)  # fmt: skip


def inputs(batch_size: int, sequence_length: int, vocabulary_size: int) -> dict:
    shape = (batch_size, sequence_length)
    token_ids = np.random.default_rng(0).integers(5, vocabulary_size, shape)
    return {
        "token_ids": token_ids.astype("int32"),
        "segment_ids": np.zeros(shape, "int32"),
        "padding_mask": np.ones(shape, "int32"),
    }


def residual_bytes(model: AlbertBackbone, x: dict) -> int:
    """The bytes of what `jax.vjp` keeps for the backward pass of a training call."""
    import jax

    non_trainable = [v.value for v in model.non_trainable_variables]

    def forward(trainable):
        outputs, _ = model.stateless_call(trainable, non_trainable, x, training=True)
        return outputs["sequence_output"]

    _, backward = jax.vjp(forward, [v.value for v in model.trainable_variables])
    return int(sum(leaf.nbytes for leaf in jax.tree_util.tree_leaves(backward)))


def compiled_temp_bytes(model: AlbertBackbone, x: dict) -> int:
    """XLA's temporary bytes for the jitted gradient of a training call."""
    import jax

    non_trainable = [v.value for v in model.non_trainable_variables]

    def loss(trainable):
        outputs, _ = model.stateless_call(trainable, non_trainable, x, training=True)
        return keras.ops.sum(outputs["sequence_output"])

    trainable = [v.value for v in model.trainable_variables]
    compiled = jax.jit(jax.grad(loss)).lower(trainable).compile()
    return int(compiled.memory_analysis().temp_size_in_bytes)


def measure(architecture: dict, batch_size: int, sequence_length: int, compiled: bool) -> dict:
    """Both measures without and with remat, in bytes."""
    x = inputs(batch_size, sequence_length, architecture["vocabulary_size"])
    results = {}
    for remat in (False, True):
        keras.utils.set_random_seed(0)
        model = AlbertBackbone(**architecture, remat=remat)
        name = "remat" if remat else "plain"
        results[f"residual_bytes_{name}"] = residual_bytes(model, x)
        if compiled:
            results[f"compiled_temp_bytes_{name}"] = compiled_temp_bytes(model, x)
    return results


def main(argv=None) -> dict:
    parser = prelude.parser(__file__, __doc__.splitlines()[0])
    parser.add_argument("--num-layers", default="12,24")
    parser.add_argument("--base", action="store_true", help="also ALBERT-base (residuals only)")
    parser.add_argument("--no-compile", action="store_true", help="residual bytes only")
    args = parser.parse_args(argv)
    if keras.backend.backend() != "jax":
        parser.error(
            "`KERAS_BACKEND` must be jax (the residuals are `jax.vjp`'s). Received: "
            f"KERAS_BACKEND={keras.backend.backend()}"
        )
    prelude.header()
    runs = {}
    for num_layers in map(int, args.num_layers.split(",")):
        name = f"hidden64_layers{num_layers}_batch8x128"
        runs[name] = measure(dict(SMALL, num_layers=num_layers), 8, 128, not args.no_compile)
    if args.base:
        runs["albert_base_v2_batch4x128"] = measure(
            get_preset("albert_base_v2").to_dict(), 4, 128, compiled=False
        )
    for name, run in runs.items():
        print(
            name + ": " + ", ".join(f"{key} {value / 2**20:.1f} MiB" for key, value in run.items())
        )
    results = {"backend": keras.backend.backend(), "runs": runs}  # the commit: the machine's
    prelude.write_results(args.results_json, results)
    return results


if __name__ == "__main__":
    main()
