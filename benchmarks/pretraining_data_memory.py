"""The pretraining data tool's memory against the corpus's size: peak resident memory of
`keras-albert create-data` on corpora of about 10, 40 and 160 MB, with the local engine's 1 and
2 worker processes and with Apache Beam's DirectRunner, and its throughput per CPU second.

    python -m benchmarks.pretraining_data_memory [--sizes-mb 10,40,160] \\
        [--engines local:1,local:2,beam]

The corpora are the shipped text (`data/corpus/`: the six Austen novels and WikiText-2) copied
until each reaches its size, one file per copy of a source file, so each copy's documents are
documents of their own (the tool reads a file's documents together, never across files). Each
run is the command a user types, in a process of its own; a sampler reads the resident memory
of that process and of every process it started (`/proc`) every `--sample-seconds`, and
records the peak of their sum (what the machine must hold at once) and the largest single
process. Throughput is examples per CPU second of the whole process tree (user + system, of
every process waited for), which the machine's load does not change as it changes wall time.
"""

import os
import resource
import subprocess
import sys
import tempfile
import threading
import time

from benchmarks import prelude  # isort: skip  (first: sets the environment)

SOURCES = prelude.data_path("corpus")
VOCABULARY = str(prelude.TEST_DATA / "30k-clean.model")
PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")


def text_files(directory: str) -> list[str]:
    """The shipped corpus's text files (not its NOTICE), sorted."""
    found = []
    for root, _, names in os.walk(directory):
        found += [os.path.join(root, name) for name in names
                  if not name.startswith(("NOTICE", "README", "LICENSE", "."))]  # fmt: skip
    return sorted(found)


def build_corpus(directory: str, target_bytes: int, sources_dir: str = SOURCES) -> int:
    """Copies of the text files of `sources_dir` into `directory` until they hold
    `target_bytes` (the last copy may go past it); the bytes written."""
    sources = text_files(sources_dir)
    if not sources:
        raise ValueError(f"`sources` must hold text files. Received: sources={sources_dir!r}")
    os.makedirs(directory, exist_ok=True)
    written, copy = 0, 0
    while written < target_bytes:
        for source in sources:
            name = f"copy{copy:04d}_{os.path.basename(source)}"
            if not os.path.splitext(name)[1]:
                name += ".txt"
            with open(source, "rb") as file:
                data = file.read()
            with open(os.path.join(directory, name), "wb") as file:
                file.write(data)
            written += len(data)
            if written >= target_bytes:
                break
        copy += 1
    return written


def children_of() -> dict[int, list[int]]:
    """Every process's children, from /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry))
    return children


def tree_rss(root: int) -> tuple[int, int]:
    """The resident bytes of `root` and its descendants: their sum and the largest one."""
    children, pending, sizes = children_of(), [root], []
    while pending:
        pid = pending.pop()
        pending += children.get(pid, [])
        try:
            with open(f"/proc/{pid}/statm", encoding="ascii") as statm:
                sizes.append(int(statm.read().split()[1]) * PAGE_BYTES)
        except OSError:
            continue
    return sum(sizes), max(sizes, default=0)


class Sampler(threading.Thread):
    """Samples `tree_rss(pid)` until stopped; keeps the peaks."""

    def __init__(self, pid: int, every: float):
        super().__init__(daemon=True)
        self.pid, self.every = pid, every
        self.peak_sum = self.peak_process = self.samples = 0
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.is_set():
            total, largest = tree_rss(self.pid)
            self.peak_sum = max(self.peak_sum, total)
            self.peak_process = max(self.peak_process, largest)
            self.samples += 1
            self.stopped.wait(self.every)


def command(engine: str, corpus: str, output_dir: str, args) -> list[str]:
    """The user's command for `engine` ("local:N" or "beam")."""
    flags = [sys.executable, "-m", "keras_albert", "create-data", "--inputs", corpus,
             "--output-dir", output_dir, "--vocabulary", VOCABULARY,
             "--sequence-length", str(args.sequence_length), "--num-shards", "4"]  # fmt: skip
    if args.dupe_factor is not None:
        flags += ["--dupe-factor", str(args.dupe_factor)]
    if engine == "beam":
        return [*flags, "--engine", "beam", "--", "--runner", "DirectRunner",
                "--direct_num_workers", "1"]  # fmt: skip
    kind, _, workers = engine.partition(":")
    if kind != "local" or not workers.isdigit():
        raise ValueError(f"`engines` must be local:N or beam. Received: {engine}")
    return [*flags, "--num-workers", workers]


def measure(engine: str, corpus: str, output_dir: str, args) -> dict:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    environment = {**os.environ, "PYTHONPATH": str(prelude.REPOSITORY)}
    process = subprocess.Popen(
        command(engine, corpus, output_dir, args),
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    sampler = Sampler(process.pid, args.sample_seconds)
    sampler.start()
    output, _ = process.communicate()
    sampler.stopped.set()
    sampler.join()
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_seconds = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    if process.returncode:
        raise RuntimeError(f"{engine} on {corpus} failed:\n{output[-3000:]}")
    # The summary the command prints, the same for every engine: "examples:          1234".
    counts = [line.split()[1] for line in output.splitlines() if line.startswith("examples:")]
    if len(counts) != 1:
        raise RuntimeError(f"{engine} printed no summary:\n{output[-3000:]}")
    examples = int(counts[0])
    return {
        "peak_tree_rss_bytes": sampler.peak_sum,
        "peak_process_rss_bytes": sampler.peak_process,
        "samples": sampler.samples,
        "wall_seconds": seconds,
        "cpu_seconds": cpu_seconds,
        "examples": examples,
        "examples_per_cpu_second": examples / cpu_seconds,
    }


def main(argv=None) -> dict:
    parser = prelude.parser(__file__, __doc__.splitlines()[0])
    parser.add_argument("--sizes-mb", default="10,40,160")
    parser.add_argument("--engines", default="local:1,local:2,beam")
    parser.add_argument("--sequence-length", type=int, default=128)
    parser.add_argument("--dupe-factor", type=int, help="(default: the tool's)")
    parser.add_argument("--sources", default=SOURCES, help="the text copied into the corpora")
    parser.add_argument("--sample-seconds", type=float, default=0.2)
    parser.add_argument("--work-dir", help="where the corpora and outputs go (default: a temp)")
    args = parser.parse_args(argv)
    prelude.header()
    sizes = [float(size) for size in args.sizes_mb.split(",")]
    engines = args.engines.split(",")
    runs: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(dir=args.work_dir) as work:
        for size in sizes:
            corpus = os.path.join(work, f"corpus_{size:g}mb")
            corpus_bytes = build_corpus(corpus, int(size * 1e6), args.sources)
            for engine in engines:
                output_dir = os.path.join(work, f"out_{size:g}mb_{engine.replace(':', '')}")
                run = {"corpus_bytes": corpus_bytes, **measure(engine, corpus, output_dir, args)}
                runs[f"{engine}/{size:g}MB"] = run
                print(f"{engine:8s} {corpus_bytes / 1e6:6.1f} MB: peak "
                      f"{run['peak_tree_rss_bytes'] / 2**20:7.0f} MiB (largest process "
                      f"{run['peak_process_rss_bytes'] / 2**20:6.0f}), {run['examples']} examples, "
                      f"{run['examples_per_cpu_second']:.0f} examples per CPU s, "
                      f"{run['wall_seconds']:.0f} s", flush=True)  # fmt: skip
    ratios = {}
    for engine in engines:
        smallest, largest = runs[f"{engine}/{sizes[0]:g}MB"], runs[f"{engine}/{sizes[-1]:g}MB"]
        throughputs = [runs[f"{engine}/{size:g}MB"]["examples_per_cpu_second"] for size in sizes]
        ordered = [runs[f"{engine}/{size:g}MB"] for size in sizes]
        # Between consecutive sizes: the examples the extra text made per extra CPU second, so
        # that the start-up (imports, the tokenizer, the workers) every run pays is left out.
        marginal = [
            (larger["examples"] - smaller["examples"])
            / (larger["cpu_seconds"] - smaller["cpu_seconds"])
            for smaller, larger in zip(ordered, ordered[1:], strict=False)
        ]
        ratios[engine] = {
            "peak_largest_over_smallest": largest["peak_tree_rss_bytes"]
            / smallest["peak_tree_rss_bytes"],
            "throughput_spread": max(throughputs) / min(throughputs) - 1,
            "marginal_examples_per_cpu_second": marginal,
            "marginal_throughput_spread": max(marginal) / min(marginal) - 1 if marginal else 0.0,
        }
        ratio = ratios[engine]
        print(f"{engine}: peak at {sizes[-1]:g} MB / at {sizes[0]:g} MB = "
              f"{ratio['peak_largest_over_smallest']:.2f}; examples per CPU second within "
              f"{ratio['throughput_spread']:.0%} across the sizes, "
              f"{ratio['marginal_throughput_spread']:.0%} beyond the start-up")  # fmt: skip
    results = {"options": vars(args), "runs": runs, "ratios": ratios}
    prelude.write_results(args.results_json, results)
    return results


if __name__ == "__main__":
    main()
