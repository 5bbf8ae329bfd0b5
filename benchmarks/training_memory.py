"""Peak training memory and step time, with and without remat (gradient checkpointing), for
ALBERT's sizes, sequence lengths, precisions and Keras backends, in one run:

    python -m benchmarks.training_memory --presets albert_base_v2,albert_large_v2 \\
        --shapes 8x128,8x512 --precisions float32,mixed_bfloat16 --backends tensorflow,jax

Each configuration runs in a fresh process of its own (Keras reads its backend once, and a
process's peak memory is what it measures), one after another, `--rounds` times with the
configurations interleaved (remat off, then on, and so on). In the process: `AlbertPretrainer`
(MLM + sentence order) on the preset's architecture with random weights, `remat` on or off,
the dtype policy `--precisions` names, compiled by Keras with its defaults and our `Lamb`
(learning rate 1e-4), trained with `train_on_batch` on one fixed random batch of `B × L` tokens
with ⌈0.15 × L⌉ masked positions: `--warmup-steps` untimed steps (the first one traces and
compiles), then `--steps` timed ones.

Memory: the process's peak resident set (`ru_maxrss`), and its resident set once the model is
built and compiled, before the first step; their difference is what training adds (gradients,
the optimizer's slots, and the activations a backward pass keeps, which remat cuts). With
`--memory-budget-gib` each process may allocate at most that much (`RLIMIT_DATA`): a
configuration that does not fit fails to allocate and is recorded as not fitting, without
pushing the machine into swap; `--max-batch` then finds, per configuration, the largest batch
(doubling from `B`) that fits.

The losses of each step are recorded too: remat recomputes the same forward pass, so on the
same batch and weights the runs with and without it train the same (tests/models/test_remat.py
proves the gradients equal), and a difference would say the two configurations did not
measure the same work.
"""

import json
import math
import os
import resource
import statistics
import subprocess
import sys
import time

from benchmarks import prelude  # isort: skip  (first: sets the environment)

# A run whose process fails to allocate, is killed or exits with an error: its return code and
# the last lines it wrote.
NOT_FITTING_LINES = 5
MASKED_SHARE = 0.15


def parse_shape(text: str) -> tuple[int, int]:
    """`8x128` → `(8, 128)`."""
    batch, _, length = text.partition("x")
    try:
        shape = int(batch), int(length)
    except ValueError:
        shape = (0, 0)
    if min(shape) < 1:
        raise ValueError(f"`shapes` must be BATCHxLENGTH pairs such as 8x128. Received: {text}")
    return shape


def current_rss_bytes() -> int:
    """This process's resident set now (/proc/self/statm)."""
    with open("/proc/self/statm", encoding="ascii") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def peak_rss_bytes() -> int:
    """This process's peak resident set so far (`ru_maxrss` is in KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def run_one(config: dict) -> dict:
    """In the configuration's own process: builds, trains and measures; the facts as a dict."""
    import keras
    import numpy as np

    from keras_albert import AlbertBackbone, AlbertPretrainer
    from keras_albert.training.lamb import Lamb

    keras.utils.set_random_seed(0)
    keras.config.set_dtype_policy(config["precision"])
    sizes = config.get("sizes")
    if sizes:
        backbone = AlbertBackbone(**sizes, remat=config["remat"])
    else:
        backbone = AlbertBackbone.from_preset_name(config["preset"], remat=config["remat"])
    model = AlbertPretrainer(backbone)
    model.compile(
        optimizer=Lamb(1e-4),
        loss={
            "mlm_logits": keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            "sop_logits": keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        },
    )
    batch, length = config["batch_size"], config["sequence_length"]
    masked = math.ceil(MASKED_SHARE * length)
    vocabulary = backbone.albert_config.vocabulary_size
    rng = np.random.default_rng(0)
    x = {
        "token_ids": rng.integers(5, vocabulary, (batch, length)).astype("int32"),
        "segment_ids": (np.arange(length) >= length // 2).astype("int32")[None].repeat(batch, 0),
        "padding_mask": np.ones((batch, length), "int32"),
        "mask_positions": np.sort(
            np.stack(
                [rng.choice(np.arange(1, length), masked, replace=False) for _ in range(batch)]
            )
        ).astype("int32"),
    }
    y = {
        "mlm_logits": rng.integers(5, vocabulary, (batch, masked)).astype("int32"),
        "sop_logits": rng.integers(0, 2, batch).astype("int32"),
    }
    built_rss = current_rss_bytes()
    losses, seconds = [], []
    for step in range(config["warmup_steps"] + config["steps"]):
        start = time.perf_counter()
        loss = model.train_on_batch(x, y)
        elapsed = time.perf_counter() - start
        losses.append(float(np.asarray(loss if np.ndim(loss) == 0 else loss[0])))
        if step >= config["warmup_steps"]:
            seconds.append(elapsed)
    peak = peak_rss_bytes()
    return {
        "built_rss_bytes": built_rss,
        "peak_rss_bytes": peak,
        "training_bytes": peak - built_rss,
        "step_seconds": seconds,
        "median_step_seconds": float(np.median(seconds)),
        "losses": losses,
        "jit_compile": model.jit_compile,
        "parameters": int(model.count_params()),
    }


def child(config_json: str) -> None:
    config = json.loads(config_json)
    budget = config.get("memory_budget_bytes")
    if budget:
        resource.setrlimit(resource.RLIMIT_DATA, (budget, budget))
    print("RESULT " + json.dumps(run_one(config)), flush=True)


def measure(config: dict) -> dict:
    """Runs `config` in a fresh process on its backend: its facts, or why it did not fit."""
    environment = {**os.environ, "KERAS_BACKEND": config["backend"],
                   "PYTHONPATH": str(prelude.REPOSITORY)}  # fmt: skip
    completed = subprocess.run(
        [sys.executable, "-m", "benchmarks.training_memory", "--child", json.dumps(config)],
        env=environment, capture_output=True, text=True, check=False,
    )  # fmt: skip
    for line in completed.stdout.splitlines():
        if line.startswith("RESULT "):
            return {"fits": True, **json.loads(line[len("RESULT ") :])}
    lines = (completed.stdout + completed.stderr).strip().splitlines()
    return {"fits": False, "returncode": completed.returncode,
            "last_lines": lines[-NOT_FITTING_LINES:]}  # fmt: skip


def name_of(config: dict) -> str:
    model = config.get("preset") or "tiny"
    remat = "remat" if config["remat"] else "plain"
    return (
        f"{config['backend']}/{model}/{config['batch_size']}x{config['sequence_length']}/"
        f"{config['precision']}/{remat}"
    )


def gib(value: int) -> str:
    return f"{value / 2**30:.2f}"


def summarize(runs: dict[str, list[dict]]) -> dict[str, dict]:
    """Per configuration: the peak memory (the largest over its rounds) and the median step."""
    table = {}
    for name, rounds in runs.items():
        fitted = [run for run in rounds if run["fits"]]
        if len(fitted) < len(rounds):
            table[name] = {"fits": False}
            continue
        table[name] = {
            "fits": True,
            "peak_rss_bytes": max(run["peak_rss_bytes"] for run in fitted),
            "training_bytes": max(run["training_bytes"] for run in fitted),
            "median_step_seconds": statistics.median(
                seconds for run in fitted for seconds in run["step_seconds"]
            ),
        }
    return table


def remat_effect(table: dict[str, dict]) -> dict[str, dict]:
    """For each configuration measured both ways: remat's peak memory and step time over the
    plain run's."""
    effects = {}
    for name, plain in table.items():
        if not name.endswith("/plain"):
            continue
        remat = table.get(name[: -len("plain")] + "remat")
        if remat is None or not (plain["fits"] and remat["fits"]):
            continue
        effects[name[: -len("/plain")]] = {
            "peak_memory_cut": 1 - remat["peak_rss_bytes"] / plain["peak_rss_bytes"],
            "training_memory_cut": 1 - remat["training_bytes"] / plain["training_bytes"],
            "step_time_ratio": remat["median_step_seconds"] / plain["median_step_seconds"],
        }
    return effects


def largest_batch(config: dict, limit: int) -> int | None:
    """The largest batch (doubling from the configuration's) whose run fits the budget."""
    batch, largest = config["batch_size"], None
    while batch <= limit:
        if not measure({**config, "batch_size": batch, "warmup_steps": 1, "steps": 0})["fits"]:
            break
        largest, batch = batch, batch * 2
    return largest


def build_configs(args) -> list[dict]:
    sizes = json.loads(args.sizes_json) if args.sizes_json else None
    presets = [None] if sizes else args.presets.split(",")
    configs = []
    for backend in args.backends.split(","):
        for preset in presets:
            for batch, length in map(parse_shape, args.shapes.split(",")):
                for precision in args.precisions.split(","):
                    for remat in (False, True):
                        configs.append({
                            "backend": backend, "preset": preset, "sizes": sizes,
                            "batch_size": batch, "sequence_length": length,
                            "precision": precision, "remat": remat,
                            "warmup_steps": args.warmup_steps, "steps": args.steps,
                            "memory_budget_bytes": int(args.memory_budget_gib * 2**30)
                            if args.memory_budget_gib else None,
                        })  # fmt: skip
    return configs


def main(argv=None) -> dict:
    parser = prelude.parser(__file__, __doc__.splitlines()[0])
    parser.add_argument("--presets", default="albert_base_v2")
    parser.add_argument("--sizes-json", help="an AlbertBackbone's sizes instead of presets")
    parser.add_argument("--shapes", default="8x128", help="BATCHxLENGTH, comma-separated")
    parser.add_argument("--precisions", default="float32")
    parser.add_argument("--backends", default="tensorflow")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--warmup-steps", type=int, default=1)
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--memory-budget-gib", type=float, help="the most a run may allocate")
    parser.add_argument(
        "--max-batch", type=int, help="find the largest batch (up to this) within the budget"
    )
    parser.add_argument("--child", help="(internal) one configuration's process")
    args = parser.parse_args(argv)
    if args.child:
        child(args.child)
        return {}
    if args.max_batch and not args.memory_budget_gib:
        raise ValueError(
            "`max_batch` needs `memory_budget_gib`, the budget a batch must fit. "
            f"Received: max_batch={args.max_batch}, memory_budget_gib=None"
        )
    prelude.header()
    configs = build_configs(args)
    runs = {name_of(config): [] for config in configs}
    for round_index in range(args.rounds):
        for config in configs:
            result = measure(config)
            runs[name_of(config)].append(result)
            label = f"round {round_index + 1} {name_of(config)}"
            if result["fits"]:
                print(f"{label}: peak {gib(result['peak_rss_bytes'])} "
                      f"GiB (training adds {gib(result['training_bytes'])}), step "
                      f"{result['median_step_seconds']:.3f} s, losses "
                      f"{[round(v, 4) for v in result['losses']]}", flush=True)  # fmt: skip
            else:
                print(f"{label}: did not fit "
                      f"(exit {result['returncode']})", flush=True)  # fmt: skip
    table = summarize(runs)
    effects = remat_effect(table)
    for name, effect in effects.items():
        print(f"{name}: remat cuts the peak by {effect['peak_memory_cut']:.0%} (what training "
              f"adds by {effect['training_memory_cut']:.0%}) at "
              f"{effect['step_time_ratio']:.2f}x the step time")  # fmt: skip
    largest = {}
    if args.max_batch:
        for config in configs:
            largest[name_of(config)] = largest_batch(config, args.max_batch)
            print(f"{name_of(config)}: largest batch within {args.memory_budget_gib} GiB: "
                  f"{largest[name_of(config)]}")  # fmt: skip
    results = {"options": vars(args), "runs": runs, "table": table, "remat": effects,
               "largest_batch": largest}  # fmt: skip
    prelude.write_results(args.results_json, results)
    return results


if __name__ == "__main__":
    main()
