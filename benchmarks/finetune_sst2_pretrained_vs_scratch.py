"""SST-2 dev accuracy: a small ALBERT pretrained by our pretraining tool vs the same architecture
from scratch, fine-tuned with the same budget. Run by hand (not a test):

    python -m benchmarks.finetune_sst2_pretrained_vs_scratch \\
        --pretrained runs/austen/model --vocabulary runs/austen/spm/austen.model \\
        --output-dir runs/sst2_compare --scale 0.15

`--pretrained` is a pretraining output directory (with `pretrainer.keras`) or a `.keras` file;
the from-scratch run uses the same architecture (read from that checkpoint) and the same
tokenizer, options, steps and seed. Prints one JSON line per run and a comparison table.

Measured 2026-11-22 on the shared 2-core CPU, with the pretraining driver's first Austen run
(runs/austen/model: 4 layers, hidden 128, embedding 128, 8000-piece Austen SentencePiece;
1200 LAMB steps of 32 x 128 tokens; held-out MLM accuracy 0.149, SOP 0.595; it still fills
every [MASK] of a test sentence with ","): SST-2 dev accuracy, best of the evaluations.

    budget                                  seed  pretrained  scratch
    full train set, --scale 0.15 (3141 st)     0      0.7718   0.7844
                                               1      0.7775   0.7764
    2000 examples, --scale 0.03 --epochs 5     0      0.6193   0.7122
    (630 steps)                                1      0.6021   0.6995

(lr 1e-4, batch 32, 64 tokens; majority class 0.5092; one run's standard error ~0.014.)
This pretraining has not left the unigram phase of MLM, and it does not help; in the
low-data regime it hurts. Pretraining's benefit needs an MLM that predicts from context.
"""

import json
import os
import time

from benchmarks import prelude  # isort: skip  (first: sets the environment)

import keras
import numpy as np

from keras_albert.convert import resolve_config
from keras_albert.finetuning.driver import FinetuningOptions, finetune


def main() -> None:
    parser = prelude.parser(__file__, __doc__.splitlines()[0])
    parser.add_argument("--pretrained", required=True)
    parser.add_argument("--vocabulary", "--sentencepiece-model", required=True)
    parser.add_argument("--glue-dir", default=prelude.data_path("glue"))
    parser.add_argument("--output-dir", required=True)
    parser.add_argument("--scale", type=float, default=0.15, help="times run_glue.sh's steps")
    parser.add_argument("--learning-rate", type=float, default=1e-4)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--sequence-length", type=int, default=64)
    parser.add_argument("--epochs", type=int, default=3, help="evaluations")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--train-examples", type=int, help="fine-tune on a random subset of this many examples"
    )
    args = parser.parse_args()
    prelude.header()

    os.makedirs(args.output_dir, exist_ok=True)
    config_path = os.path.join(args.output_dir, "albert_config.json")
    resolve_config(args.pretrained).to_json(config_path)
    keras.backend.clear_session()

    train_data = os.path.join(args.glue_dir, "SST-2", "train.tsv")
    if args.train_examples:
        train_data = _subset(train_data, args.train_examples, args.seed, args.output_dir)
    common = dict(
        dataset="SST-2",
        train_data=train_data,
        eval_data=os.path.join(args.glue_dir, "SST-2", "dev.tsv"),
        vocabulary=args.vocabulary,
        sequence_length=args.sequence_length,
        scale=args.scale,
        learning_rate=args.learning_rate,
        batch_size=args.batch_size,
        num_evaluations=args.epochs,
        seed=args.seed,
        verbose=2,
    )
    results = {}
    for name, source in (
        ("pretrained", dict(init_checkpoint=args.pretrained)),
        ("scratch", dict(config=config_path)),
    ):
        started = time.perf_counter()
        summary = finetune(
            FinetuningOptions(output_dir=os.path.join(args.output_dir, name), **common, **source)
        )
        keras.backend.clear_session()
        results[name] = {
            "best_accuracy": summary["best"]["accuracy"],
            "accuracy_per_epoch": [row["accuracy"] for row in summary["history"]],
            "train_steps": summary["train_steps"],
            "seconds": round(time.perf_counter() - started, 1),
        }
        print(json.dumps({name: results[name]}))
    majority = _majority_baseline(common["eval_data"])
    print(f"\nSST-2 dev accuracy (872 examples; majority class {majority:.4f}):")
    for name, row in results.items():
        print(
            f"  {name:10s} best {row['best_accuracy']:.4f}  per epoch "
            f"{[round(a, 4) for a in row['accuracy_per_epoch']]}  "
            f"{row['train_steps']} steps, {row['seconds']} s"
        )
    prelude.write_results(
        args.results_json, {"args": vars(args), "majority": majority, "results": results}
    )


def _subset(path: str, size: int, seed: int, output_dir: str) -> str:
    """A TSV of `size` random rows of `path` (header kept), for the low-data regime."""
    with open(path, encoding="utf-8") as file:
        header, *rows = file.readlines()
    chosen = sorted(np.random.default_rng(seed).choice(len(rows), size, replace=False))
    subset = os.path.join(output_dir, f"train_{size}.tsv")
    with open(subset, "w", encoding="utf-8") as file:
        file.writelines([header] + [rows[i] for i in chosen])
    return subset


def _majority_baseline(path: str) -> float:
    from keras_albert.tasks.classification.reader import read_examples

    labels = read_examples(path, "SST-2").labels
    return float(max(labels.mean(), 1 - labels.mean()))


if __name__ == "__main__":
    main()
