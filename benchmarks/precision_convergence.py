"""Does the main job learn the same in mixed_bfloat16 as in float32? Seeds × precisions, tabulated.

Run by hand (about 7.5 minutes per run on 2 AVX-512 cores; runs that finished are skipped, so
an interrupted sweep continues where it stopped):

    python -m benchmarks.precision_convergence --seeds 0,1,2 \\
        --precisions float32,mixed_bfloat16 --output-dir runs/precision_convergence

Each run is the whole main job (`python -m examples.main`: tokenizer, pretraining data, pretraining,
SST-2 fine-tuning from the pretrained model and from scratch, export, serving check) with
`--precision P --seed S --finetune-seeds S` into `<output-dir>/<P>-s<S>/`, one after the
other. The same steps, data and budget for every precision, so the comparison is at the same
step count. Tabulated per precision (mean and range over the seeds): the held-out MLM and SOP
accuracy at the end of pretraining, and the SST-2 dev accuracy (the best of the fine-tuning
run's evaluations: the checkpoint the main job exports) from the pretrained model and from
scratch; then each precision's difference to float32. Writes `--results-json` and a plot beside it.

One fine-tuning of this small model moves by about a point with any change of rounding, so
`--finetune-seeds 0,1,2,3,4` also fine-tunes every pretrained checkpoint with each of those
seeds (the main job's own SST-2 options, only the seed changed; into
`<run>/finetuning_seeds/<precision>-f<seed>/`) and tabulates the mean and the median over
them per checkpoint (the ALBERT paper reports the median of five fine-tuning runs), for the
best evaluation of each run and for its last (the one the main job's summary compares).
`--cross` fine-tunes every checkpoint in every precision of `--precisions` as well: which of
pretraining and fine-tuning a difference comes from.
"""

import json
import multiprocessing
import os
import statistics
import subprocess
import sys

from benchmarks import prelude

METRICS = ("held-out MLM accuracy", "held-out SOP accuracy", "SST-2 pretrained", "SST-2 scratch")


def run_directory(output_dir: str, precision: str, seed: int) -> str:
    return os.path.join(output_dir, f"{precision}-s{seed}")


def run_main_job(output_dir: str, precision: str, seed: int) -> None:
    directory = run_directory(output_dir, precision, seed)
    command = [
        # A module of the checkout's `examples` package, from the root (as the benchmark runs).
        sys.executable,
        "-m",
        "examples.main",
        f"--output-dir={directory}",
        f"--saved-models-dir={os.path.join(directory, 'saved_models')}",
        f"--precision={precision}",
        f"--seed={seed}",
        f"--finetune-seeds={seed}",
    ]
    print(f"== {precision}, seed {seed}: {' '.join(command[1:])}", flush=True)
    with open(directory + ".log", "w", encoding="utf-8") as log:
        subprocess.run(command, check=True, stdout=log, stderr=subprocess.STDOUT)


def read_run(output_dir: str, precision: str, seed: int) -> dict:
    steps = os.path.join(run_directory(output_dir, precision, seed), "steps")
    with open(os.path.join(steps, "pretraining.json"), encoding="utf-8") as file:
        pretraining = json.load(file)["summary"]
    with open(os.path.join(steps, "finetuning.json"), encoding="utf-8") as file:
        finetuning = json.load(file)

    def sst2(side):
        (run,) = finetuning[side]["runs"]
        return run["summary"]["best"]["accuracy"]

    if pretraining["precision"] != precision:
        raise ValueError(f"{steps}: pretrained in {pretraining['precision']}, not {precision}")
    return {
        "held-out MLM accuracy": pretraining["eval"]["mlm_accuracy"],
        "held-out SOP accuracy": pretraining["eval"]["sop_accuracy"],
        "SST-2 pretrained": sst2("pretrained"),
        "SST-2 scratch": sst2("from_scratch"),
        "pretraining steps/s": pretraining["train_steps_per_second"],
    }


def finetuning_directory(output_dir: str, precision: str, seed: int, fine: str, fine_seed: int):
    return os.path.join(
        run_directory(output_dir, precision, seed), "finetuning_seeds", f"{fine}-f{fine_seed}"
    )


def _finetune(options: dict) -> None:
    # The spawned child inherits the environment the prelude set in the parent.
    from keras_albert.finetuning.driver import finetune
    from keras_albert.finetuning.options import FinetuningOptions

    finetune(FinetuningOptions(**options))


def finetune_again(output_dir: str, precision: str, seed: int, fine: str, fine_seed: int) -> dict:
    """The summary of the main job's SST-2 fine-tuning of (precision, seed)'s pretrained
    checkpoint, run again in `fine` precision with `fine_seed`: the main job's own run where
    that is what it ran, a fresh process (skipped when finished) otherwise."""
    steps = os.path.join(run_directory(output_dir, precision, seed), "steps")
    with open(os.path.join(steps, "finetuning.json"), encoding="utf-8") as file:
        (run,) = json.load(file)["pretrained"]["runs"]
    options = dict(run["summary"]["options"])
    # The precision the run trained in (its summary's, resolved from `auto` if need be).
    if (fine, fine_seed) == (run["summary"]["precision"], options["seed"]):
        return run["summary"]
    directory = finetuning_directory(output_dir, precision, seed, fine, fine_seed)
    summary = os.path.join(directory, "summary.json")
    if not os.path.exists(summary):
        print(f"== {precision}-s{seed} fine-tuned in {fine}, seed {fine_seed}", flush=True)
        options.update(output_dir=directory, precision=fine, seed=fine_seed, verbose=0, force=True)
        options = {k: tuple(v) if isinstance(v, list) else v for k, v in options.items()}
        process = multiprocessing.get_context("spawn").Process(target=_finetune, args=(options,))
        process.start()
        process.join()
        if process.exitcode != 0:
            raise RuntimeError(f"fine-tuning into {directory} exited with {process.exitcode}")
    with open(summary, encoding="utf-8") as file:
        return json.load(file)


EVALUATIONS = {
    "best": lambda summary: summary["best"]["accuracy"],  # the checkpoint the job exports
    "last": lambda summary: summary["history"][-1]["accuracy"],  # what its summary compares
}


def finetuning_grid(output_dir, precisions, seeds, cross: bool, fine_seeds) -> dict:
    """{pretraining precision: {fine-tuning precision: {"best" / "last" evaluation of each run:
    {"values": per pretraining seed, the accuracies over `fine_seeds` (none: the checkpoint's
    own seed); "mean", "median": per pretraining seed}}}}. Without `cross` each checkpoint is
    fine-tuned in its own precision."""
    summaries = {}  # (precision, seed, fine, fine seed) -> the run's summary
    # The fine-tuning seed outermost, so an interrupted sweep has covered every checkpoint alike.
    for fine_seed in fine_seeds or [None]:
        for seed in seeds:
            for precision in precisions:
                for fine in precisions if cross else [precision]:
                    key = (precision, seed, fine, seed if fine_seed is None else fine_seed)
                    summaries[key] = finetune_again(output_dir, *key)
    grid = {}
    for precision in precisions:
        grid[precision] = {}
        for fine in precisions if cross else [precision]:
            runs_per_seed = [
                [summaries[precision, s, fine, f] for f in fine_seeds or [s]] for s in seeds
            ]
            grid[precision][fine] = {}
            for evaluation, accuracy in EVALUATIONS.items():
                values = [[accuracy(summary) for summary in runs] for runs in runs_per_seed]
                grid[precision][fine][evaluation] = {
                    "values": values,
                    "mean": [statistics.mean(v) for v in values],
                    "median": [statistics.median(v) for v in values],
                }
    return grid


def paired_difference(values: list[float], base: list[float]) -> str:
    """`values - base` per seed in points: "mean points [min, max]"."""
    differences = [100 * (mine - theirs) for mine, theirs in zip(values, base, strict=True)]
    return (
        f"{statistics.mean(differences):+.2f} points "
        f"[{min(differences):+.2f}, {max(differences):+.2f}]"
    )


def print_grid(grid: dict, fine_seeds: list[int]) -> None:
    which = ",".join(map(str, fine_seeds)) if fine_seeds else "the checkpoint's own"
    print(
        f"\nSST-2 dev from the pretrained model, fine-tuning seeds {which} per checkpoint, the "
        "best and the last evaluation of each run: per pretraining seed the mean or median over "
        "the fine-tuning seeds, | their mean, the difference to float32 / float32 in points"
    )
    base = grid.get("float32", {}).get("float32")
    for evaluation in EVALUATIONS:
        for precision, row in grid.items():
            for fine, cells in row.items():
                cell = cells[evaluation]
                for statistic in ("mean", "median"):
                    values = cell[statistic]
                    line = (
                        f"  {evaluation} | pretrained {precision:15s} fine-tuned {fine:15s} "
                        f"{statistic:6s} "
                        + " ".join(f"{v:.4f}" for v in values)
                        + f"  | {statistics.mean(values):.4f}"
                    )
                    if base is not None and cells is not base:
                        line += "   " + paired_difference(values, base[evaluation][statistic])
                    print(line)


def main() -> None:
    parser = prelude.parser(__file__, __doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--precisions", default="float32,mixed_bfloat16")
    parser.add_argument("--output-dir", default="runs/precision_convergence")
    parser.add_argument(
        "--finetune-seeds",
        default="",
        help="fine-tune every pretrained checkpoint with each of these seeds as well",
    )
    parser.add_argument(
        "--cross",
        action="store_true",
        help="fine-tune every checkpoint in every precision of --precisions",
    )
    args = parser.parse_args()
    prelude.header()
    seeds = [int(seed) for seed in args.seeds.split(",")]
    precisions = args.precisions.split(",")
    fine_seeds = [int(seed) for seed in args.finetune_seeds.split(",") if seed]
    os.makedirs(args.output_dir, exist_ok=True)

    for seed in seeds:
        for precision in precisions:
            if not os.path.exists(
                os.path.join(run_directory(args.output_dir, precision, seed), "summary.json")
            ):
                run_main_job(args.output_dir, precision, seed)
    grid = None
    if fine_seeds or args.cross:
        grid = finetuning_grid(args.output_dir, precisions, seeds, args.cross, fine_seeds)
    runs = {p: {s: read_run(args.output_dir, p, s) for s in seeds} for p in precisions}

    table = {}
    for precision, by_seed in runs.items():
        table[precision] = {}
        for metric in (*METRICS, "pretraining steps/s"):
            values = [by_seed[seed][metric] for seed in seeds]
            table[precision][metric] = {
                "mean": statistics.mean(values),
                "min": min(values),
                "max": max(values),
                "values": values,
            }
    print(f"\n{len(seeds)} seeds ({args.seeds}); mean [min, max]; difference to float32 in points")
    for precision, row in table.items():
        print(f"{precision}:")
        for metric, cell in row.items():
            line = f"  {metric:24s} {cell['mean']:.4f} [{cell['min']:.4f}, {cell['max']:.4f}]"
            if precision != "float32" and "float32" in table and metric in METRICS:
                base = table["float32"][metric]["values"]
                line += f"   {paired_difference(cell['values'], base)} per seed"
            print(line)
    results = {"seeds": seeds, "runs": runs, "table": table}
    if grid is not None:
        print_grid(grid, fine_seeds)
        results.update(finetune_seeds=fine_seeds, finetuning=grid)
    prelude.write_results(args.results_json, results)
    plot(table, grid, seeds, os.path.splitext(args.results_json)[0] + ".png")


def plot(table: dict, grid: dict | None, seeds: list[int], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if grid is None:
        figure, axis = plt.subplots(figsize=(8, 4))
    else:
        figure, (axis, seeds_axis) = plt.subplots(1, 2, figsize=(14, 4.5))
        plot_grid(grid, seeds, seeds_axis)
    width = 0.8 / len(table)
    for index, (precision, row) in enumerate(table.items()):
        positions = [i + index * width for i in range(len(METRICS))]
        means = [row[metric]["mean"] for metric in METRICS]
        errors = [
            [row[m]["mean"] - row[m]["min"] for m in METRICS],
            [row[m]["max"] - row[m]["mean"] for m in METRICS],
        ]
        axis.bar(positions, means, width, yerr=errors, capsize=3, label=precision)
    axis.set_xticks([i + width * (len(table) - 1) / 2 for i in range(len(METRICS))])
    axis.set_xticklabels(METRICS, fontsize=8)
    axis.set_ylabel("accuracy (mean, range over seeds)")
    axis.set_title("The main job by training precision, same steps")
    axis.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    print(f"plot: {path}")


def plot_grid(grid: dict, seeds: list[int], axis) -> None:
    """Every fine-tuning's best SST-2 accuracy as a dot, per pretraining seed and cell; the
    median over the fine-tuning seeds as a bar."""
    cells = [(p, f, cells["best"]) for p, row in grid.items() for f, cells in row.items()]
    width = 0.8 / len(cells)
    for index, (precision, fine, cell) in enumerate(cells):
        label = precision if precision == fine else f"{precision} → {fine}"
        positions = [i + index * width for i in range(len(seeds))]
        bars = axis.bar(positions, cell["median"], width, alpha=0.5, label=f"{label} (median)")
        for position, values in zip(positions, cell["values"], strict=True):
            axis.plot([position] * len(values), values, ".", color=bars.patches[0].get_facecolor())
    values = [v for _, _, cell in cells for per_seed in cell["values"] for v in per_seed]
    axis.set_ylim(min(values) - 0.01, max(values) + 0.01)
    axis.set_xticks([i + width * (len(cells) - 1) / 2 for i in range(len(seeds))])
    axis.set_xticklabels([f"pretraining seed {seed}" for seed in seeds], fontsize=8)
    axis.set_ylabel("SST-2 dev accuracy (dots: fine-tuning seeds)")
    axis.set_title("SST-2 from each pretrained checkpoint, several fine-tuning seeds")
    axis.legend(fontsize=8)


if __name__ == "__main__":
    main()
