"""Does our pretraining pay off? A small ALBERT pretrained on task-adaptive text (Austen +
WikiText-2 + the task's unlabeled training sentences) vs the same architecture from scratch,
fine-tuned on SST-2 with 1,000 labels and with the main job's 20,000; and the paper's
SOP-vs-NSP table (Lan et al. 2020, Table 5) in miniature. Run by hand (not a test):

    python benchmarks/pretraining_transfer.py --work-dir runs/transfer --stages all

Stages (each skips what is already written under `--work-dir`):

- `pretrain`: corpus (`task_corpus.build_task_corpus`: *Persuasion* and WikiText's last 8
  articles held out) → SentencePiece on the pretraining text → records (`--pair-task`) and the
  held-out SOP and NSP sets (`intrinsic_sets.write_intrinsic_sets`) → `pretrain`.
- `intrinsic`: the run's held-out SOP and NSP accuracy (`intrinsic_eval`). Run it for a
  `--pair-task sop` and a `--pair-task nsp` work dir, then `table` writes the 2×2 table.
- `finetune`: per regime (`--label-counts`), each side (pretrained, scratch) picks its learning
  rate from `--learning-rates` on a split of the sampled TRAINING rows (80 % train, 20 %
  validation, seed 0; the dev set is never used for a choice), then fine-tunes on the whole
  sample for each `--seeds` and is scored once, at the end, on SST-2 dev.

Writes `<work-dir>/transfer.json` and `transfer.png` (and `table.json`, `table.png`).
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import glob
import json
import os
import random
import statistics
import sys

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

REPOSITORY = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(REPOSITORY, "data")
AUSTEN = os.path.join(DATA, "corpus", "janeaustenr")
HELD_OUT_BOOK = "persuasion.txt"
WIKITEXT = os.path.join(DATA, "corpus", "wikitext2", "wiki.test.raw")
SST2 = os.path.join(DATA, "glue", "SST-2")


def _done(path: str) -> bool:
    return os.path.exists(path)


def _write_json(path: str, value) -> None:
    partial = f"{path}.incomplete"
    with open(partial, "w", encoding="utf-8") as f:
        json.dump(value, f, indent=2)
    os.replace(partial, path)


def pretrain_stage(args) -> dict:
    from keras_albert.config import AlbertConfig
    from keras_albert.text.pretraining import PretrainingDataConfig, create_pretraining_data
    from keras_albert.text.pretraining.intrinsic_sets import write_intrinsic_sets
    from keras_albert.text.pretraining.task_corpus import DOCUMENT_SPLIT, build_task_corpus
    from keras_albert.text.sentencepiece_trainer import train_sentencepiece
    from keras_albert.text.tokenizer import AlbertTokenizer
    from keras_albert.training.pretraining import PretrainingOptions, pretrain

    work = args.work_dir
    corpus_dir = os.path.join(work, "corpus")
    books = sorted(glob.glob(os.path.join(AUSTEN, "*.txt")))
    corpus = build_task_corpus(
        corpus_dir,
        books=[b for b in books if os.path.basename(b) != HELD_OUT_BOOK],
        held_out_books=[b for b in books if os.path.basename(b) == HELD_OUT_BOOK],
        wikitext=os.path.join(DATA, "corpus", "wikitext2", "wiki.test.raw")
        if args.wikitext
        else None,
        held_out_articles=8 if args.wikitext else 0,
        task_train_data=args.task_train_data if args.task_sentences else None,
        seed=args.seed,
    )
    print(corpus)
    tokenizer_path = os.path.join(work, "tokenizer", "spm.model")
    if not _done(tokenizer_path):
        train_sentencepiece(
            [corpus.train_file],
            tokenizer_path.removesuffix(".model"),
            vocabulary_size=args.vocabulary_size,
            seed=args.seed,
        )
    tokenizer = functools.partial(AlbertTokenizer, proto=tokenizer_path)
    data_config = PretrainingDataConfig(
        sequence_length=args.sequence_length,
        max_predictions_per_sequence=args.max_predictions_per_sequence,
        dupe_factor=args.dupe_factor,
        task=args.pair_task,
        document_split=DOCUMENT_SPLIT,
        seed=args.seed,
    )
    data_dir = os.path.join(work, "data")
    if not glob.glob(os.path.join(data_dir, "train-*.tfrecord")):
        summary = create_pretraining_data(
            [corpus.train_file],
            os.path.join(data_dir, "train"),
            tokenizer,
            data_config,
            num_workers=1,  # one process: short documents make worker round trips the cost
            num_shards=4,
        )
        print(summary)
    sets_path = os.path.join(work, "held_out_sets.json")
    if not _done(sets_path):
        held_out_config = dataclasses.replace(data_config, dupe_factor=1, seed=args.seed + 1)
        sets = write_intrinsic_sets(
            corpus.held_out_file, os.path.join(work, "held_out"), tokenizer, held_out_config
        )
        _write_json(sets_path, sets)
    config_path = os.path.join(work, "albert_config.json")
    AlbertConfig(
        vocabulary_size=args.vocabulary_size,
        max_sequence_length=args.sequence_length,
        embedding_dim=args.embedding_dim,
        hidden_dim=args.hidden_dim,
        intermediate_dim=4 * args.hidden_dim,
        num_layers=args.num_layers,
        num_heads=max(1, args.hidden_dim // 32),
    ).to_json(config_path)
    log_every = max(args.train_steps // 20, 10)
    return pretrain(
        PretrainingOptions(
            config=config_path,
            train_data=os.path.join(data_dir, "train-*.tfrecord"),
            eval_data=os.path.join(work, "held_out", f"{args.pair_task}-*.tfrecord"),
            output_dir=os.path.join(work, "model"),
            sentencepiece_model=tokenizer_path,
            dynamic_masking=args.dynamic_masking,
            train_steps=args.train_steps,
            batch_size=args.batch_size,
            learning_rate=args.learning_rate,
            sentence_order_loss_weight=args.sentence_order_loss_weight,
            warmup_steps=max(args.train_steps // 10, 1),
            strategy="cpu",
            log_every_steps=log_every,
            checkpoint_every_steps=log_every * 5,
            eval_every_steps=log_every * 5,
            jit_compile=False,
            seed=args.seed,
        )
    )


def intrinsic_stage(args) -> dict:
    from keras_albert.training.intrinsic_eval import evaluate_sentence_pairs, load_pretrainer

    model = load_pretrainer(os.path.join(args.work_dir, "model"))
    result = {"pair_task_trained": args.pair_task}
    for task in ("sop", "nsp"):
        records = os.path.join(args.work_dir, "held_out", f"{task}-*.tfrecord")
        result[task] = evaluate_sentence_pairs(model, records)
    _write_json(os.path.join(args.work_dir, "intrinsic.json"), result)
    print(json.dumps(result, indent=2))
    return result


def table_stage(args) -> dict:
    from keras_albert.training.intrinsic_eval import PAPER_TABLE_5

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
    os.makedirs(args.work_dir, exist_ok=True)
    _write_json(os.path.join(args.work_dir, "table.json"), table)
    print("trained on \\ evaluated on   NSP (paper)      SOP (paper)")
    for name, row in rows.items():
        paper = PAPER_TABLE_5.get(name, {})
        print(
            f"{name:26s} {row['nsp']:.3f} ({paper.get('nsp', float('nan')):.3f})   "
            f"{row['sop']:.3f} ({paper.get('sop', float('nan')):.3f})"
        )
    return table


def _sample_rows(source: str, count: int | None, seed: int) -> tuple[str, list[str]]:
    with open(source, encoding="utf-8") as f:
        header, *rows = f.readlines()
    if count is not None and count < len(rows):
        rows = random.Random(seed).sample(rows, count)
    return header, rows


def _write_tsv(path: str, header: str, rows: list[str]) -> str:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.writelines([header, *rows])
    return path


def _finetune_score(
    args,
    side: str,
    train_file: str,
    eval_file: str,
    lr: float,
    seed: int,
    output_dir: str,
    num_rows: int,
) -> float:
    import keras

    from keras_albert.training.finetuning import FinetuningOptions, finetune

    result_path = os.path.join(output_dir, "score.json")
    if _done(result_path):
        with open(result_path, encoding="utf-8") as f:
            return json.load(f)["score"]
    source = (
        dict(init_checkpoint=os.path.join(args.work_dir, "model"))
        if side == "pretrained"
        else dict(config=os.path.join(args.work_dir, "albert_config.json"))
    )
    steps = max(
        args.finetune_min_steps, args.finetune_epochs * num_rows // args.finetune_batch_size
    )
    steps = min(steps, args.finetune_max_steps)
    summary = finetune(
        FinetuningOptions(
            task=args.task,
            train_data=train_file,
            eval_data=eval_file,
            output_dir=output_dir,
            sentencepiece_model=os.path.join(args.work_dir, "tokenizer", "spm.model"),
            sequence_length=args.finetune_sequence_length,
            learning_rate=lr,
            batch_size=args.finetune_batch_size,
            train_steps=steps,
            warmup_steps=max(steps // 10, 1),
            epochs=1,  # one evaluation, at the end: no checkpoint is chosen on the eval set
            seed=seed,
            verbose=0,
            **source,
        )
    )
    keras.backend.clear_session()
    metric = summary["history"][-1]
    score = float(metric.get("accuracy", metric.get("f1", metric.get("pearson"))))
    _write_json(result_path, {"score": score, "learning_rate": lr, "steps": steps})
    print(f"  {side} lr={lr} seed={seed} rows={num_rows} steps={steps}: {score:.4f}", flush=True)
    return score


def finetune_stage(args) -> dict:
    dev = args.task_eval_data
    results = {}
    for count in args.label_counts:
        regime = f"labels_{count}"
        root = os.path.join(args.work_dir, "finetune", regime)
        header, rows = _sample_rows(args.task_train_data, count, 0)
        sample = _write_tsv(os.path.join(root, "train.tsv"), header, rows)
        cut = int(0.8 * len(rows))
        fit_file = _write_tsv(os.path.join(root, "split_train.tsv"), header, rows[:cut])
        val_file = _write_tsv(os.path.join(root, "split_validation.tsv"), header, rows[cut:])
        results[regime] = {}
        for side in args.sides:
            grid = {}
            for lr in args.learning_rates:
                out = os.path.join(root, side, f"select_lr{lr}")
                grid[lr] = _finetune_score(args, side, fit_file, val_file, lr, 0, out, cut)
            if args.grid_only:
                continue
            chosen = max(grid, key=grid.get)
            scores = []
            for seed in args.seeds:
                out = os.path.join(root, side, f"final_lr{chosen}_seed{seed}")
                scores.append(
                    _finetune_score(args, side, sample, dev, chosen, seed, out, len(rows))
                )
            results[regime][side] = {
                "learning_rate_grid_on_train_split": {str(k): v for k, v in grid.items()},
                "learning_rate": chosen,
                "dev_scores": scores,
                "mean": statistics.fmean(scores),
                "spread": [min(scores), max(scores)],
            }
        if args.grid_only:
            continue
        if {"pretrained", "scratch"} <= set(results[regime]):
            gains = [
                p - s
                for p, s in zip(
                    results[regime]["pretrained"]["dev_scores"],
                    results[regime]["scratch"]["dev_scores"],
                    strict=True,
                )
            ]
            results[regime]["gain"] = {
                "per_seed": gains,
                "mean": statistics.fmean(gains),
                "spread": [min(gains), max(gains)],
            }
        _write_json(os.path.join(args.work_dir, "transfer.json"), {"args": vars(args), **results})
        print(json.dumps({regime: results[regime]}, indent=2), flush=True)
    if not args.grid_only:
        _plot(results, os.path.join(args.work_dir, "transfer.png"), args.task)
    return results


def _plot(results: dict, path: str, task: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

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
            axis.hlines(statistics.fmean(scores), i + offset - 0.1, i + offset + 0.1, color="k")
    axis.set_xticks(range(len(results)), list(results))
    axis.set_ylabel(f"{task} dev score")
    axis.legend()
    figure.tight_layout()
    figure.savefig(f"{path}.incomplete.png")
    os.replace(f"{path}.incomplete.png", path)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--work-dir", default="runs/transfer")
    parser.add_argument(
        "--stages",
        nargs="+",
        default=["pretrain", "intrinsic", "finetune"],
        choices=["pretrain", "intrinsic", "finetune", "table"],
    )
    parser.add_argument("--pair-task", default="sop", choices=["sop", "nsp"])
    parser.add_argument("--wikitext", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--task-sentences", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--task", default="SST-2")
    parser.add_argument(
        "--task-train-data", default=os.path.join(DATA, "glue", "SST-2", "train.tsv")
    )
    parser.add_argument("--task-eval-data", default=os.path.join(SST2, "dev.tsv"))
    parser.add_argument("--vocabulary-size", type=int, default=8000)
    parser.add_argument("--sequence-length", type=int, default=64)
    parser.add_argument("--max-predictions-per-sequence", type=int, default=10)
    parser.add_argument("--dupe-factor", type=int, default=2)
    parser.add_argument("--dynamic-masking", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--embedding-dim", type=int, default=128)
    parser.add_argument("--hidden-dim", type=int, default=128)
    parser.add_argument("--num-layers", type=int, default=4)
    parser.add_argument("--train-steps", type=int, default=3000)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--learning-rate", type=float, default=5e-3)
    parser.add_argument("--sentence-order-loss-weight", type=float, default=1.0)
    parser.add_argument("--label-counts", type=int, nargs="+", default=[1000, 20000])
    parser.add_argument("--sides", nargs="+", default=["pretrained", "scratch"])
    parser.add_argument("--learning-rates", type=float, nargs="+", default=[1e-4, 3e-4, 1e-3])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument(
        "--grid-only",
        action="store_true",
        help="only the learning-rate runs on the training split (to run grid points and seeds "
        "in parallel processes; a later run reuses every finished run)",
    )
    parser.add_argument("--finetune-epochs", type=int, default=10)
    parser.add_argument("--finetune-min-steps", type=int, default=100)
    parser.add_argument("--finetune-max-steps", type=int, default=1500)
    parser.add_argument("--finetune-batch-size", type=int, default=32)
    parser.add_argument("--finetune-sequence-length", type=int, default=64)
    parser.add_argument("--table-runs", nargs="+", default=[], help="work dirs for `table`")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    os.makedirs(args.work_dir, exist_ok=True)
    stages = {
        "pretrain": pretrain_stage,
        "intrinsic": intrinsic_stage,
        "finetune": finetune_stage,
        "table": table_stage,
    }
    for name in args.stages:
        print(f"== {name}", flush=True)
        stages[name](args)


if __name__ == "__main__":
    sys.exit(main())
