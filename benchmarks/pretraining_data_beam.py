"""Pretraining data, local engine vs Beam: examples/s on the shipped Austen + WikiText corpus.

    python -m benchmarks.pretraining_data_beam [--rounds 2] [--dupe_factor 3] \\
        [--results-json benchmarks/results/pretraining_data_beam_dupe3_<cpu>.json]

Four runners, interleaved within every round so that the machine's load hits them alike:
the local tool with 1 and 2 processes (fork, its default on Linux) and the Beam pipeline on
the DirectRunner's FnApiRunner in multi_processing mode with 1 and 2 workers. Each call is a
whole run, end to end (workers started, files read, examples made, shards written), so no
warm-up call. Beam's fixed cost (a run on three sentences: its worker processes start and
import Apache Beam and the data modules, not TensorFlow; the pipeline's stages run; the local
tool's forked workers inherit their parent) is measured apart.
All four write the same bytes (tests/pretraining/data/test_beam.py), so examples/s compare
like for like.

Prints the CPU model, flags and load; writes the raw rates, a plot beside them, and a projection
for BookCorpus + Wikipedia (~3.3 billion words) to `--results-json` (the shipped ones in
benchmarks/results/ carry the CPU in their names). The
projection is arithmetic on the measured per-worker rate, not a measurement: see its note.
"""

import functools
import os
import statistics
import tempfile

from benchmarks import prelude
from benchmarks.interleaved import interleaved_rates, report
from keras_albert.pretraining.data import PretrainingDataConfig, create_pretraining_data
from keras_albert.pretraining.data.beam import create_pretraining_data_beam

CORPUS = [prelude.data_path("corpus", "janeaustenr"), prelude.data_path("corpus", "wikitext2")]
SPM_MODEL = str(prelude.TEST_DATA / "30k-clean.model")
BOOKCORPUS_WIKIPEDIA_WORDS = 3.3e9


def corpus_words() -> int:
    from keras_albert.pretraining.data import expand_inputs

    return sum(len(open(path, "rb").read().split()) for path in expand_inputs(CORPUS))


def projection(per_worker_rate: float, examples_per_word: float) -> list[dict]:
    """Hours to write BookCorpus + Wikipedia at dupe factor 1 and 10 on 1, 8, 64 workers."""
    rows = []
    for dupe_factor in (1, 10):
        examples = BOOKCORPUS_WIKIPEDIA_WORDS * examples_per_word * dupe_factor
        for workers in (1, 8, 64):
            hours = examples / (per_worker_rate * workers) / 3600
            rows.append(
                {"dupe_factor": dupe_factor, "workers": workers, "examples": examples,
                 "hours": hours}
            )  # fmt: skip
    return rows


def main():
    parser = prelude.parser(__file__)
    parser.add_argument("--rounds", type=int, default=2)
    # 3 passes: enough work per run that the pipeline's fixed cost does not hide the rate.
    parser.add_argument("--dupe_factor", type=int, default=3)
    parser.add_argument("--sequence_length", type=int, default=128)
    parser.add_argument("--num_shards", type=int, default=4)
    args = parser.parse_args()
    machine = prelude.header()

    from keras_albert.text.python_tokenizer import PythonTokenizer, read_vocabulary_file
    from keras_albert.text.tokenizer import AlbertTokenizer

    # As the tool: the local engine's forked workers inherit an AlbertTokenizer; Beam's build a
    # PythonTokenizer (the same ids, no TensorFlow imported) from the model's bytes.
    model = read_vocabulary_file(SPM_MODEL)
    tokenizer = functools.partial(AlbertTokenizer, proto=model)
    beam_tokenizer = functools.partial(PythonTokenizer, proto=model)
    config = PretrainingDataConfig(
        sequence_length=args.sequence_length, dupe_factor=args.dupe_factor
    )
    workdir = tempfile.mkdtemp(prefix="pretraining_data_beam_")
    counts = {}

    def local(workers):
        def run():
            prefix = os.path.join(workdir, f"local{workers}", "x")
            summary = create_pretraining_data(
                CORPUS, prefix, tokenizer, config, num_workers=workers,
                num_shards=args.num_shards, progress=False, start_method="fork",
            )  # fmt: skip
            counts[f"local {workers}"] = summary.num_examples

        return run

    def beam(workers, inputs=CORPUS):
        def run():
            prefix = os.path.join(workdir, f"beam{workers}", "x")
            summary = create_pretraining_data_beam(
                inputs, prefix, beam_tokenizer, config, args.num_shards,
                ["--runner", "FnApiRunner", f"--direct_num_workers={workers}",
                 "--direct_running_mode=multi_processing"],
            )  # fmt: skip
            if inputs is CORPUS:
                counts[f"beam {workers}"] = summary.num_examples

        return run

    # A run on three sentences: the pipeline's fixed cost (workers started, each importing
    # Apache Beam and the data modules; stages scheduled), nearly no work.
    tiny = os.path.join(workdir, "tiny.txt")
    with open(tiny, "w") as handle:
        handle.write("Anne walked to the village. She met Mr. Elliot. It rained all day.\n")

    runners = {
        "local, 1 process": local(1),
        "local, 2 processes": local(2),
        "beam, 1 worker": beam(1),
        "beam, 2 workers": beam(2),
    }
    # One run first, to know the number of examples (the same for every runner).
    local(1)()
    num_examples = counts["local 1"]
    print(f"{num_examples} examples a run; {args.rounds} rounds, runners interleaved")
    rates = interleaved_rates(runners, num_examples, args.rounds, 1, warmup_calls=0)
    assert len(set(counts.values())) == 1, counts
    medians = report(rates)
    print("fixed cost (a run on three sentences), seconds:")
    startup_rates = interleaved_rates(
        {"beam, 1 worker": beam(1, [tiny]), "beam, 2 workers": beam(2, [tiny])},
        1, args.rounds, 1, warmup_calls=0,
    )  # fmt: skip
    startup = {name: 1 / statistics.median(r) for name, r in startup_rates.items()}
    steady = {
        name: num_examples / (num_examples / medians[name] - startup[name]) for name in startup
    }
    for name in startup:
        print(
            f"  {name}: {startup[name]:.1f} s fixed; {steady[name]:.0f} examples/s without it "
            "(arithmetic)"
        )
    ratio = medians["beam, 2 workers"] / medians["local, 2 processes"]
    scaling = {
        "local": medians["local, 2 processes"] / medians["local, 1 process"],
        "beam": medians["beam, 2 workers"] / medians["beam, 1 worker"],
    }
    print(f"beam 2 workers / local 2 processes: {ratio:.2f} (floor 0.75)")
    print(f"1 → 2 scaling: local {scaling['local']:.2f}x, beam {scaling['beam']:.2f}x")

    words = corpus_words()
    per_worker = medians["beam, 2 workers"] / 2
    rows = projection(per_worker, num_examples / args.dupe_factor / words)
    print(
        f"\nBookCorpus + Wikipedia (~3.3e9 words), sequence_length {args.sequence_length}: "
        f"arithmetic on the measured {per_worker:.0f} examples/s per worker (Beam, 2 workers, "
        f"this CPU) and {num_examples / args.dupe_factor / words:.4f} examples per word"
    )
    print("dupe_factor  workers  examples   hours")
    for row in rows:
        print(
            f"{row['dupe_factor']:11d}  {row['workers']:7d}  {row['examples']:.2e}  "
            f"{row['hours']:7.1f}"
        )
    load = os.getloadavg()
    print(f"load at the end {load}")

    prelude.write_results(
        args.results_json,
        {
            "options": vars(args), "load_at_start": machine["load_average"],
            "load_at_end": load, "corpus_words": words,
            "examples_per_run": num_examples,
            "rates": rates, "medians": medians, "beam2_over_local2": ratio,
            "scaling_1_to_2": scaling, "beam_fixed_seconds": startup,
            "beam_examples_per_second_without_fixed_cost": steady,
            "projection": {
                "note": "arithmetic, not measured: examples = words x examples per word x dupe "
                "factor; hours = examples / (measured per-worker rate x workers), i.e. linear "
                "scaling, no shuffle or I/O limits. Dupe factor 10 is an upper bound: a "
                "document is tokenized once for all its passes.",
                "per_worker_examples_per_second": per_worker, "rows": rows,
            },
        },
    )  # fmt: skip
    plot(rates, os.path.splitext(args.results_json)[0] + ".png", machine["cpu"]["model_name"])


def plot(rates: dict, path: str, cpu: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(rates)
    medians = [statistics.median(rates[n]) for n in names]
    errors = [
        [m - min(rates[n]) for n, m in zip(names, medians, strict=True)],
        [max(rates[n]) - m for n, m in zip(names, medians, strict=True)],
    ]
    figure, axes = plt.subplots(figsize=(7, 3.5))
    axes.bar(names, medians, yerr=errors, capsize=4, color=["#888", "#444", "#8ac", "#248"])
    axes.set_ylabel("examples/s (median, range of rounds)")
    axes.set_title(f"Pretraining data, Austen + WikiText-2, {cpu}", fontsize=10)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    print(f"plot: {path}")


if __name__ == "__main__":
    main()
