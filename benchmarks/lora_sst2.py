"""LoRA vs full fine-tuning on the main job's SST-2 setup: dev accuracy, trainable parameters,
checkpoint size, steps per second and peak memory, seed by seed. Run by hand (not a test):

    python -m benchmarks.lora_sst2 --output-dir runs/main [--lora-rank 8] [--seeds 0,1,2]
    python -m benchmarks.lora_sst2 --output-dir runs/main-quick --quick   # a smoke run

The main job's first four steps (corpus, tokenizer, pretraining data, pretraining) run first
and are skipped where `--output-dir` already holds them (a finished main job's run is
reused as it is). Then, from its pretraining checkpoint, with its fine-tuning options
(`examples.main_job.steps.finetuning_options`: the same training sample, tokenizer, lengths, batch,
dynamic padding, XLA, precision, steps and evaluations), per seed one run of each side, in
turn (full, LoRA, LoRA on query and value, full, ...), each in a fresh process with all the
cores, one at a time. The sides: `full` fine-tunes every weight; `lora` trains adapters on
every weight matrix of the backbone (`enable_lora`'s default, the token table among them);
`lora_query_value` on the attention's query and value projections only (keras-hub's choice).
The LoRA sides differ from `full` only in `lora_rank`, their targets and
`--lora-learning-rate` (adapters start at zero and are few: they want a larger rate than the
whole model). Accuracy: the run's last dev evaluation, as the main job reports it (the best
of them is recorded too). Steps/s: the training steps over the time between evaluations, after
the first stretch (which compiles). Peak memory: the run process's maximum resident set.
"""

import dataclasses
import multiprocessing
import os
import re
import resource
import statistics
import sys
import time

from benchmarks import prelude  # isort: skip  (first: sets the environment)

from examples.main_job import STEPS, MainJobOptions, run_steps
from examples.main_job.options import parse_seeds
from examples.main_job.steps import finetuning_options, sample_tsv

# "(step 400, 3.1 steps/s; train ...)": one line per dev evaluation (finetuning/stretches.py).
RATE = re.compile(r"\(step (\d+), ([\d.e+-]+) steps/s;")


def run_in_child(options, log_path, queue) -> None:
    """One fine-tuning run (a spawned process): its summary, its printed rates and peak RSS."""
    from keras_albert.finetuning.driver import finetune

    with open(log_path, "w", encoding="utf-8") as log:
        sys.stdout = sys.stderr = log
        started = time.perf_counter()
        summary = finetune(options)
        seconds = time.perf_counter() - started
    with open(log_path, encoding="utf-8") as log:
        rates = [float(rate) for _, rate in RATE.findall(log.read())]
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    queue.put({"summary": summary, "seconds": seconds, "rates": rates, "peak_kib": peak_kib})


def run(options) -> dict:
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    os.makedirs(options.output_dir, exist_ok=True)
    log_path = os.path.join(options.output_dir, "finetune.log")
    process = context.Process(target=run_in_child, args=(options, log_path, queue))
    process.start()
    result = queue.get()
    process.join()
    if process.exitcode != 0:
        raise RuntimeError(f"The run in {options.output_dir} failed; see {log_path}")
    summary = result["summary"]
    return {
        "seed": options.seed,
        # The last evaluation, as the main job reports it (no checkpoint chosen on dev).
        "accuracy": summary["history"][-1]["accuracy"],
        "best_accuracy": max(row["accuracy"] for row in summary["history"]),
        "trainable_parameters": summary["trainable_parameters"],
        "parameters": summary["parameters"],
        "checkpoint_bytes": summary["checkpoint_bytes"],
        "best_model_bytes": summary["best_model_bytes"],
        # The first stretch's rate includes XLA's compilation.
        "steps_per_second": statistics.mean(result["rates"][1:] or result["rates"]),
        "seconds": result["seconds"],
        "peak_memory_mb": result["peak_kib"] / 1024,
    }


def main(argv=None) -> None:
    parser = prelude.parser(__file__, __doc__.splitlines()[0])
    parser.add_argument("--output-dir", default="runs/main", help="the main job's output")
    parser.add_argument("--seeds", type=parse_seeds, default=(0, 1, 2))
    parser.add_argument("--lora-rank", type=int, default=8)
    parser.add_argument("--lora-learning-rate", type=float, default=1e-3)
    parser.add_argument("--quick", action="store_true", help="the main job's smoke variant")
    parser.add_argument(
        "--sides",
        default="full,lora,lora_query_value",
        help="which runs, comma-separated: full, lora, lora_query_value",
    )
    args = parser.parse_args(argv)
    prelude.header()

    job = (MainJobOptions.quick if args.quick else MainJobOptions)(output_dir=args.output_dir)
    run_steps(job, STEPS[: STEPS.index("pretraining") + 1])
    train_file = job.path("finetuning", "sst2_train_sample.tsv")
    os.makedirs(os.path.dirname(train_file), exist_ok=True)
    sample_tsv(job.finetune_train_data, train_file, job.finetune_examples, job.seed)
    lora = {"learning_rate": args.lora_learning_rate, "lora_rank": args.lora_rank}
    sides = {
        "full": {"learning_rate": job.finetune_learning_rate, "lora_rank": None},
        "lora": lora,
        "lora_query_value": lora | {"lora_target_layer_names": ("query", "value")},
    }
    chosen = args.sides.split(",")
    if not chosen or set(chosen) - set(sides):
        parser.error(
            f"`--sides` must be some of {', '.join(sides)}, comma-separated. "
            f"Received: --sides={args.sides}"
        )
    sides = {side: sides[side] for side in chosen}
    results = {side: [] for side in sides}
    for seed in args.seeds:
        for side, changes in sides.items():
            options = finetuning_options(
                job,
                False,
                train_data=train_file,
                eval_data=job.finetune_eval_data,
                output_dir=os.path.join(
                    args.output_dir,
                    "lora_sst2",
                    f"{side}_lr{changes['learning_rate']:g}",
                    f"seed_{seed}",
                ),
                train_steps=job.finetune_train_steps,
                num_evaluations=job.finetune_evaluations,
                seed=seed,
                verbose=2,
                learning_rate=changes["learning_rate"],
            )
            options = dataclasses.replace(
                options,
                lora_rank=changes["lora_rank"],
                lora_target_layer_names=changes.get("lora_target_layer_names"),
                force=True,
            )
            results[side].append(run(options))
            row = results[side][-1]
            print(
                f"{side} seed {seed}: accuracy {row['accuracy']:.4f}, "
                f"{row['trainable_parameters']:,} of {row['parameters']:,} parameters trained, "
                f"{row['steps_per_second']:.3g} steps/s, peak {row['peak_memory_mb']:.0f} MB, "
                f"checkpoint {row['checkpoint_bytes'] / 1e6:.2f} MB",
                flush=True,
            )

    summary = {}
    for side, rows in results.items():
        summary[side] = {
            key: statistics.mean(row[key] for row in rows)
            for key in (
                "accuracy",
                "best_accuracy",
                "steps_per_second",
                "peak_memory_mb",
                "checkpoint_bytes",
            )
        }
        summary[side]["trainable_parameters"] = rows[0]["trainable_parameters"]
    compared = [side for side in sides if side != "full"] if "full" in sides else []
    for side in compared:
        full, lora = summary["full"], summary[side]
        # The share of what full fine-tuning trains (the model's own parameters).
        lora["trainable_share"] = lora["trainable_parameters"] / full["trainable_parameters"]
        lora["minus_full_points"] = 100 * (lora["accuracy"] - full["accuracy"])
        print(
            f"\nmean of {len(args.seeds)} seeds: full {full['accuracy']:.4f}, {side} rank "
            f"{args.lora_rank} {lora['accuracy']:.4f} ({lora['minus_full_points']:+.2f} "
            f"points) training {lora['trainable_share']:.2%} of the parameters full "
            f"fine-tuning trains; steps/s "
            f"{lora['steps_per_second'] / full['steps_per_second']:.2f}x, peak memory "
            f"{lora['peak_memory_mb'] / full['peak_memory_mb']:.2f}x, checkpoint "
            f"{lora['checkpoint_bytes'] / full['checkpoint_bytes']:.2f}x of full fine-tuning"
        )
    prelude.write_results(
        args.results_json,
        {"options": vars(args) | {"seeds": list(args.seeds)}, "runs": results, "mean": summary},
    )


if __name__ == "__main__":
    main()
