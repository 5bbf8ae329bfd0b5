"""TFLite (float32, int8) vs SavedModel: size and batch-1 latency of ALBERT-base, token ids in.

Run by hand: `python -m benchmarks.tflite_latency [--rounds 30] [--threads 1]`.
Exports a randomly initialized albert_base_v2 classifier (2 classes, the real 30k-clean
SentencePiece model) with `export_tflite` (float32, and dynamic-range int8 with
`precision="int8"`) and `export_saved_model`, then times, in interleaved rounds, one SST-2 dev
sentence (packed alone, unpadded) and the same padded to 128 tokens: `tf.lite.Interpreter`
(`--threads` threads) against the SavedModel's `serve_token_ids` (loaded with
`tf.saved_model.load`, TensorFlow's own thread pools). Prints the sizes, the medians, the
ratios to the SavedModel and the int8 model's largest probability difference from float32,
and writes the raw times (`--results-json`).
"""

import os
import statistics
import tempfile
import time

from benchmarks import prelude  # isort: skip  (first: sets the environment)

import numpy as np
import tensorflow as tf

from keras_albert import AlbertBackbone, AlbertClassifier
from keras_albert.export import export_saved_model
from keras_albert.export.tflite import export_tflite
from keras_albert.text.tokenizer import AlbertTokenizer

DATA = prelude.TEST_DATA
PADDED_LENGTH = 128


def main() -> None:
    parser = prelude.parser(__file__, __doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    prelude.header()

    tokenizer = AlbertTokenizer(DATA / "30k-clean.model")
    model = AlbertClassifier(AlbertBackbone.from_preset_name("albert_base_v2"), num_classes=2)
    sentence = (DATA / "sst2_dev.tsv").read_text(encoding="utf-8").split("\n")[1].split("\t")[0]
    packed = tokenizer.packer(PADDED_LENGTH)(tokenizer(tf.constant([sentence])))
    length = int(tf.reduce_sum(tf.cast(packed["padding_mask"], tf.int32)))
    padded = {name: np.asarray(value).astype("int32") for name, value in packed.items()}
    inputs = {
        f"{length} tokens": {name: value[:, :length] for name, value in padded.items()},
        f"{PADDED_LENGTH} tokens (padded)": padded,
    }

    with tempfile.TemporaryDirectory() as directory:
        tflite_path = export_tflite(model, tokenizer, os.path.join(directory, "tflite"))
        int8_path = export_tflite(
            model, tokenizer, os.path.join(directory, "tflite_int8"), precision="int8"
        )
        saved_model_dir = os.path.join(directory, "saved_model")
        export_saved_model(model, tokenizer, saved_model_dir)
        sizes = {
            "tflite_bytes": os.path.getsize(tflite_path),
            "tflite_int8_bytes": os.path.getsize(int8_path),
            "saved_model_bytes": prelude.directory_bytes(saved_model_dir),
        }
        interpreter = tf.lite.Interpreter(model_path=tflite_path, num_threads=args.threads)
        runner = interpreter.get_signature_runner()
        int8_interpreter = tf.lite.Interpreter(model_path=int8_path, num_threads=args.threads)
        int8_runner = int8_interpreter.get_signature_runner()
        serve = tf.saved_model.load(saved_model_dir).signatures["serve_token_ids"]

        runtimes = {
            "tflite": lambda x: runner(**x)["probabilities"],
            "tflite_int8": lambda x: int8_runner(**x)["probabilities"],
            "saved_model": lambda x: serve(**{k: tf.constant(v) for k, v in x.items()})[
                "probabilities"
            ].numpy(),
        }
        times = {case: {name: [] for name in runtimes} for case in inputs}
        int8_difference = max(
            float(np.abs(runtimes["tflite_int8"](x) - runtimes["tflite"](x)).max())
            for x in inputs.values()
        )
        for x in inputs.values():
            for run in runtimes.values():
                run(x)  # warm (and the interpreter resizes once)
        for _ in range(args.rounds):
            for case, x in inputs.items():
                for name, run in runtimes.items():
                    start = time.perf_counter()
                    run(x)
                    times[case][name].append(time.perf_counter() - start)

    print(
        f"sizes: model.tflite {sizes['tflite_bytes'] / 2**20:.1f} MiB, int8 "
        f"{sizes['tflite_int8_bytes'] / 2**20:.1f} MiB, SavedModel "
        f"{sizes['saved_model_bytes'] / 2**20:.1f} MiB; int8 vs float32 probabilities: "
        f"{int8_difference:.2g} at most"
    )
    for case, by_runtime in times.items():
        medians = {name: statistics.median(values) * 1e3 for name, values in by_runtime.items()}
        print(
            f"{case}: TFLite ({args.threads} thread(s)) {medians['tflite']:.1f} ms, int8 "
            f"{medians['tflite_int8']:.1f} ms, SavedModel serve_token_ids "
            f"{medians['saved_model']:.1f} ms; ratios to the SavedModel "
            f"{medians['tflite'] / medians['saved_model']:.2f}, "
            f"{medians['tflite_int8'] / medians['saved_model']:.2f}"
        )
    prelude.write_results(
        args.results_json,
        {
            "sizes": sizes,
            "threads": args.threads,
            "times_seconds": times,
            "sentence": sentence,
            "int8_probability_difference": int8_difference,
        },
    )


if __name__ == "__main__":
    main()
