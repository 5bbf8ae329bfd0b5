"""A benchmark with TensorFlow's oneDNN kernels off and on, in alternating processes.

TensorFlow decides once per process whether it runs oneDNN (`TF_ENABLE_ONEDNN_OPTS`; by
default on only on AVX512-VNNI/BF16, AVX-VNNI and AMX CPUs), so the two settings cannot share
a process: this runs the benchmark (`--benchmark`, a module of this package taking
`--results-json`) as a subprocess per setting, the settings alternating `--repeats` times so
that a change in the machine's load hits both alike, and the GEMM roof of each setting in the
same processes' order. Prints each setting's medians (the median over its repeats) and the
ratio of on to off; writes one JSON with every process's raw results.

    python -m benchmarks.onednn_on_off --repeats 2 -- --rounds 3 --steps-per-round 3
    python -m benchmarks.onednn_on_off --benchmark pretraining_step --repeats 2
    python -m benchmarks.onednn_on_off --onednn-max-cpu-isa AVX2 -- --rounds 3

`--onednn-max-cpu-isa AVX2` limits every library in the run to the kernels it runs on an
AVX2-only CPU, in both settings: oneDNN (TensorFlow's and PyTorch's, `ONEDNN_MAX_CPU_ISA`),
PyTorch's own kernels (`ATEN_CPU_CAPABILITY=avx2`) and MKL (`MKL_ENABLE_INSTRUCTIONS=AVX2`).
On an AVX-512 machine that is a stand-in for such a CPU (same kernels, another core): "off" is
TensorFlow's default there, Eigen's kernels, whose matrix products call oneDNN's GEMM
(TensorFlow's build: Eigen's contraction kernel is oneDNN's sgemm, which picks AVX2 or AVX-512
code by the CPU at run time), so the limit applies to it too (the GEMM roof with oneDNN off fell
from 121 to 74 GFLOP/s on a Sapphire Rapids); "on" is oneDNN's graph rewrite forced on, with
its AVX2 kernels. It is not a measurement of an AVX2 CPU, and its results say so (`isa_limits`
in every process's record). TensorFlow's bfloat16 rewrite ignores the limit: run it in float32,
as `--precision auto` does there.
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile

from benchmarks import prelude  # isort: skip  (first: sets the environment)

SETTINGS = ("0", "1")
ROOF = (
    "import json, sys; from benchmarks.roofs import gemm_roof; "
    "from keras_albert.cpu import onednn_enabled; "
    "print(json.dumps({'gflops': gemm_roof('float32'), 'onednn': onednn_enabled()}))"
)


def run_once(benchmark: str, setting: str, arguments: list[str], max_isa: str | None) -> dict:
    """One process of `benchmark` with `TF_ENABLE_ONEDNN_OPTS=setting` (and the kernels limited
    to `max_isa` where given, `prelude.isa_limits`): its results JSON, and the GEMM roof
    measured by another process right after."""
    environment = {**os.environ, "TF_ENABLE_ONEDNN_OPTS": setting}
    if max_isa:
        environment.update(prelude.isa_limits(max_isa))
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "results.json")
        command = [sys.executable, "-m", f"benchmarks.{benchmark}", "--results-json", path]
        subprocess.run([*command, *arguments], cwd=prelude.REPOSITORY, env=environment, check=True)
        with open(path, encoding="utf-8") as file:
            record = json.load(file)
    roof = subprocess.run(
        [sys.executable, "-c", ROOF],
        cwd=prelude.REPOSITORY,
        env=environment,
        check=True,
        capture_output=True,
        text=True,
    )
    record["gemm_roof"] = json.loads(roof.stdout.strip().splitlines()[-1])
    return record


def main() -> None:
    parser = prelude.parser(__file__, __doc__.splitlines()[0])
    parser.add_argument("--benchmark", default="encoder_forward")
    parser.add_argument("--repeats", type=int, default=2, help="processes per setting")
    parser.add_argument(
        "--onednn-max-cpu-isa",
        default=None,
        help="oneDNN's ONEDNN_MAX_CPU_ISA in both settings (AVX2: an AVX2-only CPU's kernels)",
    )
    parser.add_argument("arguments", nargs="*", help="the benchmark's own flags, after --")
    args = parser.parse_args()
    prelude.header()
    runs = {setting: [] for setting in SETTINGS}
    for _ in range(args.repeats):
        for setting in SETTINGS:
            runs[setting].append(
                run_once(args.benchmark, setting, args.arguments, args.onednn_max_cpu_isa)
            )
    summary = {}
    for setting, records in runs.items():
        names = records[0]["results"]["medians"]
        summary[setting] = {
            "onednn": records[0]["machine"]["onednn"],
            "medians": {
                name: statistics.median(r["results"]["medians"][name] for r in records)
                for name in names
            },
            "gemm_roof_gflops": statistics.median(r["gemm_roof"]["gflops"] for r in records),
        }
    limit = f", kernels limited to {args.onednn_max_cpu_isa}" if args.onednn_max_cpu_isa else ""
    print(f"{args.benchmark}, {args.repeats} processes per setting, alternating{limit}:")
    for setting, values in summary.items():
        figures = ", ".join(f"{name} {value:.2f}" for name, value in values["medians"].items())
        print(
            f"  TF_ENABLE_ONEDNN_OPTS={setting} (oneDNN {values['onednn']}): {figures}; "
            f"GEMM roof {values['gemm_roof_gflops']:.1f} GFLOP/s"
        )
    ratios = {
        name: summary["1"]["medians"][name] / summary["0"]["medians"][name]
        for name in summary["0"]["medians"]
    }
    print("  oneDNN on / off: " + ", ".join(f"{n} {r:.2f}x" for n, r in ratios.items()))
    prelude.write_results(
        args.results_json,
        {"options": vars(args), "summary": summary, "on_over_off": ratios, "runs": runs},
    )


if __name__ == "__main__":
    main()
