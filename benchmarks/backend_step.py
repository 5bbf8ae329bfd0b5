"""ALBERT-base on Keras's three backends on this CPU: the forward pass and a fine-tuning step
of a classifier, TensorFlow vs JAX vs PyTorch.

    python -m benchmarks.backend_step [--rounds 3] [--batch-size 8] [--backends jax,torch]

Each backend runs in a process of its own (Keras reads `KERAS_BACKEND` once), all alive at
once: the parent asks each in turn for one round, so that the rounds interleave and a change
in the machine's load hits every backend alike. In each process: `AlbertClassifier` (2
classes) on ALBERT-base (`albert_base_v2`, random weights), batch `--batch-size` ×
`--sequence-length`, float32, compiled by Keras with its defaults (`jit_compile="auto"`, which
each backend resolves: the JSON records what it chose) and the fine-tuning optimizer
(`training.clipping.adamw`, AdamW clipping the global norm); the forward is
`predict_on_batch`, the step `train_on_batch` (Keras's compiled functions), after
`--warmup-calls` calls of each. Prints sequences/s (median of the rounds, and their range) and
each backend's ratio to TensorFlow's.
"""

import json
import os
import subprocess
import sys
import time

from benchmarks import prelude  # isort: skip  (first: sets the environment)

from benchmarks.interleaved import report
from benchmarks.roofs import BACKENDS

TASKS = ("forward", "train_step")


def serve(args) -> None:
    """The worker: builds the model, warms it up, then times one round per line on stdin."""
    import keras
    import numpy as np

    from keras_albert import AlbertBackbone, AlbertClassifier
    from keras_albert.training.clipping import adamw

    keras.utils.set_random_seed(0)
    model = AlbertClassifier(AlbertBackbone.from_preset_name("albert_base_v2"), num_classes=2)
    model.compile(optimizer=adamw(2e-5),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))  # fmt: skip
    rng = np.random.default_rng(0)
    shape = (args.batch_size, args.sequence_length)
    x = {
        "token_ids": rng.integers(5, 30000, shape).astype("int32"),
        "segment_ids": np.zeros(shape, "int32"),
        "padding_mask": np.ones(shape, "int32"),
    }
    y = rng.integers(0, 2, args.batch_size).astype("int32")
    runners = {"forward": lambda: model.predict_on_batch(x),
               "train_step": lambda: model.train_on_batch(x, y)}  # fmt: skip
    for run in runners.values():
        for _ in range(args.warmup_calls):
            run()
    backend = keras.backend.backend()  # also the name of its library's module
    facts = {"jit_compile": model.jit_compile, "keras": keras.__version__,
             backend: sys.modules[backend].__version__}  # fmt: skip
    print(json.dumps(facts), flush=True)
    for _ in sys.stdin:
        rates = {}
        for name, run in runners.items():
            start = time.perf_counter()
            for _ in range(args.steps_per_round):
                run()
            rates[name] = args.batch_size * args.steps_per_round / (time.perf_counter() - start)
        print(json.dumps(rates), flush=True)


def start(backend: str, argv: list[str]) -> tuple[subprocess.Popen, dict]:
    """A worker process on `backend`, once it is warm; and what it said then."""
    environment = {**os.environ, "KERAS_BACKEND": backend, "PYTHONPATH": str(prelude.REPOSITORY)}
    worker = subprocess.Popen([sys.executable, "-m", "benchmarks.backend_step", "--worker", *argv],
                              env=environment, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True)  # fmt: skip
    return worker, json.loads(worker.stdout.readline())


def main(argv=None) -> None:
    parser = prelude.parser(__file__, __doc__.splitlines()[0])
    parser.add_argument("--backends", default=",".join(BACKENDS))
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--sequence-length", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps-per-round", type=int, default=3)
    parser.add_argument("--warmup-calls", type=int, default=2)
    parser.add_argument("--worker", action="store_true", help="(internal) one backend's process")
    args = parser.parse_args(argv)
    if args.worker:
        serve(args)
        return
    prelude.header()
    backends = args.backends.split(",")
    forwarded = [arg for arg in (argv or sys.argv[1:]) if arg != "--worker"]
    workers, chosen = {}, {}
    for backend in backends:  # one at a time: each warms up on a machine the others leave idle
        workers[backend], chosen[backend] = start(backend, forwarded)
        print(f"{backend}: warm ({chosen[backend]})", flush=True)
    rates = {task: {backend: [] for backend in backends} for task in TASKS}
    for _ in range(args.rounds):
        for backend, worker in workers.items():
            worker.stdin.write("round\n")
            worker.stdin.flush()
            for task, rate in json.loads(worker.stdout.readline()).items():
                rates[task][backend].append(rate)
    for worker in workers.values():
        worker.stdin.close()
        worker.wait()
    print(
        f"ALBERT-base classifier, batch {args.batch_size} × {args.sequence_length}, float32, "
        f"{os.cpu_count()} CPU threads, {args.rounds} interleaved rounds, "
        f"load {prelude.load_average()}"
    )
    medians, ratios = {}, {}
    for task in TASKS:
        print(f"{task}:")
        medians[task] = report(rates[task])
        reference = medians[task].get("tensorflow")
        ratios[task] = {b: m / reference for b, m in medians[task].items()} if reference else {}
        for backend, ratio in ratios[task].items():
            print(f"  {backend} / tensorflow: {ratio:.2f}x")
    prelude.write_results(
        args.results_json,
        {"options": vars(args), "workers": chosen, "sequences_per_second": rates,
         "medians": medians, "over_tensorflow": ratios},
    )  # fmt: skip


if __name__ == "__main__":
    main()
