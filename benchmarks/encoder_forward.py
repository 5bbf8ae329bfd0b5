"""ALBERT-base encoder forward pass: keras_albert vs keras-hub vs Hugging Face (PyTorch CPU).

Run by hand: `python -m benchmarks.encoder_forward [--rounds 5] [--batch-size 8]`.
All three run in this one process, interleaved round by round, on the same random inputs;
the Keras models run as a `tf.function` (what `model.predict` does), HF under
`torch.no_grad()`. Prints sequences/s per implementation and the ratios of ours to each.
"""

import os

from benchmarks import prelude  # isort: skip  (first: sets the environment)

import keras_hub
import numpy as np
import tensorflow as tf
import torch
import transformers

from benchmarks.interleaved import interleaved_rates, report
from keras_albert import AlbertBackbone


def make_runners(batch_size: int, sequence_length: int, jit_compile: bool):
    rng = np.random.default_rng(0)
    token_ids = rng.integers(5, 30000, (batch_size, sequence_length)).astype("int32")
    inputs = {
        "token_ids": token_ids,
        "segment_ids": np.zeros_like(token_ids),
        "padding_mask": np.ones_like(token_ids),
    }
    ours = AlbertBackbone.from_preset_name("albert_base_v2")
    hub = keras_hub.models.AlbertBackbone(
        vocabulary_size=30000,
        num_layers=12,
        num_heads=12,
        embedding_dim=128,
        hidden_dim=768,
        intermediate_dim=3072,
    )
    ours_fn = tf.function(lambda x: ours(x, training=False), jit_compile=jit_compile)
    hub_fn = tf.function(lambda x: hub(x, training=False), jit_compile=jit_compile)
    tf_inputs = {k: tf.constant(v) for k, v in inputs.items()}

    hf = transformers.AlbertModel(
        transformers.AlbertConfig(
            hidden_size=768, num_attention_heads=12, intermediate_size=3072, hidden_act="gelu_new"
        )
    ).eval()
    hf_inputs = dict(
        input_ids=torch.tensor(token_ids, dtype=torch.long),
        token_type_ids=torch.zeros(token_ids.shape, dtype=torch.long),
        attention_mask=torch.ones(token_ids.shape, dtype=torch.long),
    )

    def run_hf():
        with torch.no_grad():
            return hf(**hf_inputs).last_hidden_state

    return {
        "keras_albert": lambda: ours_fn(tf_inputs)["sequence_output"].numpy(),
        "keras_hub": lambda: hub_fn(tf_inputs)["sequence_output"].numpy(),
        "hf_torch": run_hf,
    }


def main() -> None:
    parser = prelude.parser(__file__, __doc__.splitlines()[0])
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--sequence-length", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps-per-round", type=int, default=5)
    parser.add_argument("--jit-compile", action="store_true", help="XLA for both Keras models")
    args = parser.parse_args()
    prelude.header()

    torch.set_num_threads(os.cpu_count())
    runners = make_runners(args.batch_size, args.sequence_length, args.jit_compile)
    rates = interleaved_rates(runners, args.batch_size, args.rounds, args.steps_per_round)
    print(
        f"ALBERT-base forward, batch {args.batch_size}, seq {args.sequence_length}, float32, "
        f"{os.cpu_count()} CPU threads, jit_compile={args.jit_compile}, {args.rounds} rounds"
    )
    medians = report(rates)
    ratios = {name: medians["keras_albert"] / medians[name] for name in ("keras_hub", "hf_torch")}
    for name, ratio in ratios.items():
        print(f"  keras_albert / {name}: {ratio:.2f}x")
    prelude.write_results(
        args.results_json,
        {"options": vars(args), "sequences_per_second": rates, "medians": medians,
         "keras_albert_over": ratios},
    )  # fmt: skip


if __name__ == "__main__":
    main()
