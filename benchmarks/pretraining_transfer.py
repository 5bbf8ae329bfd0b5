"""Does our pretraining pay off? The main job's pretraining (task-adaptive text: Austen +
WikiText-2 + SST-2's unlabeled training sentences, SentencePiece on all of it) vs the same
architecture from scratch, fine-tuned on SST-2 with 1,000 labels and with the main job's
20,000, three seeds each; and the paper's SOP-vs-NSP table (Lan et al. 2020, Table 5) in
miniature. Run by hand (not a test):

    python -m benchmarks.pretraining_transfer --work-dir runs/transfer --stages all

Every flag of `examples/main.py` (the main job's `MainJobOptions`) after `--` sets the job
this benchmark runs, e.g. `-- --pair-task nsp --pretrain-train-steps 3000`; `--work-dir` is its
`--output-dir`. Stages (each skips what is already written under `--work-dir`):

- `pretrain`: the main job's own steps (`run_steps`: corpus → tokenizer → records →
  pretraining), then the held-out text as an SOP set and an NSP set
  (`intrinsic_sets.write_intrinsic_sets`, made as the job's held-out records are).
- `intrinsic`: the run's held-out SOP and NSP accuracy (`intrinsic_eval`). Run it for a
  `--pair-task sop` and a `--pair-task nsp` work dir, then `table` writes the 2×2 table.
- `finetune`: per regime (`--label-counts`), each side (pretrained, scratch) picks its learning
  rate from `--learning-rates` on a split of the sampled TRAINING rows (80 % train, 20 %
  validation, seed 0; the dev set is never used for a choice), then fine-tunes on the whole
  sample for each `--seeds` and is scored once, at the end, on the dev set. `--task` picks
  another GLUE task (`--train-data`, `--dev-data`: its files; its main metric is the score),
  e.g. `--task STS-B --label-counts 1000 6000` for the second task of the protocol.
- `probe` (after `finetune`, on its samples; classification tasks): logistic regression on
  frozen features — the pretrained encoder's, the same architecture's at random, and a bag
  of SentencePiece pieces — to show what pretraining put in the encoder before fine-tuning.

Writes `<work-dir>/transfer_<task>.json` and `transfer_<task>.png` (and `table.json`,
`table.png`).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys

from benchmarks import prelude  # isort: skip  (first: sets the environment)

from examples.main_job import MainJobOptions, run_steps
from examples.main_job.curves import pyplot, save_png
from examples.main_job.flags import add_job_flags, parse_job_flags
from examples.main_job.steps import (
    finetuning_options,
    mean_and_range,
    pretraining_data_config,
    read_result,
    sample_tsv,
    seed_gains,
    tokenizer_factory,
    tokenizer_path,
    write_tsv,
)


def _done(path: str) -> bool:
    return os.path.exists(path)


def _write_json(path: str, value) -> None:
    from keras_albert.text.files import write_text_atomically

    write_text_atomically(path, json.dumps(value, indent=2))


def pretrain_stage(args, options: MainJobOptions) -> dict:
    from keras_albert.pretraining.data.intrinsic_sets import write_intrinsic_sets

    results = run_steps(options, ("corpus", "tokenizer", "pretraining_data", "pretraining"))
    sets_path = options.path("held_out_sets.json")
    if not _done(sets_path):
        sets = write_intrinsic_sets(
            read_result(options, "corpus")["held_out_file"],
            options.path("held_out_sets"),
            tokenizer_factory(options),
            pretraining_data_config(options, "eval"),
        )
        _write_json(sets_path, sets)
    return results


def intrinsic_stage(args, options: MainJobOptions) -> dict:
    from keras_albert.pretraining.intrinsic_eval import evaluate_sentence_pairs, load_pretrainer

    model = load_pretrainer(options.path("pretraining", "model"))
    result = {"pair_task_trained": options.pair_task}
    for task in ("sop", "nsp"):
        records = options.path("held_out_sets", f"{task}-*.tfrecord")
        result[task] = evaluate_sentence_pairs(model, records)
    _write_json(options.path("intrinsic.json"), result)
    print(json.dumps(result, indent=2))
    return result


def table_stage(args, options: MainJobOptions) -> dict:
    from keras_albert.pretraining.intrinsic_eval import PAPER_TABLE_5

    rows = {}
    for work_dir in args.table_runs:
        with open(os.path.join(work_dir, "intrinsic.json"), encoding="utf-8") as f:
            result = json.load(f)
        name = f"{result['pair_task_trained']}_trained"
        rows[name] = {task: round(result[task]["pair_accuracy"], 4) for task in ("nsp", "sop")} | {
            "mlm": round(result["sop"]["mlm_accuracy"], 4),
            "run": work_dir,
        }
    table = {"ours": rows, "paper_table_5": PAPER_TABLE_5}
    prelude.write_results(options.path("table.json"), table)
    _plot_table(rows, PAPER_TABLE_5, options.path("table.png"))
    print("trained on \\ evaluated on   NSP (paper)      SOP (paper)")
    for name, row in rows.items():
        paper = PAPER_TABLE_5.get(name, {})
        print(
            f"{name:26s} {row['nsp']:.3f} ({paper.get('nsp', float('nan')):.3f})   "
            f"{row['sop']:.3f} ({paper.get('sop', float('nan')):.3f})"
        )
    return table


def _plot_table(rows: dict, paper: dict, path: str) -> None:
    """Bars per (trained on, evaluated on) cell: ours beside the paper's."""
    plt = pyplot()
    cells = [(name, task) for name in rows for task in ("nsp", "sop")]
    labels = [f"{name.split('_')[0].upper()}-trained\non {task.upper()}" for name, task in cells]
    figure, axis = plt.subplots(figsize=(6, 4))
    positions = range(len(cells))
    axis.bar([i - 0.2 for i in positions], [rows[n][t] for n, t in cells], 0.4, label="ours")
    axis.bar(
        [i + 0.2 for i in positions],
        [paper.get(n, {}).get(t, float("nan")) for n, t in cells],
        0.4,
        label="paper (Table 5)",
    )
    axis.axhline(0.5, color="k", linestyle=":", linewidth=1)
    axis.set_xticks(list(positions), labels)
    axis.set_ylabel("held-out accuracy")
    axis.set_ylim(0.4, 1.0)
    axis.legend()
    save_png(figure, path)


def probe_stage(args, options: MainJobOptions) -> dict:
    """Linear probes on frozen features: does the pretrained encoder hold what the task needs,
    before any fine-tuning? Logistic regression on the mean of the last layer's outputs over
    the real tokens, for the pretrained backbone and for the same architecture at random
    (seeded), beside a bag of SentencePiece pieces (the words themselves, no encoder). The
    regularization is chosen on the 80/20 split of the training sample, never on dev."""
    import keras
    import numpy as np
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.linear_model import LogisticRegression

    from keras_albert.models.backbone import AlbertBackbone
    from keras_albert.pretraining.intrinsic_eval import load_pretrainer
    from keras_albert.tasks.classification.reader import make_dataset, read_examples
    from keras_albert.text.tokenizer import AlbertTokenizer

    keras.utils.set_random_seed(options.seed)  # before the tokenizer: seeding drops its op
    tokenizer = AlbertTokenizer(tokenizer_path(options))
    name = args.task.lower()
    dev = read_examples(args.dev_data or options.finetune_eval_data, args.task)
    if dev.labels.dtype.kind == "f":
        raise ValueError(
            f"`task` must be a classification task for `probe`. Received: task={args.task}"
        )
    pretrained = load_pretrainer(options.path("pretraining", "model")).backbone
    encoders = {
        "pretrained": pretrained,
        "random": AlbertBackbone.from_config(pretrained.get_config()),
    }

    def mean_output(encoder, examples):
        data = make_dataset(examples, tokenizer, options.finetune_sequence_length, 128)
        rows = []
        for inputs, _ in data:
            outputs = encoder(inputs, training=False)["sequence_output"]
            mask = keras.ops.cast(inputs["padding_mask"], outputs.dtype)[..., None]
            rows.append(np.asarray(keras.ops.sum(outputs * mask, 1) / keras.ops.sum(mask, 1)))
        return np.concatenate(rows)

    dev_features = {side: mean_output(encoder, dev) for side, encoder in encoders.items()}
    results = {}
    for count in args.label_counts:
        root = options.path("transfer", name, f"labels_{count}")
        parts = {
            part: read_examples(os.path.join(root, f"{part}.tsv"), args.task)
            for part in ("split_train", "split_validation", "train")
        }
        features = {
            side: {
                "dev": dev_features[side],
                **{part: mean_output(encoder, ex) for part, ex in parts.items()},
            }
            for side, encoder in encoders.items()
        }
        parts["dev"] = dev
        pieces = CountVectorizer(
            analyzer=lambda text: tokenizer.encode_pieces(text), binary=True
        ).fit([" ".join(t) for t in zip(*parts["train"].texts, strict=True)])
        features["bag_of_pieces"] = {
            part: pieces.transform([" ".join(t) for t in zip(*ex.texts, strict=True)])
            for part, ex in parts.items()
        }
        results[f"labels_{count}"] = {}
        for side, table in features.items():
            grid = {}
            for strength in (0.01, 0.1, 1.0, 10.0, 100.0):
                model = LogisticRegression(C=strength, max_iter=5000)
                model.fit(table["split_train"], parts["split_train"].labels)
                grid[strength] = model.score(
                    table["split_validation"], parts["split_validation"].labels
                )
            chosen = max(grid, key=grid.get)
            model = LogisticRegression(C=chosen, max_iter=5000)
            model.fit(table["train"], parts["train"].labels)
            results[f"labels_{count}"][side] = {
                "C_grid_on_train_split": {str(k): v for k, v in grid.items()},
                "C": chosen,
                "dev_accuracy": model.score(table["dev"], parts["dev"].labels),
            }
    prelude.write_results(options.path(f"probe_{name}.json"), results)
    print(json.dumps(results, indent=2))
    return results


def _finetune_scores(args, options: MainJobOptions, runs: list[dict]) -> list[float]:
    """Each run's score on its eval file, once, at the end; the runs not done before are
    trained `options.finetune_processes` at a time (`parallel_runs.finetune_runs`).

    A run: `side`, `train_file`, `eval_file`, `lr`, `seed`, `output_dir`, `num_rows`."""
    from keras_albert.finetuning.parallel_runs import finetune_runs

    def score_path(run):
        return os.path.join(run["output_dir"], "score.json")

    todo, plans = [run for run in runs if not _done(score_path(run))], []
    for run in todo:
        steps = max(
            args.finetune_min_steps,
            args.finetune_epochs * run["num_rows"] // options.finetune_batch_size,
        )
        steps = min(steps, options.finetune_train_steps)
        plans.append(
            finetuning_options(
                options,
                run["side"] == "scratch",
                dataset=args.task,
                train_data=run["train_file"],
                eval_data=run["eval_file"],
                output_dir=run["output_dir"],
                learning_rate=run["lr"],
                train_steps=steps,
                num_evaluations=1,  # one, at the end: no checkpoint is chosen on the eval set
                seed=run["seed"],
                verbose=0,
            )
        )

    def record(index, summary, seconds):
        run, plan = todo[index], plans[index]
        score = float(summary["history"][-1][summary["main_metric"]])
        _write_json(
            score_path(run), {"score": score, "learning_rate": run["lr"], "steps": plan.train_steps}
        )
        print(
            f"  {run['side']} lr={run['lr']} seed={run['seed']} rows={run['num_rows']} "
            f"steps={plan.train_steps}: {score:.4f} ({seconds:.0f} s)",
            flush=True,
        )

    finetune_runs(plans, options.finetune_processes, on_finish=record)
    scores = []
    for run in runs:
        with open(score_path(run), encoding="utf-8") as f:
            scores.append(json.load(f)["score"])
    return scores


def finetune_stage(args, options: MainJobOptions) -> dict:
    train = args.train_data or options.finetune_train_data
    dev = args.dev_data or options.finetune_eval_data
    name = args.task.lower()
    results = {}
    for count in args.label_counts:
        regime = f"labels_{count}"
        root = options.path("transfer", name, regime)
        os.makedirs(root, exist_ok=True)
        sample = os.path.join(root, "train.tsv")
        header, rows = sample_tsv(train, sample, count, 0)
        cut = int(0.8 * len(rows))
        fit_file = write_tsv(os.path.join(root, "split_train.tsv"), header, rows[:cut])
        val_file = write_tsv(os.path.join(root, "split_validation.tsv"), header, rows[cut:])
        # Every side's learning-rate grid on the split, then every side's seeds with its choice.
        grid_runs = {
            (side, lr): dict(
                side=side,
                train_file=fit_file,
                eval_file=val_file,
                lr=lr,
                seed=0,
                output_dir=os.path.join(root, side, f"select_lr{lr}"),
                num_rows=cut,
            )
            for side in args.sides
            for lr in args.learning_rates
        }
        grid_scores = dict(
            zip(grid_runs, _finetune_scores(args, options, list(grid_runs.values())), strict=True)
        )
        grids = {
            side: {lr: grid_scores[side, lr] for lr in args.learning_rates} for side in args.sides
        }
        if args.grid_only:
            continue
        chosen = {side: max(grid, key=grid.get) for side, grid in grids.items()}
        final_runs = {
            (side, seed): dict(
                side=side,
                train_file=sample,
                eval_file=dev,
                lr=chosen[side],
                seed=seed,
                output_dir=os.path.join(root, side, f"final_lr{chosen[side]}_seed{seed}"),
                num_rows=len(rows),
            )
            for side in args.sides
            for seed in args.seeds
        }
        final_scores = dict(
            zip(final_runs, _finetune_scores(args, options, list(final_runs.values())), strict=True)
        )
        results[regime] = {}
        for side in args.sides:
            scores = [final_scores[side, seed] for seed in args.seeds]
            results[regime][side] = {
                "learning_rate_grid_on_train_split": {str(k): v for k, v in grids[side].items()},
                "learning_rate": chosen[side],
                "dev_scores": scores,
                **mean_and_range(scores),
            }
        if {"pretrained", "scratch"} <= set(results[regime]):
            results[regime]["gain"] = seed_gains(
                results[regime]["pretrained"]["dev_scores"],
                results[regime]["scratch"]["dev_scores"],
            )
        record = {"args": vars(args), "job": dataclasses.asdict(options), **results}
        prelude.write_results(options.path(f"transfer_{name}.json"), record)
        print(json.dumps({regime: results[regime]}, indent=2), flush=True)
    if not args.grid_only:
        _plot(results, options.path(f"transfer_{name}.png"), args.task)
    return results


def _plot(results: dict, path: str, task: str) -> None:
    plt = pyplot()
    figure, axis = plt.subplots(figsize=(6, 4))
    for offset, side in ((-0.15, "pretrained"), (0.15, "scratch")):
        for i, regime in enumerate(results):
            if side not in results[regime]:
                continue
            scores = results[regime][side]["dev_scores"]
            axis.scatter(
                [i + offset] * len(scores),
                scores,
                color="C0" if offset < 0 else "C1",
                label=side if i == 0 else None,
            )
            mean = results[regime][side]["mean"]
            axis.hlines(mean, i + offset - 0.1, i + offset + 0.1, color="k")
    axis.set_xticks(range(len(results)), list(results))
    axis.set_ylabel(f"{task} dev score")
    axis.legend()
    save_png(figure, path)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n")[0],
        epilog="Flags after `--` are the main job's (bash tools/run.sh main --help).",
    )
    parser.add_argument("--work-dir", default="runs/transfer")
    parser.add_argument(
        "--stages",
        nargs="+",
        default=["pretrain", "intrinsic", "finetune"],
        choices=["pretrain", "intrinsic", "finetune", "probe", "table"],
    )
    parser.add_argument(
        "--task",
        default="SST-2",
        help="the GLUE task fine-tuned (its main metric is the score), e.g. SST-2, STS-B, MRPC",
    )
    parser.add_argument(
        "--train-data", help="the task's train.tsv (default: the job's SST-2 training file)"
    )
    parser.add_argument("--dev-data", help="the task's dev.tsv (default: the job's SST-2 dev)")
    parser.add_argument(
        "--label-counts",
        type=int,
        nargs="+",
        default=[1000, 20000],
        help="training rows sampled per regime (more than the file holds: all of it, shuffled)",
    )
    parser.add_argument(
        "--sides", nargs="+", default=["pretrained", "scratch"], choices=["pretrained", "scratch"]
    )
    parser.add_argument("--learning-rates", type=float, nargs="+", default=[1e-4, 3e-4, 1e-3])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument(
        "--grid-only",
        action="store_true",
        help="only the learning-rate runs on the training split (a later run reuses every "
        "finished run)",
    )
    parser.add_argument("--finetune-epochs", type=int, default=10)
    parser.add_argument("--finetune-min-steps", type=int, default=100)
    parser.add_argument("--table-runs", nargs="+", default=[], help="work dirs for `table`")
    argv = sys.argv[1:] if argv is None else argv
    split = argv.index("--") if "--" in argv else len(argv)
    ours, job = argv[:split], argv[split + 1 :]
    args = parser.parse_args(ours)
    prelude.header()
    job_parser = add_job_flags(argparse.ArgumentParser(prog="python -m examples.main"))
    options = parse_job_flags(job_parser, [*job, "--output-dir", args.work_dir])
    os.makedirs(args.work_dir, exist_ok=True)
    stages = {
        "pretrain": pretrain_stage,
        "intrinsic": intrinsic_stage,
        "finetune": finetune_stage,
        "probe": probe_stage,
        "table": table_stage,
    }
    for name in args.stages:
        print(f"== {name}", flush=True)
        stages[name](args, options)


if __name__ == "__main__":
    sys.exit(main())
