"""The checks to run whenever a GPU or TPU is at hand: ALBERT-base pretraining throughput and
MFU on the Keras backend given, a short run's losses in each mixed precision against
float32's, and the same step of Hugging Face's model (the PyTorch peer) in the same run.

    python -m benchmarks.accelerator_checklist --backend jax|torch|tensorflow [--batch-size 256]
    python -m benchmarks.accelerator_checklist --backend jax --tiny   # on a CPU, a tiny model

`--backend` (default: `KERAS_BACKEND`, else TensorFlow) picks what runs:

- `tensorflow` (`checklist_loop.py`): the pretraining driver's loop under `tf.distribute`, in
  mixed_float16 and mixed_bfloat16, with and without XLA.
- `jax`, `torch` (`checklist_fit.py`): Keras's own trainer (`compile_pretrainer`, LAMB) in
  float32 and mixed_bfloat16; JAX under XLA, PyTorch eager and `torch.compile`d. Imports no
  TensorFlow: this runs on an accelerator image with PyTorch or JAX, Keras and this checkout.

Every configuration trains on one fixed random batch (`--sequence-length` 128, `--num-masked`
20) from the same initial weights. MFU: model FLOPs per second (forward + backward,
`roofs.py`) over the peak: the `--peak-tflops` given (the datasheet's dense figure for the
16-bit dtypes), else the GEMM roof measured in this run on the same backend in that dtype.
Convergence: `--convergence-steps` steps in float32 and in each other configuration; the
largest difference of the per-step losses must stay within `--loss-tolerance`.

The peer: where PyTorch and transformers import (and without `--no-peer`), the run starts with
`benchmarks.accelerator_peers` in a process of its own (first: JAX and TensorFlow reserve most
of a GPU's memory once they start) on the same batch, and prints our rate over HF's, per
compute dtype, the best configuration of each. Writes `--results-json` (the peer's own beside
it, `*_peer.json`) after every configuration and exits 1 when a loss check fails, 2 when no
accelerator is found (without `--tiny`).
"""

import importlib.util
import json
import os
import subprocess
import sys

from benchmarks import prelude  # isort: skip  (first: sets the environment)

from benchmarks.checklist import TINY, checklist_parser, make_tiny
from benchmarks.roofs import BACKENDS


def compute_dtype(name: str) -> str:
    """The dtype a configuration's name says its matrix multiplies run in."""
    for dtype in ("bfloat16", "float16"):
        if dtype in name:
            return dtype
    return "float32"


def run_peer(args) -> dict | None:
    """`accelerator_peers.py` on the same batch, in a process of its own; its results, or None
    where it is skipped (`--no-peer`, no PyTorch or transformers)."""
    missing = [name for name in ("torch", "transformers") if importlib.util.find_spec(name) is None]
    if args.no_peer or missing:
        print(f"peer: skipped ({'--no-peer' if args.no_peer else ', '.join(missing) + ' missing'})")
        return None
    path = os.path.splitext(args.results_json)[0] + "_peer.json"
    flags = ["--results-json", path, "--batch-size", args.batch_size, "--sequence-length",
             args.sequence_length, "--num-masked", args.num_masked, "--steps", args.steps,
             "--convergence-steps", args.convergence_steps, "--loss-tolerance",
             args.loss_tolerance, *(["--tiny"] if args.tiny else []),
             *(["--peak-tflops", args.peak_tflops] if args.peak_tflops else [])]  # fmt: skip
    # Keras on PyTorch, which the peer has anyway: it reads ALBERT-base's preset from the library.
    search_path = os.pathsep.join([str(prelude.REPOSITORY),
                                   *filter(None, [os.environ.get("PYTHONPATH")])])  # fmt: skip
    environment = {**os.environ, "KERAS_BACKEND": "torch", "PYTHONPATH": search_path}
    print("peer: python -m benchmarks.accelerator_peers " + " ".join(map(str, flags)), flush=True)
    status = subprocess.run([sys.executable, "-m", "benchmarks.accelerator_peers",
                             *map(str, flags)], env=environment).returncode  # fmt: skip
    if not os.path.exists(path):
        print(f"peer: exited {status} without results")
        return None
    with open(path, encoding="utf-8") as file:
        return {"exit_status": status, **json.load(file)["results"]}


def peer_ratios(ours: dict, peer: dict) -> dict[str, float]:
    """Per dtype both measured: our best sequences/s over the peer's best."""
    best = [{}, {}]
    for side, throughput in zip(best, (ours, peer), strict=True):
        for name, entry in throughput.items():
            dtype = compute_dtype(name)
            side[dtype] = max(side.get(dtype, 0.0), entry["sequences_per_second"])
    return {dtype: rate / best[1][dtype] for dtype, rate in best[0].items() if dtype in best[1]}


def main(argv=None) -> int:
    parser = checklist_parser(__file__, __doc__.splitlines()[0], batch_size=256)
    parser.add_argument("--backend", choices=BACKENDS, default=os.environ["KERAS_BACKEND"])
    parser.add_argument("--learning-rate", type=float, default=1e-3)
    parser.add_argument("--no-peer", action="store_true", help="skip the PyTorch peer")
    args = parser.parse_args(argv)
    os.environ["KERAS_BACKEND"] = args.backend  # read once, when Keras is imported below
    prelude.header()
    if args.tiny:
        make_tiny(args)
    peer = run_peer(args)
    # Keras and the library import here, on the backend chosen.
    from keras_albert.config import AlbertConfig, get_preset

    if args.backend == "tensorflow":
        from benchmarks.checklist_loop import run
    else:
        from benchmarks.checklist_fit import run
    config = AlbertConfig(**TINY) if args.tiny else get_preset("albert_base_v2")
    results = {}

    def save(measured: dict) -> None:
        results.update(measured, peer=peer)
        if peer:
            results["over_peer"] = peer_ratios(measured["throughput"], peer["throughput"])
        prelude.write_results(args.results_json, results)

    status = run(args, config, save)
    for dtype, ratio in results.get("over_peer", {}).items():
        print(f"  ours / HF, best {dtype}: {ratio:.2f}x")
    return status


if __name__ == "__main__":
    sys.exit(main())
