"""Tokenization throughput on SST-2 train sentences: in-graph path in tf.data vs Python path vs
Hugging Face's fast (Rust) ALBERT tokenizer, in one run. Run by hand from the repository root,
with keras_albert importable (`pip install -e ".[tensorflow]"` or `PYTHONPATH=.`):

    python -m benchmarks.tokenizer_throughput [--data data/glue/SST-2/train.tsv]

Prints sentences/s for each and the ratios to the Hugging Face fast tokenizer, plus how many
sentences each gives the same ids as the Python path (the reference recipe).
"""

import os
import pathlib
import shutil
import tempfile
import time

from benchmarks import prelude  # isort: skip  (first: sets the environment)

import tensorflow as tf

from keras_albert.text.tokenizer import AlbertTokenizer


def read_sentences(path: str, limit: int | None) -> list[str]:
    lines = pathlib.Path(path).read_text(encoding="utf-8").split("\n")
    sentences = [line.rsplit("\t", 1)[0] for line in lines[1:] if line]
    return sentences[:limit] if limit else sentences


def timed(function, repeats: int):
    """Best wall time of `repeats` runs, and the last result."""
    best, result = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        result = function()
        best = min(best, time.perf_counter() - start)
    return best, result


def main() -> None:
    parser = prelude.parser(__file__, __doc__.split("\n")[0])
    parser.add_argument(
        "--data", default=prelude.data_path("glue", "SST-2", "train.tsv"), help="SST-2 tsv"
    )
    parser.add_argument("--model", default=str(prelude.TEST_DATA / "30k-clean.model"))
    parser.add_argument("--limit", type=int, default=None, help="use only the first N sentences")
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    prelude.header()

    sentences = read_sentences(args.data, args.limit)
    tokenizer = AlbertTokenizer(args.model)
    print(f"{len(sentences)} sentences from {args.data}; {os.cpu_count()} CPUs")

    def graph_path():
        dataset = (
            tf.data.Dataset.from_tensor_slices(sentences)
            .batch(args.batch_size)
            .map(tokenizer, num_parallel_calls=tf.data.AUTOTUNE)
            .prefetch(tf.data.AUTOTUNE)
        )
        return [row for batch in dataset for row in batch.to_list()]

    def python_path():
        return [tokenizer.encode(text) for text in sentences]

    from transformers import AlbertTokenizer as HuggingFaceAlbertTokenizer

    with tempfile.TemporaryDirectory() as directory:
        shutil.copy(args.model, os.path.join(directory, "spiece.model"))
        hugging_face = HuggingFaceAlbertTokenizer.from_pretrained(directory)

    def hugging_face_fast():
        return hugging_face(sentences, add_special_tokens=False)["input_ids"]

    graph_path()  # warm-up: traces the tf.data function
    results = {}
    for name, function in (
        ("in-graph (tf.data)", graph_path),
        ("python", python_path),
        ("hugging face fast", hugging_face_fast),
    ):
        seconds, ids = timed(function, args.repeats)
        results[name] = (len(sentences) / seconds, ids)

    reference_ids = results["python"][1]
    fast_rate = results["hugging face fast"][0]
    raw = {}
    for name, (rate, ids) in results.items():
        same = sum(a == b for a, b in zip(ids, reference_ids, strict=True))
        raw[name] = {
            "sentences_per_second": rate,
            "over_hugging_face_fast": rate / fast_rate,
            "same_ids_as_python_path": same,
        }
        print(
            f"{name:20s} {rate:12,.0f} sentences/s   x{rate / fast_rate:5.2f} of HF fast   "
            f"same ids as python path: {same}/{len(sentences)}"
        )

    prelude.write_results(
        args.results_json, {"options": vars(args), "sentences": len(sentences), "paths": raw}
    )


if __name__ == "__main__":
    main()
