"""The served classifier under 1, 4 and 16 concurrent callers, through the session path.

Run by hand: `python -m benchmarks.serving_concurrency --seconds 10 --callers 1,4,16`.

An ALBERT-base-shaped classifier (albert_base_v2, 2 classes, initial weights with small random
offsets on every bias and LayerNorm γ/β, as `inference_precision.py`) is exported at each
`--precisions` and loaded ONCE with the TF1 session loader, as TF Serving loads it; every caller
is a thread sending one SST-2 dev sentence per request to `serving_default` (strings in) and
waiting for its answer before the next (a closed loop), for `--seconds`. Two ways to run the
requests, as TF Serving does with and without `--enable_batching`:

- `direct`: every request is its own `Session.run` (TF Serving without batching: concurrent
  requests run concurrently in one session and share its thread pools);
- `batching`: requests queue and are merged into one `Session.run` of up to `max_batch_size`
  strings, a batch closing when full or `batch_timeout_micros` after its first request, run
  by `num_batch_threads` threads — TF Serving's `BatchingSession` with the
  `batching_parameters.txt` our layout writes (`serving_layout.BatchingParameters`, defaults).
  This is an emulation in Python (the model server binary is not installed here); the session,
  the graph and the merged batches are the same.

Prints requests/s and latency p50/p90/p99 per precision, mode and caller count; writes the raw
latencies to `--results-json` and a plot beside it.
"""

import os
import queue
import statistics
import tempfile
import threading
import time

from benchmarks import prelude  # isort: skip  (first: sets the environment)

import numpy as np

from benchmarks.inference_precision import Session, sst2_dev
from keras_albert import AlbertBackbone, AlbertClassifier
from keras_albert.export import export_saved_model
from keras_albert.export.serving_layout import BatchingParameters
from keras_albert.text.tokenizer import AlbertTokenizer

DATA = prelude.TEST_DATA


class Direct:
    """Each request is one `Session.run` of batch 1."""

    def __init__(self, session: Session):
        self.session = session

    def __call__(self, text: bytes):
        return self.session.run("serving_default", {"text": np.array([text], dtype=object)})[
            "label"
        ][0]

    def close(self):
        pass


class Batching:
    """Requests merged into batches as TF Serving's `BatchingSession` merges them."""

    def __init__(self, session: Session, parameters: BatchingParameters):
        self.session = session
        self.parameters = parameters
        self.requests = queue.Queue()
        self.batches = queue.Queue(maxsize=parameters.max_enqueued_batches)
        self.stopping = threading.Event()
        self.threads = [threading.Thread(target=self._form_batches, daemon=True)]
        self.threads += [
            threading.Thread(target=self._run_batches, daemon=True)
            for _ in range(parameters.num_batch_threads)
        ]
        for thread in self.threads:
            thread.start()

    def __call__(self, text: bytes):
        answer = queue.SimpleQueue()
        self.requests.put((text, answer))
        return answer.get()

    def _form_batches(self):
        timeout = self.parameters.batch_timeout_micros / 1e6
        while not self.stopping.is_set():
            try:
                batch = [self.requests.get(timeout=0.05)]
            except queue.Empty:
                continue
            closes = time.perf_counter() + timeout
            while len(batch) < self.parameters.max_batch_size:
                left = closes - time.perf_counter()
                if left <= 0:
                    break
                try:
                    batch.append(self.requests.get(timeout=left))
                except queue.Empty:
                    break
            self.batches.put(batch)

    def _run_batches(self):
        while not self.stopping.is_set():
            try:
                batch = self.batches.get(timeout=0.05)
            except queue.Empty:
                continue
            texts = np.array([text for text, _ in batch], dtype=object)
            labels = self.session.run("serving_default", {"text": texts})["label"]
            for (_, answer), label in zip(batch, labels, strict=True):
                answer.put(label)

    def close(self):
        self.stopping.set()
        for thread in self.threads:
            thread.join()


def closed_loop(engine, texts: list[bytes], callers: int, seconds: float) -> dict:
    """`callers` threads sending requests back to back for `seconds`; latencies in seconds."""
    latencies = [[] for _ in range(callers)]
    deadline = time.perf_counter() + seconds

    def caller(index: int):
        rng = np.random.default_rng(index)
        while time.perf_counter() < deadline:
            text = texts[rng.integers(len(texts))]
            start = time.perf_counter()
            engine(text)
            latencies[index].append(time.perf_counter() - start)

    threads = [threading.Thread(target=caller, args=(i,)) for i in range(callers)]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - start
    flat = np.array([value for values in latencies for value in values])
    return {
        "requests_per_second": len(flat) / elapsed,
        "p50_ms": float(np.percentile(flat, 50) * 1e3),
        "p90_ms": float(np.percentile(flat, 90) * 1e3),
        "p99_ms": float(np.percentile(flat, 99) * 1e3),
        "requests": len(flat),
    }


def base_classifier() -> AlbertClassifier:
    model = AlbertClassifier(AlbertBackbone.from_preset_name("albert_base_v2"), num_classes=2)
    offsets = np.random.default_rng(1)
    for weight in model.weights:
        if weight.path.endswith(("bias", "gamma", "beta")):
            weight.assign(weight.numpy() + offsets.normal(0.0, 0.02, weight.shape))
    return model


def main() -> None:
    parser = prelude.parser(__file__, __doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="per measurement")
    parser.add_argument("--callers", default="1,4,16", help="concurrent callers")
    parser.add_argument("--precisions", default="float32,bfloat16")
    parser.add_argument("--rounds", type=int, default=2, help="interleaved rounds")
    parser.add_argument("--exports-dir", help="keep the exports here between runs")
    args = parser.parse_args()
    prelude.header()
    callers = [int(value) for value in args.callers.split(",")]
    precisions = args.precisions.split(",")

    features = prelude.cpu()
    tokenizer = AlbertTokenizer(DATA / "30k-clean.model")
    texts = [text.encode() for text in sst2_dev()[0]]
    model = base_classifier()
    directory = args.exports_dir or tempfile.mkdtemp()
    parameters = BatchingParameters()
    engines = {}
    for precision in precisions:
        path = os.path.join(directory, f"sst2_base_{precision}")
        if not os.path.exists(path):
            export_saved_model(model, tokenizer, path, precision=precision)
        session = Session(path)
        engines[f"{precision} direct"] = Direct(session)
        engines[f"{precision} batching"] = Batching(session, parameters)
    for engine in engines.values():  # warm: every batch size the runs will see
        closed_loop(engine, texts, max(callers), 1.0)

    runs = {name: {count: [] for count in callers} for name in engines}
    for round_index in range(args.rounds):
        for count in callers:
            for name, engine in engines.items():
                runs[name][count].append(closed_loop(engine, texts, count, args.seconds))
        load = prelude.load_average()
        print(f"  round {round_index + 1}/{args.rounds} (load {load})", flush=True)
    for engine in engines.values():
        engine.close()

    summary = {}
    print(f"\nbatching parameters: {parameters}")
    for name, by_count in runs.items():
        for count, results in by_count.items():
            row = {
                key: statistics.median(result[key] for result in results)
                for key in ("requests_per_second", "p50_ms", "p90_ms", "p99_ms")
            }
            summary[f"{name}, {count} callers"] = row
            print(
                f"  {name:18s} {count:3d} callers: {row['requests_per_second']:7.1f} req/s  "
                f"p50 {row['p50_ms']:7.1f}  p90 {row['p90_ms']:7.1f}  p99 {row['p99_ms']:7.1f} ms"
            )
    prelude.write_results(
        args.results_json,
        {
            "cpu": features,
            "load_average_after": prelude.load_average(),
            "summary": summary,
            "runs": runs,
        },
    )
    plot(summary, engines, callers, os.path.splitext(args.results_json)[0] + ".png")


def plot(summary: dict, engines: dict, callers: list[int], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    for name in engines:
        rows = [summary[f"{name}, {count} callers"] for count in callers]
        left.plot(callers, [row["requests_per_second"] for row in rows], marker="o", label=name)
        right.plot(callers, [row["p99_ms"] for row in rows], marker="o", label=name)
    left.set(xlabel="concurrent callers", ylabel="requests/s", xscale="log")
    right.set(xlabel="concurrent callers", ylabel="p99 latency (ms)", xscale="log")
    left.legend()
    figure.suptitle("ALBERT-base classifier, session path, one SST-2 sentence per request")
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    print(f"plot: {path}")


if __name__ == "__main__":
    main()
