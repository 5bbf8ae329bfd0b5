"""ALBERT-base encoder forward pass: keras_albert vs keras-hub vs Model Garden vs Hugging Face.

Run by hand: `python -m benchmarks.encoder_forward [--rounds 5] [--batch-size 8]
[--precision mixed_bfloat16] [--jit-compile]`; `--tiny` runs a tiny model once (a CPU check
that every peer runs).
All four run in this one process, interleaved round by round, on the same random inputs, in the
precision given and, with `--jit-compile`, the three TensorFlow ones under XLA:
- ours and keras-hub (Keras 3): the dtype policy given, called in a `tf.function` (what
  `model.predict` does);
- Model Garden (tf-models-official's `AlbertEncoder`, tf_keras, the TensorFlow ALBERT TPU
  users run): tf_keras's global policy, in a `tf.function`, with our weights
  (`benchmarks/model_garden.py`; tests/models/test_model_garden_parity.py holds its outputs
  equal to ours);
- Hugging Face `AlbertModel` (PyTorch CPU): eager under `torch.no_grad()`, in bfloat16 under
  `torch.autocast` (PyTorch's mixed precision; `torch.compile` is not measured here).
Prints sequences/s per implementation and the ratios of ours to each.
"""

import os

from benchmarks import prelude  # isort: skip  (first: sets the environment)

import numpy as np
import tensorflow as tf
import torch
import transformers

from benchmarks import model_garden
from benchmarks.checklist import TINY
from benchmarks.interleaved import interleaved_rates, report
from benchmarks.peer_models import keras_hub_backbone, torch_autocast
from benchmarks.roofs import against_the_roof, forward_flops_per_sequence
from keras_albert import AlbertBackbone, AlbertConfig
from keras_albert.config import get_preset

PRECISIONS = ("float32", "mixed_bfloat16")
PEERS = ("keras_hub", "model_garden", "hf_torch")


def make_runners(config: AlbertConfig, batch_size: int, sequence_length: int, precision: str,
                 jit_compile: bool):  # fmt: skip
    rng = np.random.default_rng(0)
    token_ids = rng.integers(5, config.vocabulary_size, (batch_size, sequence_length))
    inputs = {
        "token_ids": token_ids.astype("int32"),
        "segment_ids": np.zeros_like(token_ids, "int32"),
        "padding_mask": np.ones_like(token_ids, "int32"),
    }
    ours = AlbertBackbone.from_albert_config(config, dtype=precision)
    hub = keras_hub_backbone(config, precision)
    garden = model_garden.albert_encoder(config, precision)
    model_garden.copy_weights(ours, garden)
    ours_fn = tf.function(lambda x: ours(x, training=False), jit_compile=jit_compile)
    hub_fn = tf.function(lambda x: hub(x, training=False), jit_compile=jit_compile)
    garden_fn = tf.function(lambda x: garden(x, training=False), jit_compile=jit_compile)
    tf_inputs = {k: tf.constant(v) for k, v in inputs.items()}
    garden_inputs = model_garden.encoder_inputs(inputs)

    hf = transformers.AlbertModel(transformers.AlbertConfig.from_dict(config.to_hf_config())).eval()
    hf_inputs = dict(
        input_ids=torch.tensor(token_ids, dtype=torch.long),
        token_type_ids=torch.zeros(token_ids.shape, dtype=torch.long),
        attention_mask=torch.ones(token_ids.shape, dtype=torch.long),
    )

    def run_hf():
        with torch.no_grad(), torch_autocast(precision):
            return hf(**hf_inputs).last_hidden_state

    return {
        "keras_albert": lambda: ours_fn(tf_inputs)["sequence_output"].numpy(),
        "keras_hub": lambda: hub_fn(tf_inputs)["sequence_output"].numpy(),
        "model_garden": lambda: garden_fn(garden_inputs)["sequence_output"].numpy(),
        "hf_torch": run_hf,
    }


def main() -> None:
    parser = prelude.parser(__file__, __doc__.splitlines()[0])
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--sequence-length", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps-per-round", type=int, default=5)
    parser.add_argument("--precision", choices=PRECISIONS, default="float32")
    parser.add_argument(
        "--jit-compile", action="store_true", help="XLA for the three TensorFlow models"
    )
    parser.add_argument(
        "--tiny", action="store_true", help="a tiny model, batch 2 × 16, one round of one step"
    )
    args = parser.parse_args()
    prelude.header()

    config = get_preset("albert_base_v2")
    if args.tiny:
        config = AlbertConfig(**TINY)
        args.batch_size, args.sequence_length, args.rounds, args.steps_per_round = 2, 16, 1, 1
    torch.set_num_threads(os.cpu_count())
    runners = make_runners(config, args.batch_size, args.sequence_length, args.precision,
                           args.jit_compile)  # fmt: skip
    rates = interleaved_rates(runners, args.batch_size, args.rounds, args.steps_per_round)
    print(
        f"{'tiny' if args.tiny else 'ALBERT-base'} forward, batch {args.batch_size}, "
        f"seq {args.sequence_length}, "
        f"{args.precision}, {os.cpu_count()} CPU threads, jit_compile={args.jit_compile}, "
        f"{args.rounds} rounds"
    )
    medians = report(rates)
    ratios = {name: medians["keras_albert"] / medians[name] for name in PEERS}
    for name, ratio in ratios.items():
        print(f"  keras_albert / {name}: {ratio:.2f}x")
    roof = against_the_roof(
        medians, forward_flops_per_sequence(config, args.sequence_length), args.precision
    )
    prelude.write_results(
        args.results_json,
        {"options": vars(args), "sequences_per_second": rates, "medians": medians,
         "keras_albert_over": ratios, "roof": roof},
    )  # fmt: skip


if __name__ == "__main__":
    main()
