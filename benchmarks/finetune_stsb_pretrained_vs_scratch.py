"""STS-B dev Spearman of sentence embeddings: the main job's pretrained ALBERT vs the same
architecture from scratch, each fine-tuned as a text embedder (`--dataset stsb_embedding`) on
STS-B's train pairs with the same budget, once per seed. Run by hand (not a test):

    python -m benchmarks.finetune_stsb_pretrained_vs_scratch --output-dir runs/stsb_compare

The pretrained model is the main job's: its own steps (`run_steps`: corpus → tokenizer →
pretraining records → pretraining) with its options, in its output directory (`runs/main` by
default); finished steps are skipped, so after `bash tools/run.sh main` nothing is pretrained
again. Every flag of `examples/main.py` after `--` sets that job, e.g. `-- --quick` (a smoke
run) or `-- --output-dir runs/other`; the job's precision and XLA setting apply to the
fine-tuning runs too.

Each seed fine-tunes twice, one side after the other: from the pretraining checkpoint, and
from the same architecture (read from that checkpoint) at random, with the job's tokenizer and
the same recipe, steps and seed: the task type's default recipe (cosine loss, batch 16, 4
epochs, 10 % warmup, peak rate 2e-5) unless `--learning-rate`, `--epochs` or `--train-steps`
say otherwise, at the model's longest sequence. Each run is scored by its last evaluation (no
checkpoint is chosen on the dev set the difference is measured on); the best evaluation is
recorded too. Beside them, each side's model before fine-tuning (mean-pooled, as the
embedder pools) is scored on the same dev pairs. Prints one JSON line per run and a table;
writes the raw results with `--results-json`.

Measured (the command, the budget and the table): docs/guides/finetuning.md, "STS-B from the
main job's pretraining vs from scratch".
"""

import argparse
import dataclasses
import json
import os
import sys
import time

from benchmarks import prelude  # isort: skip  (first: sets the environment)

import keras

from examples.main_job import MainJobOptions, run_steps
from examples.main_job.flags import add_job_flags, parse_job_flags
from examples.main_job.options import parse_seeds
from examples.main_job.steps import mean_and_range, read_result, seed_gains, tokenizer_path
from keras_albert.convert import load_checkpoint, resolve_config
from keras_albert.finetuning.driver import FinetuningOptions, finetune
from keras_albert.finetuning.task_choice import make_task
from keras_albert.tasks.text_embedding.model import AlbertTextEmbedder
from keras_albert.tasks.text_embedding.options import STSB
from keras_albert.tasks.text_embedding.reader import read_pairs
from keras_albert.text.tokenizer import AlbertTokenizer

SIDES = ("pretrained", "scratch")
METRICS = ("spearman", "pearson")
PRETRAINING_STEPS = ("corpus", "tokenizer", "pretraining_data", "pretraining")


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    split = argv.index("--") if "--" in argv else len(argv)
    ours, job = argv[:split], argv[split + 1 :]
    parser = prelude.parser(__file__, __doc__.splitlines()[0])
    parser.add_argument("--output-dir", required=True, help="the fine-tuning runs go here")
    parser.add_argument("--train-data", default=prelude.data_path("glue", "STS-B", "train.tsv"))
    parser.add_argument("--eval-data", default=prelude.data_path("glue", "STS-B", "dev.tsv"))
    parser.add_argument("--seeds", type=parse_seeds, default=(0, 1, 2), metavar="SEED,...")
    parser.add_argument("--learning-rate", type=float, help="default: the task type's recipe")
    parser.add_argument("--epochs", type=int, help="passes over the train pairs (default: 4)")
    parser.add_argument("--train-steps", type=int, help="overrides --epochs")
    parser.add_argument("--batch-size", type=int, help="default: the task type's recipe")
    parser.add_argument(
        "--sequence-length", type=int, help="default: the model's max_sequence_length"
    )
    parser.add_argument("--num-evaluations", type=int, default=4)
    args = parser.parse_args(ours)
    job_parser = add_job_flags(argparse.ArgumentParser(prog="python -m examples.main"))
    job_options = parse_job_flags(job_parser, job)
    prelude.header()

    started = time.perf_counter()
    pretraining = _pretraining(job_options)
    checkpoint = job_options.path("pretraining", "model")
    config = resolve_config(checkpoint)
    config_path = os.path.join(args.output_dir, "albert_config.json")
    os.makedirs(args.output_dir, exist_ok=True)
    config.to_json(config_path)
    keras.backend.clear_session()

    common = dict(
        dataset="stsb_embedding",
        train_data=args.train_data,
        eval_data=args.eval_data,
        vocabulary=tokenizer_path(job_options),
        sequence_length=args.sequence_length or config.max_sequence_length,
        learning_rate=args.learning_rate,
        batch_size=args.batch_size,
        train_steps=args.train_steps or _epoch_steps(args),
        num_evaluations=args.num_evaluations,
        precision=job_options.precision,
        jit_compile=job_options.jit_compile,
        verbose=1,
    )
    sources = {"pretrained": dict(init_checkpoint=checkpoint), "scratch": dict(config=config_path)}
    runs, before = {side: [] for side in SIDES}, {}
    for seed in args.seeds:
        for side in SIDES:
            options = FinetuningOptions(
                output_dir=os.path.join(args.output_dir, side, f"seed_{seed}"),
                seed=seed,
                force=True,
                **common,
                **sources[side],
            )
            # The pretrained side starts from the same weights whatever the seed: scored once.
            if side == "scratch" or side not in before:
                before[side], texts_cut = _untrained(options)
            runs[side].append({"seed": seed, **_run(options, before[side])})
            print(json.dumps({side: runs[side][-1]}), flush=True)
        # Written after every seed: an interrupted measurement keeps the seeds it finished.
        results = _results(args, job_options, pretraining, common, texts_cut, runs, started)
        prelude.write_results(args.results_json, results)
    print(table(results))


def _results(args, job_options, pretraining, common, texts_cut, runs, started) -> dict:
    """The raw results of the seeds finished so far."""
    first = runs["pretrained"][0]
    seeds = [run["seed"] for run in runs["scratch"]]
    return {
        "pretraining": pretraining,
        "job_options": dataclasses.asdict(job_options),
        "finetuning": {
            "common": common,
            **{key: first[key] for key in ("recipe", "train_steps", "sequence_length")},
            "precision": first["precision"],
            "texts_cut": texts_cut,
        },
        "seeds": seeds,
        "finished": seeds == list(args.seeds),
        "runs": {side: runs[side][: len(seeds)] for side in SIDES},
        "difference": {
            metric: seed_gains(
                [run["last"][metric] for run in runs["pretrained"][: len(seeds)]],
                [run["last"][metric] for run in runs["scratch"]],
            )
            for metric in METRICS
        },
        "total_seconds": round(time.perf_counter() - started, 1),
    }


def _epoch_steps(args) -> int | None:
    """`--epochs` as steps (None: the recipe's epochs)."""
    if args.epochs is None:
        return None
    pairs = len(read_pairs(args.train_data, layout=STSB).first)
    batch = args.batch_size or 16
    return args.epochs * -(-pairs // batch)


def _pretraining(job_options: MainJobOptions) -> dict:
    """The job's steps up to pretraining (skipped where finished); what they took and gave."""
    results = run_steps(job_options, PRETRAINING_STEPS)
    summary = read_result(job_options, "pretraining")["summary"]
    return {
        "step_seconds": {name: result["seconds"] for name, result in results.items()},
        "precision": summary.get("precision"),
        "held_out": summary.get("eval"),
        "train_steps": job_options.pretrain_train_steps,
    }


def _run(options: FinetuningOptions, before: dict) -> dict:
    """One fine-tuning run; `before`: its starting model's dev figures (`_untrained`)."""
    keras.backend.clear_session()
    started = time.perf_counter()
    summary = finetune(options)
    seconds = round(time.perf_counter() - started, 1)
    keras.backend.clear_session()
    history = summary["history"]
    return {
        "before_finetuning": before,
        "last": {metric: history[-1][metric] for metric in METRICS},
        "best": {metric: summary["best"][metric] for metric in METRICS},
        "per_evaluation": [
            {"step": row["step"], **{m: row[m] for m in METRICS}} for row in history
        ],
        "recipe": summary["recipe"],
        "train_steps": summary["train_steps"],
        "sequence_length": summary["sequence_length"],
        "precision": summary["precision"],
        "seconds": seconds,
    }


def _untrained(options: FinetuningOptions) -> tuple[dict, dict]:
    """The dev Spearman and Pearson of a run's starting model (mean pooling, float32): the
    pretraining checkpoint's encoder, or the architecture initialized under the run's seed;
    and how many train and dev texts the sequence length cuts."""
    keras.utils.set_random_seed(options.seed)  # as the driver seeds before it builds
    tokenizer = AlbertTokenizer(options.vocabulary)
    task = make_task(options, tokenizer)
    backbone = load_checkpoint(options.init_checkpoint or options.config, model="backbone")
    model = AlbertTextEmbedder(backbone, pooling=task.options.task_options.pooling)
    metrics = task.evaluate(model, batch_size=64)
    return metrics, {
        "train": _cut(tokenizer, task.train, task.sequence_length),
        "dev": _cut(tokenizer, task.evaluation, task.sequence_length),
    }


def _cut(tokenizer, pairs, sequence_length: int) -> str:
    """ "k of n": the texts of `pairs` longer than `sequence_length` with [CLS] and [SEP]."""
    texts = [*pairs.first, *pairs.second]
    lengths = [len(ids) + 2 for ids in tokenizer(texts).to_list()]
    return f"{sum(length > sequence_length for length in lengths)} of {len(texts)}"


def table(results: dict) -> str:
    """Per seed: pretrained, scratch and their difference (last evaluation); mean and min."""
    runs, lines = results["runs"], []
    for metric in METRICS:
        difference = results["difference"][metric]
        lines.append(f"\nSTS-B dev {metric} (last evaluation; before fine-tuning in brackets):")
        lines.append("  seed  pretrained         scratch            difference")
        for pretrained, scratch, gain in zip(
            runs["pretrained"], runs["scratch"], difference["per_seed"], strict=True
        ):
            lines.append(
                f"  {pretrained['seed']:4d}  {_cell(pretrained, metric)}  "
                f"{_cell(scratch, metric)}  {gain:+.4f}"
            )
        for name in SIDES:
            values = mean_and_range([run["last"][metric] for run in runs[name]])
            lines.append(f"  {name}: mean {values['mean']:.4f}, min {values['range'][0]:.4f}")
        lines.append(
            f"  difference: mean {difference['mean']:+.4f}, min {difference['range'][0]:+.4f}, "
            f"max {difference['range'][1]:+.4f}"
        )
    return "\n".join(lines)


def _cell(run: dict, metric: str) -> str:
    return f"{run['last'][metric]:.4f} ({run['before_finetuning'][metric]:.4f})"


if __name__ == "__main__":
    main()
