"""Pretraining steps per second: one process vs N local worker processes
(`MultiWorkerMirroredStrategy`, `TF_CONFIG` on 127.0.0.1), the same `tools/pretrain.py`
command and global batch, on random records in the original layout.

Run by hand: `python -m benchmarks.multi_worker_step [--preset albert_base_v2] [--workers 2]
[--batch-size 8] [--sequence-length 128] [--train-steps 12] [--rounds 2]`.

Rounds alternate one process and the N workers. The rate is the last log interval's
(`seconds_per_step` in the chief's summary: compilation and start-up excluded). On one machine
the workers share its cores (on a 2-core machine one core each, where the single process has
both), so the ratio measures what the collectives and the per-worker input pipelines cost
against one process on the same hardware, not a speed-up; on real hosts each worker has its
own. Keras's `fit` has no multi-worker figure: it fails under this strategy
(keras-team/keras#20585).
"""

import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile

from benchmarks import prelude  # isort: skip  (first: sets the environment)

import numpy as np

from keras_albert import get_preset
from keras_albert.pretraining.data.records import PretrainingExample, encode_example

TOOL = str(prelude.REPOSITORY / "tools" / "pretrain.py")
NUM_MASKED = 20


def write_random_records(directory, num_files, records_per_file, sequence_length, vocabulary):
    import tensorflow as tf

    rng = np.random.default_rng(0)
    half = (sequence_length - 3) // 2
    for index in range(num_files):
        path = os.path.join(directory, f"train-{index:05d}.tfrecord")
        with tf.io.TFRecordWriter(path) as writer:
            for _ in range(records_per_file):
                ids = [
                    2,
                    *rng.integers(5, vocabulary, half),
                    3,
                    *rng.integers(5, vocabulary, half),
                    3,
                ]
                positions = sorted(
                    rng.choice(np.arange(1, len(ids) - 1), NUM_MASKED, False).tolist()
                )
                example = PretrainingExample(
                    token_ids=ids,
                    segment_ids=[0] * (half + 2) + [1] * (half + 1),
                    token_boundary=[1] * len(ids),
                    mask_positions=positions,
                    mask_ids=[ids[p] for p in positions],
                    sentence_order_label=int(rng.integers(0, 2)),
                    span_lengths=[1] * NUM_MASKED,
                )
                writer.write(encode_example(example, sequence_length, NUM_MASKED))
    return os.path.join(directory, "train-*.tfrecord")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def run(args, data, output_dir, workers) -> float:
    """One run; returns the chief's steps per second over the last log interval."""
    command = [
        sys.executable, TOOL, "--preset", args.preset, "--train-data", data,
        "--output-dir", output_dir, "--train-steps", str(args.train_steps),
        "--batch-size", str(args.batch_size), "--log-every-steps", str(args.train_steps // 3),
        "--checkpoint-every-steps", str(args.train_steps), "--jit-compile", "false",
        "--strategy", "multi_worker" if workers > 1 else "cpu", "--verbose", "0",
    ]  # fmt: skip
    env = {**os.environ, **prelude.ENVIRONMENT}
    processes = []
    ports = [free_port() for _ in range(workers)]
    for index in range(workers):
        if workers > 1:
            cluster = {"worker": [f"127.0.0.1:{port}" for port in ports]}
            env = {**env, "TF_CONFIG": json.dumps(
                {"cluster": cluster, "task": {"type": "worker", "index": index}})}  # fmt: skip
        processes.append(subprocess.Popen(command, env=env, stdout=subprocess.PIPE,
                                          stderr=subprocess.STDOUT, text=True))  # fmt: skip
    for process in processes:
        output, _ = process.communicate()
        if process.returncode != 0:
            raise RuntimeError(f"a run failed:\n{output[-3000:]}")
    with open(os.path.join(output_dir, "summary.json"), encoding="utf-8") as f:
        return 1.0 / json.load(f)["seconds_per_step"]


def main() -> None:
    parser = prelude.parser(__file__, __doc__.splitlines()[0])
    parser.add_argument("--preset", default="albert_base_v2")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--sequence-length", type=int, default=128)
    parser.add_argument("--train-steps", type=int, default=12, help="a multiple of 3")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    prelude.header()

    vocabulary = get_preset(args.preset).vocabulary_size
    rates = {"one process": [], f"{args.workers} workers": []}
    with tempfile.TemporaryDirectory() as work:
        data = write_random_records(
            work, 2 * args.workers, args.batch_size * args.train_steps, args.sequence_length,
            vocabulary,
        )  # fmt: skip
        for round_index in range(args.rounds):
            for name, workers in (("one process", 1), (f"{args.workers} workers", args.workers)):
                output_dir = os.path.join(work, f"run-{round_index}-{workers}")
                rates[name].append(run(args, data, output_dir, workers))
                print(f"round {round_index + 1}: {name} {rates[name][-1]:.3f} steps/s", flush=True)
    medians = {name: statistics.median(values) for name, values in rates.items()}
    ratio = medians[f"{args.workers} workers"] / medians["one process"]
    print(
        f"{args.preset}, batch {args.batch_size}, seq {args.sequence_length}, float32, "
        f"{os.cpu_count()} CPUs shared by the workers: one process {medians['one process']:.3f} "
        f"steps/s, {args.workers} workers {medians[f'{args.workers} workers']:.3f} steps/s "
        f"({ratio:.2f}x); load {os.getloadavg()[0]:.1f}"
    )
    prelude.write_results(
        args.results_json,
        {"args": vars(args), "rates": rates, "medians": medians,
         "workers_over_one_process": ratio},
    )  # fmt: skip


if __name__ == "__main__":
    main()
