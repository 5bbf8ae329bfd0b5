"""The training loop the drivers run (`keras_albert.training.loop.TrainingLoop`) vs Keras's
`model.fit` path, on one device: ALBERT pretraining (MLM + SOP, LAMB) and SST-2-style
fine-tuning (`AlbertClassifier`, AdamW), same model shape, same batch, same optimizer.

Run by hand: `python -m benchmarks.loop_vs_fit [--preset albert_base_v2] [--batch-size 8]
[--sequence-length 128] [--rounds 5] [--steps-per-round 3]`.

In this one process, interleaved round by round (`benchmarks/interleaved.py`): each side is the
compiled step its path runs, one step per call — `model.train_on_batch` (the train function
`fit` calls once per step) and `TrainingLoop.train(iterator, 1)` over a dataset that repeats
the same batch (the loop's distributed iterator, `strategy.run` and reductions included).
Prints sequences/s, the ratio loop / fit (the floor: ≥ 1.0) and writes the raw rounds to
`--results-json`.
Keras's `fit` cannot run under `MultiWorkerMirroredStrategy` (keras-team/keras#20585), so there
is no multi-worker `fit` to compare with; tests/training/test_multi_worker.py shows the loop's
two-worker runs equal one process.
"""

import os

from benchmarks import prelude  # isort: skip  (first: sets the environment)

import keras
import numpy as np
import tensorflow as tf

from benchmarks.batches import pretraining_batch
from benchmarks.interleaved import interleaved_rates, report
from keras_albert import AlbertBackbone, AlbertPretrainer
from keras_albert.finetuning.driver import build_optimizer
from keras_albert.pretraining.objective import (
    compile_pretrainer,
    pretraining_replica_fn,
)
from keras_albert.tasks.classification.model import AlbertClassifier
from keras_albert.training.lamb import Lamb
from keras_albert.training.loop import TrainingLoop
from keras_albert.training.objective import Objective


def loop_runner(model, optimizer, replica_fn, batch):
    strategy = tf.distribute.get_strategy()
    loop = TrainingLoop(strategy, model, optimizer, replica_fn)
    dataset = tf.data.Dataset.from_tensors(batch).repeat()
    iterator = loop.iterator(lambda context: dataset)
    return lambda: loop.train(iterator, 1)


def pretraining_runners(args, inputs):
    x, mask_ids, sop_labels = inputs
    y = {"mlm_logits": mask_ids, "sop_logits": sop_labels}
    weights = {name: np.ones(value.shape, "float32") for name, value in y.items()}
    runners = {}
    for path in ("fit", "loop"):
        keras.utils.set_random_seed(0)
        model = AlbertPretrainer(AlbertBackbone.from_preset_name(args.preset))
        optimizer = Lamb(1e-4)
        compile_pretrainer(model, optimizer, jit_compile=False)
        if path == "fit":
            runners["pretraining fit"] = lambda m=model: m.train_on_batch(
                x, y, sample_weight=weights
            )
        else:
            optimizer.build(model.trainable_variables)
            runners["pretraining loop"] = loop_runner(
                model, optimizer, pretraining_replica_fn(), (x, y, weights)
            )
    return runners


def finetuning_runners(args, inputs):
    x, _, labels = inputs
    x = {name: value for name, value in x.items() if name != "mask_positions"}
    runners = {}
    for path in ("fit", "loop"):
        keras.utils.set_random_seed(0)
        model = AlbertClassifier(AlbertBackbone.from_preset_name(args.preset), num_classes=2)
        objective = Objective(
            keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            metrics=[keras.metrics.SparseCategoricalAccuracy(name="accuracy")],
        )
        optimizer = build_optimizer(2e-5, 1000, 100, 0.01)
        model.compile(optimizer=optimizer, jit_compile=False, **objective.compile_kwargs())
        if path == "fit":
            runners["finetuning fit"] = lambda m=model: m.train_on_batch(x, labels)
        else:
            optimizer.build(model.trainable_variables)
            runners["finetuning loop"] = loop_runner(
                model, optimizer, objective.replica_fn, (x, labels)
            )
    return runners


def main() -> None:
    parser = prelude.parser(__file__, __doc__.splitlines()[0])
    parser.add_argument("--preset", default="albert_base_v2")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--sequence-length", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps-per-round", type=int, default=3)
    args = parser.parse_args()
    prelude.header()

    config = AlbertBackbone.from_preset_name(args.preset).albert_config
    inputs = pretraining_batch(
        args.batch_size, args.sequence_length, min(20, args.sequence_length - 1),
        config.vocabulary_size,
    )  # fmt: skip
    results = {"args": vars(args), "load_before": os.getloadavg()}
    print(
        f"{args.preset}: batch {args.batch_size}, seq {args.sequence_length}, float32, "
        f"{os.cpu_count()} CPUs, {args.rounds} rounds; load {os.getloadavg()[0]:.1f}"
    )
    for name, make in (("pretraining", pretraining_runners), ("finetuning", finetuning_runners)):
        runners = make(args, inputs)
        rates = interleaved_rates(runners, args.batch_size, args.rounds, args.steps_per_round)
        print(f"{name}:")
        medians = report(rates)
        ratio = medians[f"{name} loop"] / medians[f"{name} fit"]
        print(f"  loop / fit: {ratio:.2f}x")
        results[name] = {"rates": rates, "medians": medians, "loop_over_fit": ratio}
    results["load_after"] = os.getloadavg()
    prelude.write_results(args.results_json, results)


if __name__ == "__main__":
    main()
