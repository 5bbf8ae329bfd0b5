"""What every benchmark does before it measures anything: the environment, the common flags,
the data paths, a header naming the machine, and the one writer of its raw results.

Run a benchmark from the repository's root as a module of the `benchmarks` package:

    python -m benchmarks.encoder_forward --help

so that `keras_albert`, `benchmarks.*` and `examples.main_job` import from the checkout with no
change to `sys.path`. A script imports this module before TensorFlow, Keras or PyTorch
(`from benchmarks import prelude  # isort: skip`): importing it sets the environment (Keras
on TensorFlow, TensorFlow's C++ log quiet) and imports none of them, so the PyTorch-only
`accelerator_peers.py` uses it too. Then:

    parser = prelude.parser(__file__, description)  # --results-json runs/benchmarks/<name>.json
    args = parser.parse_args(argv)
    prelude.header()                                 # CPU model and flags, cores, load, versions
    ...
    prelude.write_results(args.results_json, results)

The JSON holds the command, the date, the same machine facts as the header and the results,
so a figure quoted in the README can be checked against the run that produced it.
"""

import argparse
import datetime
import importlib.metadata
import json
import os
import pathlib
import platform
import runpy
import subprocess
import sys
import tempfile

# Set before any script imports TensorFlow or Keras; a value already in the environment wins.
ENVIRONMENT = {"KERAS_BACKEND": "tensorflow", "TF_CPP_MIN_LOG_LEVEL": "2"}
for _name, _value in ENVIRONMENT.items():
    os.environ.setdefault(_name, _value)

REPOSITORY = pathlib.Path(__file__).resolve().parents[1]
# Small fixtures the tests use too: the 30k-piece SentencePiece model, the SQuAD sample, SST-2 dev.
TEST_DATA = REPOSITORY / "tests" / "data"
# The project's full data sets beside the checkout (every GLUE task); the repository ships some.
SHARED_DATA = REPOSITORY.parent / "shared" / "data"

# Libraries whose version the header and the JSON name, where the script imported them.
LIBRARIES = (
    "keras_albert", "tensorflow", "tensorflow_text", "keras", "keras_hub", "tf_keras", "official",
    "torch", "transformers", "onnxruntime", "numpy",
)  # fmt: skip
# Those that set no `__version__`: named and versioned by their distribution.
DISTRIBUTIONS = {"official": "tf-models-official"}
# The CPU flags the header names: what decides float32 vs bfloat16 speed on a CPU.
HEADER_FLAGS = ("avx2", "avx512f", "avx512_bf16", "amx_bf16")


def data_path(*parts: str) -> str:
    """`data/<parts>` as the repository ships it (Austen, WikiText-2, SST-2, STS-B), else the
    same path under `../shared/data` (the GLUE tasks the repository does not ship)."""
    shipped = REPOSITORY.joinpath("data", *parts)
    return str(shipped if shipped.exists() else SHARED_DATA.joinpath(*parts))


def default_path(script: str) -> str:
    """`runs/benchmarks/<script name>.json`, relative to the working directory."""
    name = os.path.splitext(os.path.basename(script))[0]
    return os.path.join("runs", "benchmarks", f"{name}.json")


def parser(script: str, description: str | None = None, **kwargs) -> argparse.ArgumentParser:
    """An `ArgumentParser` (`kwargs` are its own) with `--results-json`, by default
    `runs/benchmarks/<script name>.json`."""
    new = argparse.ArgumentParser(description=description, **kwargs)
    new.add_argument(
        "--results-json",
        default=default_path(script),
        help="where the raw results go (default: %(default)s)",
    )
    return new


def cpu() -> dict:
    """`keras_albert.cpu.cpu_features()`: the CPU model name and flags from /proc/cpuinfo."""
    # Run from its file: the package's __init__ imports TensorFlow, which must not load before
    # a script's own imports (nor at all in accelerator_peers.py); cpu.py is stdlib only.
    return runpy.run_path(str(REPOSITORY / "keras_albert" / "cpu.py"))["cpu_features"]()


def load_average() -> str:
    """The 1, 5 and 15 minute load averages, e.g. `1.02 0.87 0.80`."""
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def versions() -> dict:
    """Python's version and that of each of `LIBRARIES` the script has imported."""
    found = {"python": platform.python_version()}
    for name in LIBRARIES:
        if sys.modules.get(name) is None:  # None: made unimportable
            continue
        if name in DISTRIBUTIONS:
            found[DISTRIBUTIONS[name]] = importlib.metadata.version(DISTRIBUTIONS[name])
        else:
            found[name] = getattr(sys.modules[name], "__version__", "unknown")
    return found


def onednn() -> bool | None:
    """Whether TensorFlow runs oneDNN's kernels in this process (`keras_albert.cpu.onednn_enabled`:
    by default only on AVX512-VNNI/BF16, AVX-VNNI and AMX CPUs); None where the script has not
    imported TensorFlow (this does not import it)."""
    if sys.modules.get("tensorflow") is None:
        return None
    return runpy.run_path(str(REPOSITORY / "keras_albert" / "cpu.py"))["onednn_enabled"]()


def commit() -> str:
    """The checkout's commit, `+` where its tracked files differ from it; "unknown" outside git."""

    def git(*args):
        return subprocess.run(
            ["git", *args], cwd=REPOSITORY, capture_output=True, text=True, check=False
        )

    head = git("rev-parse", "HEAD")
    if head.returncode != 0:
        return "unknown"
    dirty = git("diff", "--quiet", "HEAD").returncode != 0
    return head.stdout.strip() + ("+" if dirty else "")


def isa_limits(max_isa: str) -> dict[str, str]:
    """The environment that limits oneDNN (TensorFlow's and PyTorch's), PyTorch's own kernels
    and MKL to the instruction set `max_isa` ("AVX2"); its names are what `machine()` records."""
    return {
        "ONEDNN_MAX_CPU_ISA": max_isa.upper(),
        "ATEN_CPU_CAPABILITY": max_isa.lower(),
        "MKL_ENABLE_INSTRUCTIONS": max_isa.upper(),
    }


def machine() -> dict:
    """What the header prints and the JSON records: CPU model, family and flags, oneDNN's state,
    cores, load, versions, commit."""
    return {
        "cpu": cpu(),
        "onednn": onednn(),
        "tf_enable_onednn_opts": os.environ.get("TF_ENABLE_ONEDNN_OPTS"),
        # The libraries' own limits on the instruction sets they dispatch to ("AVX2": the
        # kernels an AVX2-only CPU runs, on any newer x86-64 CPU; `benchmarks.onednn_on_off`:
        # with oneDNN off too, as TensorFlow's Eigen matrix products call oneDNN's GEMM).
        "isa_limits": {name: os.environ.get(name) for name in isa_limits("")},
        "commit": commit(),
        "processor": platform.machine(),
        "cpus": os.cpu_count(),
        "load_average": os.getloadavg(),
        "versions": versions(),
    }


def header() -> dict:
    """Prints the machine in two lines; returns `machine()`."""
    facts = machine()
    flags = facts["cpu"]["flags"]
    names = ", ".join(f"{name} {'yes' if flags.get(name) else 'no'}" for name in HEADER_FLAGS)
    family = f"family {facts['cpu'].get('family')} model {facts['cpu'].get('model')}"
    print(
        f"CPU: {facts['cpu']['model_name']}, {family} ({names}); oneDNN {facts['onednn']}; "
        f"{facts['cpus']} cores; load {load_average()}"
    )
    print("versions: " + ", ".join(f"{name} {value}" for name, value in facts["versions"].items()))
    return facts


def command() -> str:
    """The command line as it was run: `python -m benchmarks.<name> ...` for a module."""
    spec = getattr(sys.modules["__main__"], "__spec__", None)
    program = f"python -m {spec.name}" if spec else os.path.relpath(sys.argv[0])
    return " ".join([program, *sys.argv[1:]])


def write_results(path: str, results: dict) -> str:
    """Writes `results` (plus the command, the date and `machine()`) to `path` atomically;
    prints and returns the path."""
    record = {
        "command": command(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": machine(),
        "results": results,
    }
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    with tempfile.NamedTemporaryFile(
        "w", encoding="utf-8", dir=directory, suffix=".partial", delete=False
    ) as f:
        json.dump(record, f, indent=2)
    os.replace(f.name, path)
    print(f"raw results: {path}")
    return path


def directory_bytes(path: str) -> int:
    """The bytes of every file below `path` (an export's or a checkpoint's size)."""
    return sum(
        os.path.getsize(os.path.join(root, name))
        for root, _, names in os.walk(path)
        for name in names
    )
