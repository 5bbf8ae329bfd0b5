"""Where one of our training steps spends its kernel time, by kind of kernel: float32 against
mixed_bfloat16, on the steps `training_precision.py` times.

Run by hand, on a quiet machine (the test extra: keras-hub, torch, transformers, which
`training_precision.py` imports):
    python -m benchmarks.training_step_profile --task pretraining
    python -m benchmarks.training_step_profile --task squad --policies mixed_bfloat16

For each policy: ALBERT-base, the drivers' step (`training_precision.ours_runner`, no XLA),
warmed up, then `--steps` steps under TensorFlow's profiler. The trace's kernels (the executor
threads' `tf_Compute` lines; a oneDNN kernel uses both cores inside) are attributed to groups:
the matrix multiplies forward (fused with their bias) and backward, the element-wise ops, the
reductions (gradient sums over passes and rows), casts and transposes. The backward pass runs
independent kernels side by side on the two executor threads (a weight's gradient beside its
input's), so each instant of the step is shared equally among the kernels running then: the
groups' shares add up to the wall time the kernels cover, not to the sum of their durations.
Also printed: the ten costliest (kernel, node) pairs by duration. bfloat16's gain is bounded
by what is not a matrix multiply, and by how far its multiplies fall short of half the
float32 time.
"""

import collections
import glob
import os
import tempfile

from benchmarks import prelude  # isort: skip  (first: sets the environment)

import keras
import tensorflow as tf
from tensorflow.tsl.profiler.protobuf import xplane_pb2

from benchmarks.batches import pretraining_batch
from benchmarks.training_precision import ours_runner, squad_batch
from keras_albert.config import get_preset

GROUPS = {
    "multiplies": ("MatMul",),  # any kernel whose type contains it
    "element-wise": (
        "Mul",
        "AddV2",
        "Sub",
        "Square",
        "SquaredDifference",
        "Tanh",
        "TanhGrad",
        "Neg",
        "Rsqrt",
        "RsqrtGrad",
        "RealDiv",
        "Sqrt",
        "Maximum",
        "Minimum",
        "Select",
        "SelectV2",
        "Exp",
    ),  # fmt: skip
    "reductions": ("AddN", "Sum", "BiasAddGrad", "Mean", "Max"),
    "casts": ("Cast",),
    "transposes": ("Transpose", "_MklTranspose"),
}


def group_of(kernel: str) -> str:
    if "MatMul" in kernel:
        return "multiplies"
    return next((name for name, kinds in GROUPS.items() if kernel in kinds), "other")


def kernel_events(logdir: str) -> list[tuple[float, float, str, str]]:
    """(start ms, end ms, kernel type, node name) of every kernel on the executor threads."""
    (path,) = glob.glob(os.path.join(logdir, "**", "*.xplane.pb"), recursive=True)
    space = xplane_pb2.XSpace()
    with open(path, "rb") as file:
        space.ParseFromString(file.read())
    events = []
    for plane in space.planes:
        names = {key: value.name for key, value in plane.event_metadata.items()}
        for line in plane.lines:
            if not line.name.startswith("tf_Compute"):
                continue
            for event in line.events:
                name, _, kernel = names.get(event.metadata_id, "").rpartition(":")
                if name and not name.startswith("ExecutorState"):  # the executor's own span
                    start = (line.timestamp_ns * 1000 + event.offset_ps) / 1e9
                    events.append((start, start + event.duration_ps / 1e9, kernel, name))
    return events


def wall_shares(events, label) -> collections.Counter:
    """label(kernel, name) -> wall milliseconds, each instant split among the kernels then."""
    edges = sorted({time for start, end, *_ in events for time in (start, end)})
    shares = collections.Counter()
    order = sorted(events)
    active, next_event = [], 0
    for left, right in zip(edges, edges[1:], strict=False):
        while next_event < len(order) and order[next_event][0] <= left:
            active.append(order[next_event])
            next_event += 1
        active = [event for event in active if event[1] > left]
        for _, _, kernel, name in active:
            shares[label(kernel, name)] += (right - left) / len(active)
    return shares


def label_of(kernel: str, name: str) -> str:
    group = group_of(kernel)
    if group == "multiplies":
        group += " backward" if "grad" in name.lower() else " forward"
    return group


def profile(policy: str, task: str, steps: int) -> dict:
    config = get_preset("albert_base_v2")
    if task == "pretraining":
        batch = pretraining_batch(8, 128, 20, config.vocabulary_size)
    else:
        batch = squad_batch(4, 384, config.vocabulary_size)
    step = ours_runner(config, task, batch, policy, jit_compile=False)
    for _ in range(3):
        step()
    logdir = tempfile.mkdtemp()
    tf.profiler.experimental.start(logdir)
    for _ in range(steps):
        step()
    tf.profiler.experimental.stop()
    events = kernel_events(logdir)
    groups = {key: ms / steps for key, ms in wall_shares(events, label_of).items()}
    durations = collections.Counter()
    for start, end, kernel, name in events:
        durations[kernel, name] += (end - start) / steps
    top = [
        {"kernel": kernel, "node": name[-60:], "ms": ms}
        for (kernel, name), ms in durations.most_common(10)
    ]
    return {"groups_wall_ms_per_step": groups, "top": top}


def main() -> None:
    parser = prelude.parser(__file__, __doc__.splitlines()[0])
    parser.add_argument("--task", choices=("pretraining", "squad"), default="pretraining")
    parser.add_argument("--policies", default="float32,mixed_bfloat16")
    parser.add_argument("--steps", type=int, default=2, help="profiled steps per policy")
    args = parser.parse_args()
    prelude.header()
    features = prelude.cpu()
    results = {"cpu": features, "task": args.task, "load_start": os.getloadavg()}
    for policy in args.policies.split(","):
        keras.config.set_dtype_policy(policy)
        try:
            results[policy] = profile(policy, args.task, args.steps)
        finally:
            keras.config.set_dtype_policy("float32")
        groups = results[policy]["groups_wall_ms_per_step"]
        total = sum(groups.values())
        print(f"\n{policy}, {args.task}: kernels cover {total:.0f} ms of a step's wall time")
        for group, ms in sorted(groups.items(), key=lambda item: -item[1]):
            print(f"  {group:22s} {ms:7.1f} ms  {100 * ms / total:5.1f} %")
        for row in results[policy]["top"]:
            print(f"    {row['kernel']:24s} {row['node']:60s} {row['ms']:7.1f} ms")
    results["load_end"] = os.getloadavg()
    prelude.write_results(args.results_json, results)
    print(f"\nload at the end {results['load_end']}; raw: {args.results_json}")


if __name__ == "__main__":
    main()
