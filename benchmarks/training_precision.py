"""Training steps in float32 and bfloat16: ALBERT-base pretraining (MLM + SOP) and SQuAD
fine-tuning (span head), keras_albert vs keras-hub vs Hugging Face, one process, interleaved.

Run by hand, on a quiet machine:

    python -m benchmarks.training_precision [--rounds 3] [--plot runs/benchmarks/precision.png]
    python -m benchmarks.training_precision --quick   # a tiny model, to check that it runs

Runners, each on one fixed random batch (pretraining: batch 8 × 128, 20 masked; SQuAD:
batch 4 × 384):
- ours: the drivers' step (`training.loop.TrainingLoop` with `Lamb` for pretraining, `AdamW`
  for SQuAD, the model built under the policy) in float32, mixed_bfloat16, mixed_bfloat16 +
  XLA;
- keras-hub `AlbertMaskedLM` (MLM only; SQuAD: its backbone + a Dense span head) under
  mixed_bfloat16, `train_on_batch`;
- Hugging Face `AlbertForPreTraining` / `AlbertForQuestionAnswering` under
  `torch.autocast("cpu", dtype=torch.bfloat16)`, forward + backward + `AdamW.step`.
Prints sequences/s per runner (median and range over rounds), the fraction of the measured
bfloat16 GEMM roof each reaches (`roofs.py`), and the ratios the floors name; writes
them to `--results-json` and, with `--plot`, a bar chart.
"""

import os

from benchmarks import prelude  # isort: skip  (first: sets the environment)

import keras
import keras_hub
import numpy as np
import tensorflow as tf
import torch
import transformers

from benchmarks.batches import pretraining_batch
from benchmarks.interleaved import interleaved_rates, report
from benchmarks.roofs import gemm_roof, training_flops_per_sequence
from keras_albert import AlbertBackbone, AlbertConfig, AlbertPretrainer
from keras_albert.config import get_preset
from keras_albert.pretraining.objective import pretraining_replica_fn
from keras_albert.tasks.question_answering.model import AlbertQuestionAnswerer
from keras_albert.training.clipping import adamw
from keras_albert.training.lamb import Lamb
from keras_albert.training.loop import TrainingLoop
from keras_albert.training.objective import Objective

TINY = AlbertConfig(
    vocabulary_size=1000, embedding_dim=16, hidden_dim=32, intermediate_dim=64, num_layers=2,
    num_heads=2, max_sequence_length=512,
)  # fmt: skip


def squad_batch(batch_size: int, sequence_length: int, vocabulary_size: int):
    rng = np.random.default_rng(1)
    token_ids = rng.integers(5, vocabulary_size, (batch_size, sequence_length)).astype("int32")
    x = {
        "token_ids": token_ids,
        "segment_ids": (np.arange(sequence_length) >= 64)
        .astype("int32")[None]
        .repeat(batch_size, 0),
        "padding_mask": np.ones_like(token_ids),
    }
    starts = rng.integers(64, sequence_length - 8, batch_size).astype("int32")
    return x, {"start_logits": starts, "end_logits": starts + 3}


def ours_runner(config, task, batch, policy, jit_compile):
    """One step of the drivers' loop on `batch`, repeated."""
    strategy = tf.distribute.get_strategy()
    backbone = AlbertBackbone(**{**config.to_dict(), "dropout": 0.0}, dtype=policy)
    if task == "pretraining":
        x, mask_ids, sop_labels = batch
        model = AlbertPretrainer(backbone)
        labels = {"mlm_logits": mask_ids, "sop_logits": sop_labels}
        weights = {name: np.ones(value.shape, "float32") for name, value in labels.items()}
        element, optimizer = (x, labels, weights), Lamb(1e-4)
        replica_fn = pretraining_replica_fn()
    else:
        model = AlbertQuestionAnswerer(backbone)
        element, optimizer = batch, adamw(1e-5)
        replica_fn = Objective(**model.training_loss()).replica_fn
    optimizer.build(model.trainable_variables)
    loop = TrainingLoop(strategy, model, optimizer, replica_fn, jit_compile=jit_compile)
    iterator = loop.iterator(lambda _: tf.data.Dataset.from_tensors(element).repeat())
    return lambda: loop.train(iterator, 1)


def keras_hub_runner(config, task, batch):
    backbone = keras_hub.models.AlbertBackbone(
        vocabulary_size=config.vocabulary_size, num_layers=config.num_layers,
        num_heads=config.num_heads, embedding_dim=config.embedding_dim,
        hidden_dim=config.hidden_dim, intermediate_dim=config.intermediate_dim, dropout=0.0,
        max_sequence_length=config.max_sequence_length, dtype="mixed_bfloat16",
    )  # fmt: skip
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    if task == "pretraining":
        x, mask_ids, _ = batch
        model = keras_hub.models.AlbertMaskedLM(backbone, preprocessor=None)
        model.compile(optimizer=keras.optimizers.Adam(1e-4), loss=loss)
        return lambda: model.train_on_batch(x, mask_ids)
    x, y = batch
    inputs = backbone.input
    logits = keras.layers.Dense(2, dtype="float32")(backbone(inputs)["sequence_output"])
    outputs = {"start_logits": logits[..., 0], "end_logits": logits[..., 1]}
    model = keras.Model(inputs, outputs)
    model.compile(optimizer=keras.optimizers.AdamW(1e-5), loss={name: loss for name in y})
    return lambda: model.train_on_batch(x, y)


def hf_runner(config, task, batch):
    hf_config = transformers.AlbertConfig(
        vocab_size=config.vocabulary_size, embedding_size=config.embedding_dim,
        hidden_size=config.hidden_dim, num_attention_heads=config.num_heads,
        intermediate_size=config.intermediate_dim, num_hidden_layers=config.num_layers,
        max_position_embeddings=config.max_sequence_length, hidden_act="gelu_new",
        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
    )  # fmt: skip
    if task == "pretraining":
        x, mask_ids, sop_labels = batch
        model = transformers.AlbertForPreTraining(hf_config).train()
        labels = np.full(x["token_ids"].shape, -100, "int64")
        np.put_along_axis(labels, x["mask_positions"], mask_ids, 1)
        extra = dict(labels=torch.tensor(labels),
                     sentence_order_label=torch.tensor(sop_labels, dtype=torch.long))  # fmt: skip
    else:
        x, y = batch
        model = transformers.AlbertForQuestionAnswering(hf_config).train()
        extra = dict(start_positions=torch.tensor(y["start_logits"], dtype=torch.long),
                     end_positions=torch.tensor(y["end_logits"], dtype=torch.long))  # fmt: skip
    inputs = dict(
        input_ids=torch.tensor(x["token_ids"], dtype=torch.long),
        token_type_ids=torch.tensor(x["segment_ids"], dtype=torch.long),
        attention_mask=torch.tensor(x["padding_mask"], dtype=torch.long),
        **extra,
    )
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)

    def step():
        optimizer.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = model(**inputs).loss
        loss.backward()
        optimizer.step()
        return float(loss)

    return step


def runners(config, task, batch):
    return {
        "ours_float32": ours_runner(config, task, batch, "float32", False),
        "ours_bfloat16": ours_runner(config, task, batch, "mixed_bfloat16", False),
        "ours_bfloat16_xla": ours_runner(config, task, batch, "mixed_bfloat16", True),
        "keras_hub_bfloat16": keras_hub_runner(config, task, batch),
        "hf_torch_autocast_bfloat16": hf_runner(config, task, batch),
    }


def plot(results: dict, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, len(results), figsize=(6 * len(results), 4), squeeze=False)
    for axis, (task, result) in zip(axes[0], results.items(), strict=True):
        names = list(result["sequences_per_second"])
        axis.barh(names, [result["sequences_per_second"][name] for name in names])
        axis.set_title(f"{task}: sequences/s")
    figure.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    figure.savefig(path)
    print(f"plot: {path}")


def main(argv=None) -> dict:
    parser = prelude.parser(__file__, __doc__.splitlines()[0])
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--sequence-length", type=int, default=128)
    parser.add_argument("--num-masked", type=int, default=20)
    parser.add_argument("--squad-batch-size", type=int, default=4)
    parser.add_argument("--squad-sequence-length", type=int, default=384)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps-per-round", type=int, default=2)
    parser.add_argument(
        "--quick", action="store_true", help="a tiny model, batch 2, one round: every runner runs"
    )
    parser.add_argument("--plot", default=None, help="write a bar chart (PNG) here")
    args = parser.parse_args(argv)
    prelude.header()
    config = get_preset("albert_base_v2")
    if args.quick:
        config, args.rounds, args.steps_per_round = TINY, 1, 1
        args.batch_size = args.squad_batch_size = 2
    torch.set_num_threads(os.cpu_count())
    roofs = {dtype: gemm_roof(dtype, seconds=0.3 if args.quick else 3.0)
             for dtype in ("float32", "bfloat16")}  # fmt: skip
    print(f"GEMM roof: float32 {roofs['float32']:.0f}, bfloat16 {roofs['bfloat16']:.0f} GFLOP/s")
    tasks = {
        "pretraining": (
            pretraining_batch(
                args.batch_size, args.sequence_length, args.num_masked, config.vocabulary_size
            ),  # fmt: skip
            args.batch_size,
            training_flops_per_sequence(config, args.sequence_length, args.num_masked),
        ),
        "squad": (
            squad_batch(args.squad_batch_size, args.squad_sequence_length, config.vocabulary_size),
            args.squad_batch_size,
            training_flops_per_sequence(config, args.squad_sequence_length, num_outputs=2),
        ),
    }
    results = {}
    for task, (batch, batch_size, flops) in tasks.items():
        print(f"{task}: batch {batch_size}, {flops / 1e9:.3g} GFLOP per sequence")
        rates = interleaved_rates(runners(config, task, batch), batch_size, args.rounds,
                                  args.steps_per_round)  # fmt: skip
        medians = report(rates)
        fraction = {name: rate * flops / 1e9 / roofs["bfloat16"] for name, rate in medians.items()}
        best_ours = max(medians["ours_bfloat16"], medians["ours_bfloat16_xla"])
        best_peer = max(medians["keras_hub_bfloat16"], medians["hf_torch_autocast_bfloat16"])
        ratios = {
            "ours_bfloat16_over_float32": best_ours / medians["ours_float32"],
            "ours_best_over_best_peer": best_ours / best_peer,
        }
        for name, value in fraction.items():
            print(f"  {name}: {value:.2f} of the bfloat16 roof")
        for name, value in ratios.items():
            print(f"  {name}: {value:.2f}x")
        results[task] = {"batch_size": batch_size, "gflop_per_sequence": flops / 1e9,
                         "sequences_per_second": medians, "rounds": rates,
                         "fraction_of_bfloat16_roof": fraction, "ratios": ratios}  # fmt: skip
    results = {"config": config.to_dict(), "quick": args.quick, "gemm_roof_gflops": roofs,
               "tasks": results}  # fmt: skip
    prelude.write_results(args.results_json, results)
    if args.plot:
        plot(results["tasks"], args.plot)
    return results


if __name__ == "__main__":
    main()
