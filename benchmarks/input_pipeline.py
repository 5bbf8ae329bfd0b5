"""The input pipelines' ceiling: sequences per second of the `tf.data` pipelines alone, no model.

    python -m benchmarks.input_pipeline [--lengths 128 512] [--batches 2000] [--batch-size 32]

- pretraining: records made from the shipped Austen novels by the library's data tool
  (`create_pretraining_data`, dupe factor `--dupe-factor`), then the pretraining driver's own
  training stream (`keras_albert.pretraining.streams.make_datasets`: shuffled passes, parsing,
  batching, prefetch), with the records' static masks and with dynamic masking (masks drawn
  anew in the graph, as `--dynamic_masking` trains);
- fine-tuning: SST-2's training sentences (`data/glue/SST-2/train.tsv`) through the
  classification task's reader (`keras_albert.tasks.classification.reader.make_dataset`): raw
  text → in-graph SentencePiece tokenization (`tests/data/30k-clean.model`) → packed batches,
  as fine-tuning trains.

Each pipeline is iterated `--warmup` batches (shuffle buffer filled, threads started), then
`--batches` batches are timed. Two rates: sequences per wall second (the machine's load moves
it) and sequences per CPU second of this process (`time.process_time()`, which counts every
tf.data thread; the load moves it far less). "Cores to feed" is how many CPU cores it takes to
produce `--target` sequences per second (4,635: a compiled bfloat16 PyTorch ALBERT-base
training at length 128 on an H100, `benchmarks/results/accelerator_peers_h100.json`), assuming
the pipeline's CPU time per sequence stays the same on more cores.
"""

import os
import tempfile
import time

from benchmarks import prelude  # isort: skip  (first: sets the environment)

AUSTEN = prelude.data_path("corpus", "janeaustenr")
SST2_TRAIN = prelude.data_path("glue", "SST-2", "train.tsv")
VOCABULARY = str(prelude.TEST_DATA / "30k-clean.model")
# Sequences per second a compiled bfloat16 PyTorch ALBERT-base trains at on an H100 (seq 128).
H100_SEQUENCES_PER_SECOND = 4635
# --tiny: the first bytes of one novel, a few batches.
TINY_CORPUS_BYTES = 60_000


def parse_args(argv=None):
    parser = prelude.parser(__file__, __doc__.split("\n")[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[128, 512])
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--batches", type=int, default=2000, help="batches timed per pipeline")
    parser.add_argument("--warmup", type=int, default=50, help="batches before the timing")
    parser.add_argument("--dupe-factor", type=int, default=1)
    parser.add_argument("--target", type=float, default=H100_SEQUENCES_PER_SECOND)
    parser.add_argument(
        "--tiny", action="store_true", help="a slice of one novel, 3 batches of 8 (for the tests)"
    )
    args = parser.parse_args(argv)
    if args.tiny:
        args.batches, args.warmup, args.batch_size = 3, 1, 8
    return args


def tiny_corpus(directory: str) -> str:
    """The first `TINY_CORPUS_BYTES` of one novel, cut at a line."""
    with open(os.path.join(AUSTEN, "persuasion.txt"), encoding="utf-8") as file:
        text = file.read(TINY_CORPUS_BYTES)
    path = os.path.join(directory, "tiny")
    os.makedirs(path)
    with open(os.path.join(path, "persuasion.txt"), "w", encoding="utf-8") as file:
        file.write(text[: text.rfind("\n") + 1])
    return path


def make_records(corpus: str, prefix: str, length: int, dupe_factor: int) -> int:
    """Pretraining records of `length` tokens from `corpus` (the library's data tool); their
    number."""
    from keras_albert.pretraining.data import PretrainingDataConfig, create_pretraining_data
    from keras_albert.text.tokenizer import AlbertTokenizer

    config = PretrainingDataConfig(sequence_length=length, dupe_factor=dupe_factor)
    tokenizer = AlbertTokenizer(VOCABULARY, lowercase=True)
    summary = create_pretraining_data(
        [corpus], prefix, tokenizer, config, num_shards=2, progress=False
    )
    return summary.num_examples


def pretraining_stream(pattern: str, batch_size: int, dynamic_masking: bool, output_dir: str):
    """The pretraining driver's training stream over `pattern`, built as the driver builds it."""
    from keras_albert.pretraining.data.records import inspect_records
    from keras_albert.pretraining.options import PretrainingOptions
    from keras_albert.pretraining.streams import (
        dynamic_masking_for,
        layout_for_options,
        make_datasets,
    )

    options = PretrainingOptions(
        train_data=pattern, output_dir=output_dir, train_steps=1, batch_size=batch_size,
        preset="albert_base_v2", dynamic_masking=dynamic_masking, vocabulary=VOCABULARY,
    )  # fmt: skip
    layout = layout_for_options(inspect_records(options.train_data, "train_data"), options)
    return make_datasets(options, layout, dynamic_masking_for(options)), layout


def finetuning_stream(examples, tokenizer, length: int, batch_size: int):
    """The classification task's training batches: raw text → packed `(batch, length)`."""
    from keras_albert.tasks.classification.reader import make_dataset

    return make_dataset(examples, tokenizer, length, batch_size, training=True, seed=0)


def measure(dataset, batches: int, warmup: int) -> dict:
    """Iterates `warmup` batches, then times `batches`: sequences, wall and CPU seconds, the
    last batch's feature shapes."""
    iterator = iter(dataset)
    for _ in range(warmup):
        next(iterator)
    sequences = 0
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(batches):
        element = next(iterator)
        sequences += int(element[0]["token_ids"].shape[0])
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    x = element[0]
    shapes = {key: list(value.shape) for key, value in x.items()}
    if len(element) == 3:  # pretraining: (x, y, sample_weight)
        shapes.update({f"y.{key}": list(value.shape) for key, value in element[1].items()})
    return {
        "batches": batches,
        "sequences": sequences,
        "wall_seconds": wall,
        "cpu_seconds": cpu,
        "sequences_per_second": sequences / wall,
        "sequences_per_cpu_second": sequences / cpu,
        "shapes": shapes,
    }


def print_row(row: dict, target: float) -> None:
    cores = target / row["sequences_per_cpu_second"]
    print(
        f"{row['pipeline']:<34}{row['sequence_length']:>6}  {row['sequences_per_second']:>9.0f}"
        f"  {row['sequences_per_cpu_second']:>13.0f}  {cores:>13.2f}"
    )


def main(argv=None) -> dict:
    args = parse_args(argv)
    import tensorflow  # noqa: F401  (before the header, which names its version and oneDNN)

    prelude.header()
    from keras_albert.tasks.classification.reader import read_examples
    from keras_albert.text.tokenizer import AlbertTokenizer

    print(
        f"batch size {args.batch_size}, {args.warmup} warm-up + {args.batches} timed batches; "
        f"cores to feed {args.target:,.0f} seq/s = target / (seq per CPU second)"
    )
    print(f"{'pipeline':<34}{'length':>6}  {'seq/s wall':>9}  {'seq/CPU s':>13}  "
          f"{'cores to feed':>13}")  # fmt: skip
    rows = []
    with tempfile.TemporaryDirectory() as directory:
        corpus = tiny_corpus(directory) if args.tiny else AUSTEN
        for length in args.lengths:
            prefix = os.path.join(directory, f"records-{length}")
            num_records = make_records(corpus, prefix, length, args.dupe_factor)
            if num_records < args.batch_size:
                # Each pass drops its partial batch: the stream would never yield one.
                raise ValueError(
                    f"`batch_size` must be at most the {num_records} records made at length "
                    f"{length}. Received: batch_size={args.batch_size}"
                )
            for dynamic in (False, True):
                dataset, layout = pretraining_stream(
                    f"{prefix}-*.tfrecord", args.batch_size, dynamic,
                    os.path.join(directory, "run"),
                )  # fmt: skip
                name = "pretraining, " + ("dynamic masking" if dynamic else "static masks")
                row = {"pipeline": name, "sequence_length": length, "records": num_records,
                       "max_predictions_per_sequence": layout.max_predictions_per_sequence,
                       **measure(dataset, args.batches, args.warmup)}  # fmt: skip
                rows.append(row)
                print_row(row, args.target)
        examples = read_examples(SST2_TRAIN, "sst-2")
        tokenizer = AlbertTokenizer(VOCABULARY, lowercase=True)
        for length in args.lengths:
            dataset = finetuning_stream(examples, tokenizer, length, args.batch_size)
            row = {"pipeline": "fine-tuning, SST-2 text → packed", "sequence_length": length,
                   "examples": len(examples),
                   **measure(dataset, args.batches, args.warmup)}  # fmt: skip
            rows.append(row)
            print_row(row, args.target)
    for row in rows:
        row["cores_to_feed_target"] = args.target / row["sequences_per_cpu_second"]
    results = {"options": vars(args), "runs": rows}
    prelude.write_results(args.results_json, results)
    return results


if __name__ == "__main__":
    main()
