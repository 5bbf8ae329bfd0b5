"""Serving speed and accuracy by precision and depth, against Hugging Face + ONNX Runtime.

Run by hand (needs the `bench` extra: onnxruntime, onnx, onnxscript, tf2onnx):
    python -m benchmarks.inference_precision --rounds 5 \\
        --models normal=runs/sst2_tiny/best.keras elastic=runs/sst2_tiny_elastic/best.keras

In ONE process, in interleaved rounds (every engine once per round, so that a change of the
machine's load hits all alike):
- our SavedModel of an ALBERT-base-shaped classifier (albert_base_v2, 2 classes, initial
  weights with small random offsets on every bias and LayerNorm γ/β: a trained model's are
  not 0 and 1, and those would let TensorFlow fold the bias adds and LayerNorm scales away and
  time a graph no trained model has) at float32 /
  bfloat16 / int8 and with fewer passes (`--depths`, at each of `--depth-precisions`), each
  loaded with the TF1 session loader and run by tensor names through `serve_token_ids`, as
  TF Serving runs it;
- the same weights through our HF converter → `AlbertForSequenceClassification` →
  `torch.onnx.export` → ONNX Runtime, fp32 and int8 (`quantize_dynamic`, int8 weights);
- the same weights through our own ONNX export (`export_onnx`: Keras's TensorFlow graph via
  tf2onnx) → ONNX Runtime, fp32 and int8 ("ours onnx"), and the ratio of each to HF's.
Shapes: batch 1 of a short SST-2 sentence (p50 and p99 latency) and batch 8 × 128 tokens
(sequences/s). All engines get the same token ids (tokenization is not timed).

Accuracy: SST-2 dev (tests/data/sst2_dev.tsv, 872 sentences) of each fine-tuned classifier
given with `--models`, at every precision and every depth of `--small-depths` (the model each
export serves, `serving_model(...)`, run in process on the same packed token ids), through ONNX
Runtime fp32/int8, with the latency per batch of 64 of that small model at each depth.

Prints the CPU flags found (bfloat16 and int8 only pay with AVX512-BF16/VNNI or AMX), the
load average, medians and ratios; writes `--results-json` and the plot beside it (`.png`).
"""

import json
import os
import statistics
import tempfile
import time

from benchmarks import prelude  # isort: skip  (first: sets the environment)

import keras
import numpy as np
import tensorflow as tf
import tensorflow_text  # noqa: F401

from keras_albert import AlbertBackbone, AlbertClassifier
from keras_albert.convert.huggingface import write_hf_directory
from keras_albert.export import ClassificationServingModule, export_onnx, export_saved_model
from keras_albert.serving.precision import SERVING_PRECISIONS, serving_model
from keras_albert.text.tokenizer import AlbertTokenizer

DATA = prelude.TEST_DATA


class Session:
    """A SavedModel loaded as TF Serving loads it, run by the signature's tensor names."""

    def __init__(self, path: str):
        self.session = tf.compat.v1.Session(graph=tf.Graph())
        meta_graph = tf.compat.v1.saved_model.loader.load(self.session, ["serve"], path)
        self.signatures = meta_graph.signature_def

    def run(self, signature_name: str, inputs: dict) -> dict:
        signature = self.signatures[signature_name]
        feed = {signature.inputs[name].name: value for name, value in inputs.items()}
        fetch = {name: info.name for name, info in signature.outputs.items()}
        return self.session.run(fetch, feed)

    def logits(self, inputs: dict) -> np.ndarray:
        return self.run("serve_token_ids", inputs)["logits"]


class OnnxEngine:
    """An ONNX model in an ONNX Runtime session, fp32 or int8 (`quantize_dynamic`, int8
    weights): Hugging Face's (`hf`: int64 `input_ids`, `attention_mask`, `token_type_ids`) or
    ours (`export_onnx`: the model's int32 inputs)."""

    def __init__(self, path: str, int8: bool, hf: bool):
        import onnxruntime

        if int8:
            from onnxruntime.quantization import QuantType, quantize_dynamic

            quantized = os.path.splitext(path)[0] + "_int8.onnx"
            if not os.path.exists(quantized):
                quantize_dynamic(path, quantized, weight_type=QuantType.QInt8)
            path = quantized
        self.hf = hf
        options = onnxruntime.SessionOptions()
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.session = onnxruntime.InferenceSession(
            path, options, providers=["CPUExecutionProvider"]
        )

    def logits(self, inputs: dict) -> np.ndarray:
        if not self.hf:
            return self.session.run(["logits"], inputs)[0]
        feed = {
            "input_ids": inputs["token_ids"].astype(np.int64),
            "attention_mask": inputs["padding_mask"].astype(np.int64),
            "token_type_ids": inputs["segment_ids"].astype(np.int64),
        }
        return self.session.run(["logits"], feed)[0]


def onnx_engines(model, tokenizer, directory: str) -> dict:
    """HF's ONNX and ours of `model`, fp32 and int8, exported once under `directory`."""
    hf_path = os.path.join(directory, "hf_onnx", "model.onnx")
    if not os.path.exists(hf_path):
        _export_hf_onnx(model, os.path.dirname(hf_path), hf_path)
    our_path = os.path.join(directory, "ours_onnx", "model.onnx")
    if not os.path.exists(our_path):
        start = time.perf_counter()
        export_onnx(model, tokenizer, os.path.dirname(our_path))
        print(f"exported ours onnx in {time.perf_counter() - start:.0f} s", flush=True)
    return {
        "onnxruntime fp32": OnnxEngine(hf_path, int8=False, hf=True),
        "onnxruntime int8": OnnxEngine(hf_path, int8=True, hf=True),
        "ours onnx fp32": OnnxEngine(our_path, int8=False, hf=False),
        "ours onnx int8": OnnxEngine(our_path, int8=True, hf=False),
    }


def _export_hf_onnx(model, directory: str, path: str) -> None:
    import torch
    from transformers import AlbertForSequenceClassification

    hf_directory = os.path.join(directory, "hf")
    write_hf_directory(model, hf_directory)
    hf_model = AlbertForSequenceClassification.from_pretrained(hf_directory).eval()
    example = tuple(torch.ones((2, 16), dtype=torch.int64) for _ in range(3))
    dynamic = {0: "batch", 1: "sequence"}
    with torch.no_grad():
        torch.onnx.export(
            hf_model,
            example,
            path,
            input_names=["input_ids", "attention_mask", "token_type_ids"],
            output_names=["logits"],
            dynamic_axes={
                "input_ids": dynamic,
                "attention_mask": dynamic,
                "token_type_ids": dynamic,
                "logits": {0: "batch"},
            },
            opset_version=17,
            dynamo=False,
        )


def sst2_dev() -> tuple[list[str], np.ndarray]:
    lines = (DATA / "sst2_dev.tsv").read_text(encoding="utf-8").splitlines()[1:]
    rows = [line.rsplit("\t", 1) for line in lines if line.strip()]
    return [text.strip() for text, _ in rows], np.array([int(label) for _, label in rows])


def packed(module: ClassificationServingModule, texts) -> dict:
    strings = tf.constant([text.encode() for text in texts])
    return {name: value.numpy() for name, value in module.pack(strings).items()}


# --------------------------------------------------------------------------------------------
# Speed.


def time_engines(engines: dict, batch_one: dict, batch_eight: dict, args) -> dict:
    """Interleaved rounds: per engine, batch-1 latencies (s) and batch-8 rates (seq/s)."""
    for engine in engines.values():  # warm: allocator, graph optimizations
        engine.logits(batch_one)
        engine.logits(batch_eight)
    results = {name: {"latencies": [], "rates": []} for name in engines}
    for round_index in range(args.rounds):
        for name, engine in engines.items():
            # Untimed first: the engine before it leaves its weights in the caches and, ONNX
            # Runtime, its threads spinning on both cores for a while after its last call.
            for _ in range(args.warmup_steps):
                engine.logits(batch_one)
            for _ in range(args.batch_one_steps):
                start = time.perf_counter()
                engine.logits(batch_one)
                results[name]["latencies"].append(time.perf_counter() - start)
            start = time.perf_counter()
            for _ in range(args.batch_eight_steps):
                engine.logits(batch_eight)
            seconds = time.perf_counter() - start
            results[name]["rates"].append(8 * args.batch_eight_steps / seconds)
        load = prelude.load_average()
        print(f"  round {round_index + 1}/{args.rounds} done (load {load})", flush=True)
    summary = {}
    for name, result in results.items():
        latencies = np.array(result["latencies"])
        summary[name] = {
            "batch1_p50_ms": float(np.percentile(latencies, 50) * 1e3),
            "batch1_p99_ms": float(np.percentile(latencies, 99) * 1e3),
            "batch8x128_sequences_per_second": statistics.median(result["rates"]),
            "batch8x128_rates_per_round": result["rates"],
        }
    return summary


def speed(args, tokenizer, directory: str) -> dict:
    model = AlbertClassifier(AlbertBackbone.from_preset_name("albert_base_v2"), num_classes=2)
    offsets = np.random.default_rng(1)
    for weight in model.weights:
        if weight.path.endswith(("bias", "gamma", "beta")):
            weight.assign(weight.numpy() + offsets.normal(0.0, 0.02, weight.shape))
    engines = {}
    exports = {
        f"ours {precision}": ("base_" + precision, precision, None)
        for precision in SERVING_PRECISIONS
    }
    for precision in args.depth_precisions:
        for depth in args.depths:
            if depth != model.backbone.albert_config.num_layers:
                folder = f"base_depth_{depth}" + ("" if precision == "float32" else f"_{precision}")
                exports[f"ours {precision} K={depth}"] = (folder, precision, depth)
    for name, (folder, precision, depth) in exports.items():
        path = os.path.join(directory, folder)
        if not os.path.exists(path):  # --exports-dir keeps them between runs
            start = time.perf_counter()
            export_saved_model(model, tokenizer, path, precision=precision, num_layers=depth)
            print(f"exported {name} in {time.perf_counter() - start:.0f} s", flush=True)
        engines[name] = Session(path)
    if not args.skip_onnx:
        engines.update(onnx_engines(model, tokenizer, os.path.join(directory, "onnx_base")))
    texts, _ = sst2_dev()
    short = min((text for text in texts[:50] if len(text.split()) >= 8), key=len)
    ids = [tokenizer.cls_id, *tokenizer.encode(short), tokenizer.sep_id]
    batch_one = {
        "token_ids": np.array([ids], np.int32),
        "segment_ids": np.zeros((1, len(ids)), np.int32),
        "padding_mask": np.ones((1, len(ids)), np.int32),
    }
    rng = np.random.default_rng(0)
    token_ids = rng.integers(5, 30000, size=(8, 128)).astype(np.int32)
    token_ids[:, 0], token_ids[:, -1] = tokenizer.cls_id, tokenizer.sep_id
    batch_eight = {
        "token_ids": token_ids,
        "segment_ids": np.zeros_like(token_ids),
        "padding_mask": np.ones_like(token_ids),
    }
    print(f"batch 1: {short!r} ({batch_one['token_ids'].shape[1]} tokens); batch 8 x 128")
    result = time_engines(engines, batch_one, batch_eight, args)
    result["_short_text"] = short
    return result


# --------------------------------------------------------------------------------------------
# Accuracy.


def accuracy(args, tokenizer, directory: str) -> dict:
    """SST-2 dev accuracy per precision and depth, with the exported graphs' Keras models.

    The SavedModel endpoints call exactly `serving_model(model, precision, num_layers)`
    (tests/export/test_precision.py checks the served logits against it), so the models are
    run in process here rather than exported once per precision and depth.
    """
    texts, labels = sst2_dev()
    results = {}
    for label, checkpoint in args.models.items():
        model = keras.models.load_model(checkpoint)
        depth = model.backbone.albert_config.num_layers
        row = {"num_layers": depth, "checkpoint": checkpoint}
        vocabulary = args.vocabularies.get(label)
        module = ClassificationServingModule(
            model, AlbertTokenizer(vocabulary) if vocabulary else tokenizer
        )
        batches = [packed(module, texts[i : i + 64]) for i in range(0, len(texts), 64)]

        def score(logits):
            return float(np.mean(np.argmax(logits, -1) == labels))

        def forward(served):
            return tf.function(lambda inputs: served(inputs, training=False), autograph=False)

        for precision in SERVING_PRECISIONS:
            run = forward(serving_model(model, precision))
            row[f"ours {precision}"] = score(np.concatenate([run(b).numpy() for b in batches]))
        if not args.skip_onnx:
            engines = onnx_engines(
                model, module.tokenizer, os.path.join(directory, f"onnx_{label}")
            )
            for name, engine in engines.items():
                logits = np.concatenate([engine.logits(batch) for batch in batches])
                row[name] = score(logits)
        depths = {}
        for small_depth in [k for k in args.small_depths if k <= depth]:
            run = forward(serving_model(model, "float32", small_depth))
            logits = np.concatenate([run(batch).numpy() for batch in batches])
            times = []
            for _ in range(args.rounds):
                start = time.perf_counter()
                for batch in batches[:4]:
                    run(batch)
                times.append(time.perf_counter() - start)
            depths[small_depth] = {
                "accuracy": score(logits),
                "ms_per_batch_of_64": statistics.median(times) / 4 * 1e3,
            }
        row["depths"] = depths
        results[label] = row
        print(f"{label}: {json.dumps(row)}", flush=True)
    return results


# --------------------------------------------------------------------------------------------
# Report.


def print_report(result: dict) -> None:
    print(f"\nCPU: {result['cpu']['model_name']}; flags {result['cpu']['flags']}")
    start, end = result["load_average_start"], result["load_average_end"]
    print(f"load average at the start {start}, at the end {end}")
    for label, row in result.get("accuracy", {}).items():
        scores = {key: value for key, value in row.items() if key.startswith(("ours", "onnx"))}
        print(f"SST-2 dev accuracy, {label} ({row['num_layers']} layers): {scores}")
        for depth, values in row["depths"].items():
            print(
                f"  K={depth}: accuracy {values['accuracy']:.4f}, "
                f"{values['ms_per_batch_of_64']:.1f} ms per batch of 64"
            )
    if "speed" not in result:
        return
    speed_result = result["speed"]
    engines = [name for name in speed_result if not name.startswith("_")]
    reference = speed_result["ours float32"]
    print(f"{'engine':24s} {'b1 p50 ms':>10s} {'b1 p99 ms':>10s} {'8x128 seq/s':>12s} "
          f"{'x float32 (b1)':>15s} {'x float32 (8x128)':>18s}")  # fmt: skip
    for name in engines:
        row = speed_result[name]
        print(
            f"{name:24s} {row['batch1_p50_ms']:10.1f} {row['batch1_p99_ms']:10.1f} "
            f"{row['batch8x128_sequences_per_second']:12.2f} "
            f"{reference['batch1_p50_ms'] / row['batch1_p50_ms']:15.2f} "
            f"{row['batch8x128_sequences_per_second'] / reference['batch8x128_sequences_per_second']:18.2f}"  # noqa: E501
        )
    # Our ONNX export against Hugging Face's, both in ONNX Runtime (same inputs, same rounds).
    for precision in ("fp32", "int8"):
        ours = speed_result.get(f"ours onnx {precision}")
        hf = speed_result.get(f"onnxruntime {precision}")
        if ours and hf:
            print(
                f"ours onnx {precision} / HF onnx {precision}: batch-1 p50 latency "
                f"{ours['batch1_p50_ms'] / hf['batch1_p50_ms']:.2f}x, 8x128 rate "
                f"{ours['batch8x128_sequences_per_second'] / hf['batch8x128_sequences_per_second']:.2f}x"  # noqa: E501
            )


def plot(result: dict, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    speed_result = result["speed"]
    engines = [name for name in speed_result if not name.startswith("_")]
    figure, axes = plt.subplots(1, 3, figsize=(17, 5))
    p50 = [speed_result[name]["batch1_p50_ms"] for name in engines]
    rates = [speed_result[name]["batch8x128_sequences_per_second"] for name in engines]
    axes[0].barh(engines, p50)
    axes[0].set_xlabel("batch 1 p50 latency (ms), lower is better")
    axes[1].barh(engines, rates)
    axes[1].set_xlabel("batch 8 x 128 sequences/s, higher is better")
    for label, row in result.get("accuracy", {}).items():
        depths = sorted(row["depths"], key=int)
        axes[2].plot(
            depths, [row["depths"][k]["accuracy"] for k in depths], marker="o", label=label
        )
    axes[2].set_xlabel("passes of the shared block (K)")
    axes[2].set_ylabel("SST-2 dev accuracy")
    axes[2].legend()
    figure.suptitle(
        f"ALBERT serving on {result['cpu']['model_name']} (load {result['load_average_end']})"
    )
    figure.tight_layout()
    figure.savefig(path + ".tmp.png", dpi=100)
    os.replace(path + ".tmp.png", path)


def main() -> None:
    parser = prelude.parser(__file__, __doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds")
    parser.add_argument("--batch-one-steps", type=int, default=10, help="batch-1 calls a round")
    parser.add_argument(
        "--warmup-steps", type=int, default=3, help="untimed batch-1 calls per engine a round"
    )
    parser.add_argument("--batch-eight-steps", type=int, default=2, help="8x128 calls a round")
    parser.add_argument("--depths", default="12,6,3,1", help="ALBERT-base depths to time")
    parser.add_argument(
        "--depth-precisions", default="float32,bfloat16", help="precisions timed at --depths"
    )
    parser.add_argument("--small-depths", default="6,3,2,1", help="depths of --models")
    parser.add_argument(
        "--models", nargs="*", default=[], help="LABEL=fine-tuned classifier .keras, for accuracy"
    )
    parser.add_argument(
        "--vocabularies",
        "--sentencepiece-models",
        nargs="*",
        default=[],
        help="LABEL=tokenizer vocabulary of that --models entry (default: the 30k original)",
    )
    parser.add_argument("--skip-onnx", action="store_true")
    parser.add_argument("--skip-speed", action="store_true")
    parser.add_argument(
        "--exports-dir", help="keep the exports here and reuse them (default: a temporary one)"
    )
    args = parser.parse_args()
    prelude.header()
    args.depths = [int(k) for k in args.depths.split(",")]
    args.small_depths = [int(k) for k in args.small_depths.split(",")]
    args.depth_precisions = args.depth_precisions.split(",")
    for precision in args.depth_precisions:
        if precision not in SERVING_PRECISIONS:
            parser.error(
                f"--depth-precisions must name {SERVING_PRECISIONS}. Received: {precision!r}"
            )
    args.models = dict(item.split("=", 1) for item in args.models)
    args.vocabularies = dict(item.split("=", 1) for item in args.vocabularies)

    result = {
        "cpu": prelude.cpu(),
        "cpu_count": os.cpu_count(),
        "tensorflow": tf.__version__,
        "load_average_start": prelude.load_average(),
    }
    # Seed before the tokenizer: seeding drops TensorFlow's SentencePiece resources.
    keras.utils.set_random_seed(0)
    tokenizer = AlbertTokenizer(str(DATA / "30k-clean.model"))
    with tempfile.TemporaryDirectory(prefix="albert_precision_") as temporary:
        directory = args.exports_dir or temporary
        if args.models:
            result["accuracy"] = accuracy(args, tokenizer, directory)
        if not args.skip_speed:
            result["speed"] = speed(args, tokenizer, directory)
    result["load_average_end"] = prelude.load_average()
    prelude.write_results(args.results_json, result)
    print_report(result)
    if "speed" in result:
        plot(result, os.path.splitext(args.results_json)[0] + ".png")


if __name__ == "__main__":
    main()
