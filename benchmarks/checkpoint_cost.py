"""What fine-tuning's resumable checkpoints cost: seconds per checkpoint of a base-shaped SQuAD
model vs its train step, and what skipping the trained batches costs at resume.

Run by hand: `python -m benchmarks.checkpoint_cost [--preset albert_base_v2]
[--sequence-length 384] [--batch-size 2] [--steps 6] [--saves 4]`.

In this one process:
- the train step of `AlbertQuestionAnswerer` (null span) on a random batch, with the driver's
  AdamW (`finetuning.driver.build_optimizer`), median of `--steps` after one warm-up step;
- one checkpoint as the driver writes it (`training.checkpoints.training_checkpoint`: model,
  optimizer slots, dropout state and a progress record, through `tf.train.CheckpointManager`
  keeping 3), median of `--saves` after one warm-up save, and its size on disk;
- the checkpoint's share of the training time at an interval of `--interval-steps` steps
  (by default 1,847: the SQuAD v1.1 recipe's steps between evaluations, one pass over 88,641
  windows at batch 48, where the driver checkpoints by default). The step measured here is of
  `--batch-size` rows, so at the recipe's batch of 48 the share is smaller still;
- the resume's skip: the seeded training stream of the SQuAD sample in tests/data (384-token
  windows) skipped by `--interval-steps` batches, the time to the first batch after them; and
  the same for SST-2 (data/glue/SST-2/train.tsv, batch 32, length 128), whose stream
  tokenizes in the graph after batching, so that a skipped batch is tokenized, not trained.
Prints the figures and writes them as JSON (`--results-json`).
"""

import os
import shutil
import statistics
import tempfile
import time

from benchmarks import prelude  # isort: skip  (first: sets the environment)

import numpy as np
import tensorflow as tf

from keras_albert import AlbertBackbone, AlbertQuestionAnswerer, get_preset
from keras_albert.finetuning.driver import build_optimizer
from keras_albert.tasks.classification.reader import make_dataset, read_examples
from keras_albert.tasks.question_answering.features import (
    feature_arrays,
    read_squad_examples,
    squad_features,
)
from keras_albert.text.pipeline import example_batches
from keras_albert.text.tokenizer import AlbertTokenizer
from keras_albert.training.checkpoints import JsonState, training_checkpoint

SQUAD_SAMPLE = str(prelude.TEST_DATA / "squad" / "expmrc-squad-dev-sample.json")
SENTENCEPIECE = str(prelude.TEST_DATA / "30k-clean.model")
SST2_TRAIN = prelude.data_path("glue", "SST-2", "train.tsv")


def main() -> None:
    parser = prelude.parser(__file__, __doc__.splitlines()[0])
    parser.add_argument("--preset", default="albert_base_v2")
    parser.add_argument("--sequence-length", type=int, default=384)
    parser.add_argument("--batch-size", type=int, default=2)
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--saves", type=int, default=4)
    parser.add_argument("--interval-steps", type=int, default=1847)
    args = parser.parse_args()
    prelude.header()

    # The train step.
    config = get_preset(args.preset)
    model = AlbertQuestionAnswerer(AlbertBackbone.from_albert_config(config))
    optimizer = build_optimizer(5e-5, 10_000, 1000, 0.01)
    model.compile(optimizer=optimizer, **model.training_loss())
    rng = np.random.default_rng(0)
    shape = (args.batch_size, args.sequence_length)
    x = {
        "token_ids": rng.integers(5, config.vocabulary_size, shape).astype("int32"),
        "segment_ids": np.zeros(shape, "int32"),
        "padding_mask": np.ones(shape, "int32"),
    }
    starts = rng.integers(1, args.sequence_length - 4, args.batch_size).astype("int32")
    y = {"start_logits": starts, "end_logits": starts + 3}
    model.train_on_batch(x, y)  # compiles
    step_seconds = []
    for _ in range(args.steps):
        started = time.perf_counter()
        model.train_on_batch(x, y)
        step_seconds.append(time.perf_counter() - started)
    step = statistics.median(step_seconds)

    # The checkpoint, as the driver writes it.
    directory = tempfile.mkdtemp(prefix="checkpoint_cost-")
    try:
        state = JsonState()
        checkpoint = training_checkpoint(model, optimizer, progress=state)
        manager = tf.train.CheckpointManager(checkpoint, directory, max_to_keep=3)
        state.set({"history": [], "best_value": 0.0, "totals": {"loss": 1.0}})
        manager.save(checkpoint_number=0)  # warm-up: traces the save
        save_seconds = []
        for number in range(1, args.saves + 1):
            started = time.perf_counter()
            manager.save(checkpoint_number=number)
            save_seconds.append(time.perf_counter() - started)
        size = prelude.directory_bytes(directory) / min(args.saves + 1, 3)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    save = statistics.median(save_seconds)

    # The resume's skip over the seeded stream.
    tokenizer = AlbertTokenizer(SENTENCEPIECE)
    features = list(
        squad_features(read_squad_examples(SQUAD_SAMPLE), tokenizer, args.sequence_length)
    )
    x_sample, y_sample = model.training_targets(feature_arrays(features))
    dataset = example_batches((x_sample, y_sample), len(features), args.batch_size, True, 0)
    started = time.perf_counter()
    next(iter(dataset))
    first_batch = time.perf_counter() - started
    started = time.perf_counter()
    next(iter(dataset.skip(args.interval_steps)))
    skip = time.perf_counter() - started

    sst2 = make_dataset(read_examples(SST2_TRAIN, "SST-2"), tokenizer, 128, 32, True, 0)
    started = time.perf_counter()
    next(iter(sst2.skip(args.interval_steps)))
    sst2_skip = time.perf_counter() - started

    share = save / (save + args.interval_steps * step)
    results = {
        "preset": args.preset,
        "sequence_length": args.sequence_length,
        "batch_size": args.batch_size,
        "num_parameters": int(model.count_params()),
        "step_seconds": step_seconds,
        "step_seconds_median": step,
        "checkpoint_seconds": save_seconds,
        "checkpoint_seconds_median": save,
        "checkpoint_megabytes": size / 1e6,
        "interval_steps": args.interval_steps,
        "checkpoint_share_of_training": share,
        "checkpoint_in_steps": save / step,
        "sample_windows": len(features),
        "first_batch_seconds": first_batch,
        "skip_seconds": skip,
        "skipped_batches": args.interval_steps,
        "sst2_skip_seconds": sst2_skip,
    }
    print(
        f"{args.preset} SQuAD head, {args.batch_size} x {args.sequence_length}, "
        f"{results['num_parameters']:,} parameters, {os.cpu_count()} CPUs"
    )
    print(f"train step: {step:.3f} s (median of {args.steps})")
    print(
        f"checkpoint: {save:.3f} s (median of {args.saves}; {size / 1e6:.0f} MB) = "
        f"{save / step:.2f} steps; every {args.interval_steps} steps: {share:.3%} of the time"
    )
    print(
        f"resume skip of {args.interval_steps} batches ({len(features)} windows, repeated): "
        f"{skip:.3f} s (first batch without skip {first_batch:.3f} s); SST-2, batch 32, "
        f"tokenized in the graph: {sst2_skip:.2f} s"
    )
    prelude.write_results(args.results_json, results)


if __name__ == "__main__":
    main()
