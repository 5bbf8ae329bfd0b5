"""Under mixed_bfloat16: the casts of a training step, and the error of the shared weights'
gradients, with the shared blocks' weights cast once a call (`keras_albert.models.cast_once`)
or once a pass.

Run by hand:

    python -m benchmarks.cast_once [--seeds 3]

1. Cast ops in the traced pretraining step of ALBERT-base (the drivers' `replica_fn`, gradient,
   LAMB update), in float32 and in mixed_bfloat16: the graph and the functions it calls.
2. A 12-pass model (hidden 32 and 128; each weight drawn with a spread of 1/sqrt(fan-in), so
   that activations are of order one): the gradient of a cross-entropy on its sequence output
   in mixed_bfloat16 against float32 with the same weights, as the relative error (norm) of
   each shared kernel's gradient, averaged over the kernels and the seeds. "cast once" is the
   backbone's `call` (one cast, the passes' gradients summed in bfloat16); "per pass" calls
   its layers one by one, so that each pass casts the weights itself and the passes'
   gradients are cast back and summed in float32, as the backbone did before.
"""

from benchmarks import prelude  # isort: skip  (first: sets the environment)

import keras
import numpy as np
import tensorflow as tf

from benchmarks.batches import pretraining_batch
from keras_albert import AlbertBackbone, AlbertConfig, AlbertPretrainer
from keras_albert.config import get_preset
from keras_albert.pretraining.objective import pretraining_replica_fn
from keras_albert.training.lamb import Lamb

POLICIES = ("float32", "mixed_bfloat16")


def casts_per_step(policy: str, batch_size: int, sequence_length: int, num_masked: int) -> int:
    config = get_preset("albert_base_v2").replace(dropout=0.0)  # as training_precision.py
    backbone = AlbertBackbone.from_albert_config(config, dtype=policy)
    model = AlbertPretrainer(backbone)
    optimizer = Lamb(1e-4)
    optimizer.build(model.trainable_variables)
    replica_fn = pretraining_replica_fn()
    x, mask_ids, sop_labels = pretraining_batch(
        batch_size, sequence_length, num_masked, backbone.albert_config.vocabulary_size
    )
    labels = {"mlm_logits": mask_ids, "sop_logits": sop_labels}
    weights = {name: np.ones(value.shape, "float32") for name, value in labels.items()}

    @tf.function
    def step(batch):  # the step of `training.loop.TrainingLoop`, one replica
        with tf.GradientTape() as tape:
            loss, _ = replica_fn(model, batch, True)
        variables = model.trainable_variables
        optimizer.apply(tape.gradient(loss, variables), variables)

    graph = step.get_concrete_function((x, labels, weights)).graph.as_graph_def()
    nodes = [*graph.node, *(node for f in graph.library.function for node in f.node_def)]
    return sum(node.op == "Cast" for node in nodes)


def per_pass_sequence_output(backbone, x):
    """The backbone's layers called one by one: each pass casts its weights itself."""
    hidden = backbone.embedding(x["token_ids"], x["segment_ids"])
    for step in backbone.encoder_steps:
        hidden = step(hidden, padding_mask=x["padding_mask"])
    return hidden


def gradient_errors(hidden_dim: int, seed: int) -> dict:
    config = AlbertConfig(
        vocabulary_size=64, embedding_dim=16, hidden_dim=hidden_dim,
        intermediate_dim=2 * hidden_dim, num_layers=12, num_heads=2, max_sequence_length=64,
    )  # fmt: skip
    rng = np.random.default_rng(seed)
    backbones = {policy: AlbertBackbone.from_albert_config(config, dtype=policy)
                 for policy in POLICIES}  # fmt: skip
    values = [
        rng.normal(0, 1 / np.sqrt(w.shape[0]), w.shape).astype("float32")
        if len(w.shape) == 2
        else w.numpy()
        for w in backbones["float32"].weights
    ]
    for backbone in backbones.values():
        backbone.set_weights(values)
    token_ids = rng.integers(5, 64, (8, 32)).astype("int32")
    x = {"token_ids": token_ids, "segment_ids": np.zeros_like(token_ids),
         "padding_mask": np.ones_like(token_ids)}  # fmt: skip
    readout = rng.normal(0, 1 / np.sqrt(hidden_dim), (hidden_dim, 64)).astype("float32")
    labels = rng.integers(0, 64, (8, 32))

    def gradients(backbone, sequence_output_fn):
        kernels = [w for w in backbone.trainable_variables if w.path.endswith("kernel")]
        kernels = [w for w in kernels if w.path.startswith("group_0")]
        with tf.GradientTape() as tape:
            logits = keras.ops.matmul(keras.ops.cast(sequence_output_fn(), "float32"), readout)
            loss = keras.ops.mean(
                keras.losses.sparse_categorical_crossentropy(labels, logits, from_logits=True)
            )
        return [np.asarray(g, np.float64) for g in tape.gradient(loss, kernels)]

    reference = gradients(backbones["float32"], lambda: backbones["float32"](x)["sequence_output"])
    mixed = backbones["mixed_bfloat16"]
    runs = {
        "cast_once": gradients(mixed, lambda: mixed(x)["sequence_output"]),
        "per_pass": gradients(mixed, lambda: per_pass_sequence_output(mixed, x)),
    }
    return {
        name: float(
            np.mean(
                [
                    np.linalg.norm(g - r) / np.linalg.norm(r)
                    for g, r in zip(run, reference, strict=True)
                ]
            )
        )  # fmt: skip
        for name, run in runs.items()
    }


def main(argv=None) -> dict:
    parser = prelude.parser(__file__, __doc__.splitlines()[0])
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--sequence-length", type=int, default=128)
    parser.add_argument("--num-masked", type=int, default=20)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--hidden-dims", default="32,128")
    args = parser.parse_args(argv)
    prelude.header()
    casts = {policy: casts_per_step(policy, args.batch_size, args.sequence_length,
                                    args.num_masked) for policy in POLICIES}  # fmt: skip
    print(f"casts per pretraining step (ALBERT-base): {casts}")
    errors = {}
    for hidden_dim in map(int, args.hidden_dims.split(",")):
        runs = [gradient_errors(hidden_dim, seed) for seed in range(args.seeds)]
        errors[hidden_dim] = {name: float(np.mean([run[name] for run in runs])) for name in runs[0]}
        measured = ", ".join(f"{name} {value:.4f}" for name, value in errors[hidden_dim].items())
        print(f"hidden {hidden_dim}: shared kernels' gradient error vs float32: {measured}")
    results = {"casts_per_step": casts, "gradient_error": errors}
    prelude.write_results(args.results_json, results)
    return results


if __name__ == "__main__":
    main()
