"""ALBERT-base pretraining step: keras_albert (MLM + SOP, our LAMB) vs Model Garden
(`BertPretrainerV2`, MLM + SOP, its LAMB) vs keras-hub `AlbertMaskedLM` (MLM only, Adam) vs
Hugging Face `AlbertForPreTraining` (PyTorch CPU, AdamW).

Run by hand: `python -m benchmarks.pretraining_step [--rounds 3] [--batch-size 8]
[--precision mixed_bfloat16]`; `--tiny` runs a tiny model once (a CPU check that every peer
runs).
All run in this one process, interleaved round by round, on the same random batch (seq 128,
20 masked positions), in the precision given, each TensorFlow one without and with XLA:
- ours and keras-hub (Keras 3): the dtype policy given, `train_on_batch` (their compiled train
  function) with and without `jit_compile`; keras-hub has no SOP head;
- Model Garden (tf-models-official on tf_keras, the TensorFlow ALBERT TPU users run):
  tf_keras's global policy, `MaskedLMTask`'s step (`benchmarks/model_garden.py`: its
  `BertPretrainerV2` with the `next_sentence` head, the same loss structure as ours, its LAMB)
  as a `tf.function` with and without `jit_compile`;
- HF: eager forward + backward + `AdamW.step`, in bfloat16 under `torch.autocast`
  (`torch.compile` is not measured here); it scores every position with the MLM head (its
  design).
Dropout is off everywhere. Prints sequences/s, the ratios of ours to each peer configuration
by configuration, and of our best configuration to each peer's best.
"""

import os

from benchmarks import prelude  # isort: skip  (first: sets the environment)

import keras
import keras_hub
import numpy as np
import tensorflow as tf
import torch
import transformers

from benchmarks import model_garden
from benchmarks.batches import pretraining_batch
from benchmarks.checklist import TINY
from benchmarks.interleaved import interleaved_rates, report
from benchmarks.peer_models import keras_hub_backbone, torch_autocast
from benchmarks.roofs import against_the_roof, training_flops_per_sequence
from keras_albert import AlbertBackbone, AlbertConfig, AlbertPretrainer
from keras_albert.config import get_preset
from keras_albert.pretraining.objective import compile_pretrainer
from keras_albert.training.lamb import Lamb

PRECISIONS = ("float32", "mixed_bfloat16")
LEARNING_RATE = 1e-4


def keras_albert_runner(config: AlbertConfig, batch, precision: str, jit_compile: bool):
    x, mask_ids, sop_labels = batch
    model = AlbertPretrainer(AlbertBackbone.from_albert_config(config, dtype=precision))
    compile_pretrainer(model, Lamb(LEARNING_RATE), jit_compile=jit_compile)
    y = {"mlm_logits": mask_ids, "sop_logits": sop_labels}
    weights = {
        "mlm_logits": np.ones(mask_ids.shape, "float32"),
        "sop_logits": np.ones(sop_labels.shape, "float32"),
    }
    return lambda: model.train_on_batch(x, y, sample_weight=weights)


def model_garden_runner(config: AlbertConfig, batch, precision: str, jit_compile: bool):
    x, mask_ids, sop_labels = batch
    step = model_garden.pretraining_step(
        model_garden.pretrainer(config, precision), LEARNING_RATE, jit_compile
    )
    inputs = model_garden.encoder_inputs(x)
    labels = tf.constant(mask_ids), tf.ones(mask_ids.shape), tf.constant(sop_labels)
    return lambda: float(step(inputs, *labels))


def keras_hub_runner(config: AlbertConfig, batch, precision: str, jit_compile: bool):
    x, mask_ids, _ = batch
    backbone = keras_hub_backbone(config, precision)
    model = keras_hub.models.AlbertMaskedLM(backbone, preprocessor=None)
    model.compile(
        optimizer=keras.optimizers.Adam(LEARNING_RATE),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        weighted_metrics=[keras.metrics.SparseCategoricalAccuracy()],
        jit_compile=jit_compile,
    )
    weights = np.ones(mask_ids.shape, "float32")
    return lambda: model.train_on_batch(x, mask_ids, sample_weight=weights)


def hf_runner(config: AlbertConfig, batch, precision: str):
    x, mask_ids, sop_labels = batch
    model = transformers.AlbertForPreTraining(
        transformers.AlbertConfig.from_dict(config.to_hf_config())
    ).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=LEARNING_RATE)
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
        with torch_autocast(precision):
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
    parser.add_argument("--precision", choices=PRECISIONS, default="float32")
    parser.add_argument(
        "--tiny", action="store_true", help="a tiny model, batch 2 × 16, 3 masked, one step"
    )
    args = parser.parse_args()
    prelude.header()

    config = get_preset("albert_base_v2")
    if args.tiny:
        config = AlbertConfig(**TINY)
        args.batch_size, args.sequence_length, args.num_masked = 2, 16, 3
        args.rounds, args.steps_per_round = 1, 1
    torch.set_num_threads(os.cpu_count())
    batch = pretraining_batch(args.batch_size, args.sequence_length, args.num_masked,
                              config.vocabulary_size)  # fmt: skip
    runners = {}
    for name, make in (("keras_albert", keras_albert_runner), ("model_garden", model_garden_runner),
                       ("keras_hub", keras_hub_runner)):  # fmt: skip
        runners[name] = make(config, batch, args.precision, jit_compile=False)
        runners[f"{name}_xla"] = make(config, batch, args.precision, jit_compile=True)
    runners["hf_torch"] = hf_runner(config, batch, args.precision)
    rates = interleaved_rates(runners, args.batch_size, args.rounds, args.steps_per_round)
    print(
        f"{'tiny' if args.tiny else 'ALBERT-base'} pretraining step, batch {args.batch_size}, "
        f"seq {args.sequence_length}, {args.num_masked} masked, {args.precision}, "
        f"{os.cpu_count()} CPU threads, {args.rounds} rounds"
    )
    medians = report(rates)
    ratios = {}
    for ours, reference in (
        ("keras_albert", "model_garden"),
        ("keras_albert_xla", "model_garden_xla"),
        ("keras_albert", "keras_hub"),
        ("keras_albert_xla", "keras_hub_xla"),
        ("keras_albert", "hf_torch"),
    ):
        ratios[f"{ours} / {reference}"] = medians[ours] / medians[reference]
        print(f"  {ours} / {reference}: {ratios[f'{ours} / {reference}']:.2f}x")
    # Each at its best: the faster of its configurations (HF has one here).
    best = {
        name: max(value for key, value in medians.items() if key.removesuffix("_xla") == name)
        for name in ("keras_albert", "model_garden", "keras_hub", "hf_torch")
    }
    for reference in ("model_garden", "keras_hub", "hf_torch"):
        ratios[f"best keras_albert / best {reference}"] = best["keras_albert"] / best[reference]
        ratio = ratios[f"best keras_albert / best {reference}"]
        print(f"  best keras_albert / best {reference}: {ratio:.2f}x")
    flops = training_flops_per_sequence(config, args.sequence_length, args.num_masked)
    roof = against_the_roof(medians, flops, args.precision)
    prelude.write_results(
        args.results_json,
        {"options": vars(args), "sequences_per_second": rates, "medians": medians,
         "best": best, "ratios": ratios, "roof": roof},
    )  # fmt: skip


if __name__ == "__main__":
    main()
