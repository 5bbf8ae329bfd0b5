"""ALBERT-base pretraining step: keras_albert (MLM + SOP, our LAMB) vs keras-hub
`AlbertMaskedLM` (MLM only, Adam) vs Hugging Face `AlbertForPreTraining` (PyTorch CPU, AdamW).

Run by hand: `python -m benchmarks.pretraining_step [--rounds 3] [--batch-size 8]`.
All run in this one process, interleaved round by round, on the same random batch (seq 128,
20 masked positions): the Keras models through `train_on_batch` (their compiled train
function), without and with `jit_compile`; HF forward + backward + `AdamW.step`. HF scores
every position with the MLM head (its design); keras-hub has no SOP head. Prints sequences/s
and the ratios of ours to each.
"""

import os

from benchmarks import prelude  # isort: skip  (first: sets the environment)

import keras
import keras_hub
import numpy as np
import torch
import transformers

from benchmarks.batches import pretraining_batch
from benchmarks.interleaved import interleaved_rates, report
from keras_albert import AlbertBackbone, AlbertPretrainer
from keras_albert.pretraining.objective import compile_pretrainer
from keras_albert.training.lamb import Lamb

VOCABULARY_SIZE = 30000


def make_batch(batch_size: int, sequence_length: int, num_masked: int):
    return pretraining_batch(batch_size, sequence_length, num_masked, VOCABULARY_SIZE)


def keras_albert_runner(batch, jit_compile: bool):
    x, mask_ids, sop_labels = batch
    model = AlbertPretrainer(AlbertBackbone.from_preset_name("albert_base_v2"))
    compile_pretrainer(model, Lamb(1e-4), jit_compile=jit_compile)
    y = {"mlm_logits": mask_ids, "sop_logits": sop_labels}
    weights = {
        "mlm_logits": np.ones(mask_ids.shape, "float32"),
        "sop_logits": np.ones(sop_labels.shape, "float32"),
    }
    return lambda: model.train_on_batch(x, y, sample_weight=weights)


def keras_hub_runner(batch, jit_compile: bool):
    x, mask_ids, _ = batch
    backbone = keras_hub.models.AlbertBackbone(
        vocabulary_size=VOCABULARY_SIZE,
        num_layers=12,
        num_heads=12,
        embedding_dim=128,
        hidden_dim=768,
        intermediate_dim=3072,
        dropout=0.0,
    )
    model = keras_hub.models.AlbertMaskedLM(backbone, preprocessor=None)
    model.compile(
        optimizer=keras.optimizers.Adam(1e-4),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        weighted_metrics=[keras.metrics.SparseCategoricalAccuracy()],
        jit_compile=jit_compile,
    )
    weights = np.ones(mask_ids.shape, "float32")
    return lambda: model.train_on_batch(x, mask_ids, sample_weight=weights)


def hf_runner(batch):
    x, mask_ids, sop_labels = batch
    model = transformers.AlbertForPreTraining(
        transformers.AlbertConfig(
            hidden_size=768,
            num_attention_heads=12,
            intermediate_size=3072,
            hidden_act="gelu_new",
            hidden_dropout_prob=0.0,
            attention_probs_dropout_prob=0.0,
        )
    ).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    labels = np.full(x["token_ids"].shape, -100, "int64")
    np.put_along_axis(labels, x["mask_positions"], mask_ids, 1)
    inputs = dict(
        input_ids=torch.tensor(x["token_ids"], dtype=torch.long),
        token_type_ids=torch.tensor(x["segment_ids"], dtype=torch.long),
        attention_mask=torch.tensor(x["padding_mask"], dtype=torch.long),
        labels=torch.tensor(labels),
        sentence_order_label=torch.tensor(sop_labels, dtype=torch.long),
    )

    def step():
        optimizer.zero_grad()
        loss = model(**inputs).loss
        loss.backward()
        optimizer.step()
        return float(loss)

    return step


def main() -> None:
    parser = prelude.parser(__file__, __doc__.splitlines()[0])
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--sequence-length", type=int, default=128)
    parser.add_argument("--num-masked", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps-per-round", type=int, default=3)
    args = parser.parse_args()
    prelude.header()

    torch.set_num_threads(os.cpu_count())
    batch = make_batch(args.batch_size, args.sequence_length, args.num_masked)
    runners = {
        "keras_albert": keras_albert_runner(batch, jit_compile=False),
        "keras_albert_xla": keras_albert_runner(batch, jit_compile=True),
        "keras_hub": keras_hub_runner(batch, jit_compile=False),
        "keras_hub_xla": keras_hub_runner(batch, jit_compile=True),
        "hf_torch": hf_runner(batch),
    }
    rates = interleaved_rates(runners, args.batch_size, args.rounds, args.steps_per_round)
    print(
        f"ALBERT-base pretraining step, batch {args.batch_size}, seq {args.sequence_length}, "
        f"{args.num_masked} masked, float32, {os.cpu_count()} CPU threads, {args.rounds} rounds"
    )
    medians = report(rates)
    best_ours = max(medians["keras_albert"], medians["keras_albert_xla"])
    ratios = {}
    for ours, reference in (
        ("keras_albert", "keras_hub"),
        ("keras_albert_xla", "keras_hub_xla"),
        ("keras_albert", "hf_torch"),
    ):
        ratios[f"{ours} / {reference}"] = medians[ours] / medians[reference]
        print(f"  {ours} / {reference}: {ratios[f'{ours} / {reference}']:.2f}x")
    for reference in ("keras_hub_xla", "hf_torch"):
        ratios[f"best keras_albert / {reference}"] = best_ours / medians[reference]
        print(f"  best keras_albert / {reference}: {best_ours / medians[reference]:.2f}x")
    prelude.write_results(
        args.results_json,
        {"options": vars(args), "sequences_per_second": rates, "medians": medians,
         "ratios": ratios},
    )  # fmt: skip


if __name__ == "__main__":
    main()
