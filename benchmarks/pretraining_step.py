"""ALBERT-base pretraining step: keras_albert (MLM + SOP, our LAMB) vs keras-hub
`AlbertMaskedLM` (MLM only, Adam) vs Hugging Face `AlbertForPreTraining` (PyTorch CPU, AdamW).

Run by hand: `python benchmarks/pretraining_step.py [--rounds 3] [--batch-size 8]`.
All run in this one process, interleaved round by round, on the same random batch (seq 128,
20 masked positions): the Keras models through `train_on_batch` (their compiled train
function), without and with `jit_compile`; HF forward + backward + `AdamW.step`. HF scores
every position with the MLM head (its design); keras-hub has no SOP head. Prints sequences/s
and the ratios of ours to each.
"""

import argparse
import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import keras_hub  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402
from batches import pretraining_batch  # noqa: E402 (benchmarks/batches.py)
from interleaved import interleaved_rates, report  # noqa: E402 (benchmarks/interleaved.py)

from keras_albert import AlbertBackbone, AlbertPretrainer  # noqa: E402
from keras_albert.pretraining.objective import compile_pretrainer  # noqa: E402
from keras_albert.training.lamb import Lamb  # noqa: E402

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
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--sequence-length", type=int, default=128)
    parser.add_argument("--num-masked", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps-per-round", type=int, default=3)
    args = parser.parse_args()

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
    for ours, reference in (
        ("keras_albert", "keras_hub"),
        ("keras_albert_xla", "keras_hub_xla"),
        ("keras_albert", "hf_torch"),
    ):
        print(f"  {ours} / {reference}: {medians[ours] / medians[reference]:.2f}x")
    print(f"  best keras_albert / keras_hub_xla: {best_ours / medians['keras_hub_xla']:.2f}x")
    print(f"  best keras_albert / hf_torch: {best_ours / medians['hf_torch']:.2f}x")


if __name__ == "__main__":
    main()
