"""Where dynamic masking's time goes: the pretraining pipeline's maps one stage at a time.

    python -m benchmarks.dynamic_masking_stages [--lengths 128 512] [--batches 1000]

Records of two Austen novels (the library's data tool, dupe factor 1) are read once into
memory (`cache`), decoded one at a time and batched by 32, then go through the stages up to one
of three, each the library's own function as `make_pretraining_dataset` calls it: `decode`
(`records.decode_record`, per record), `restore` (then `dataset.restore_masked_tokens` on each
batch: the static masks undone), `mask` (then `dataset.dynamic_mask` on each batch: new masks).
The differences are each stage's CPU time per sequence (`time.process_time()`, every tf.data
thread).
"""

import os
import tempfile
import time

from benchmarks import prelude  # isort: skip  (first: sets the environment)
from benchmarks.input_pipeline import AUSTEN, VOCABULARY, make_records, tiny_corpus

NOVELS = ("persuasion.txt", "emma.txt")
STAGES = ("decode", "restore", "mask")
BATCH_SIZE = 32


def staged(files: list[str], length: int, predictions: int, stage: str, masking):
    import tensorflow as tf

    from keras_albert.pretraining.data.dataset import dynamic_mask, restore_masked_tokens
    from keras_albert.pretraining.data.records import decode_record

    dataset = tf.data.TFRecordDataset(files).cache().repeat()
    dataset = dataset.map(
        lambda record: decode_record(record, length, predictions, stage != "decode"),
        num_parallel_calls=tf.data.AUTOTUNE,
    ).batch(BATCH_SIZE)
    if stage == "restore":
        dataset = dataset.map(
            lambda features: {**features, "token_ids": restore_masked_tokens(features)},
            num_parallel_calls=tf.data.AUTOTUNE,
        )
    if stage == "mask":

        def remask(features, seed):
            masked = dynamic_mask(
                restore_masked_tokens(features), features["padding_mask"], seed, masking,
                predictions,
            )  # fmt: skip
            masked.pop("span_lengths")
            return {**features, **masked}

        seeds = tf.data.Dataset.random(seed=1).batch(2)
        dataset = tf.data.Dataset.zip(dataset, seeds)
        dataset = dataset.map(remask, num_parallel_calls=tf.data.AUTOTUNE)
    return dataset.prefetch(tf.data.AUTOTUNE)


def main(argv=None) -> dict:
    parser = prelude.parser(__file__, __doc__.split("\n")[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[128, 512])
    parser.add_argument("--batches", type=int, default=1000)
    parser.add_argument("--tiny", action="store_true", help="a slice of one novel (for the tests)")
    args = parser.parse_args(argv)
    import tensorflow as tf

    from keras_albert.pretraining.data.dataset import DynamicMasking
    from keras_albert.text.tokenizer import AlbertTokenizer

    prelude.header()
    masking = DynamicMasking.from_tokenizer(AlbertTokenizer(VOCABULARY, lowercase=True))
    rows = []
    with tempfile.TemporaryDirectory() as directory:
        if args.tiny:
            corpus = tiny_corpus(directory)
        else:
            corpus = os.path.join(directory, "corpus")
            os.makedirs(corpus)
            for name in NOVELS:
                os.symlink(os.path.join(AUSTEN, name), os.path.join(corpus, name))
        for length in args.lengths:
            prefix = os.path.join(directory, f"records-{length}")
            num_records = make_records(corpus, prefix, length, 1)
            files = tf.io.gfile.glob(f"{prefix}-*.tfrecord")
            for stage in STAGES:
                iterator = iter(staged(files, length, 20, stage, masking))
                for _ in range(50):
                    next(iterator)
                cpu, wall = time.process_time(), time.perf_counter()
                for _ in range(args.batches):
                    next(iterator)
                cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
                sequences = BATCH_SIZE * args.batches
                row = {"sequence_length": length, "records": num_records, "stage": stage,
                       "sequences": sequences, "cpu_seconds": cpu, "wall_seconds": wall,
                       "cpu_microseconds_per_sequence": cpu / sequences * 1e6}  # fmt: skip
                rows.append(row)
                microseconds = row["cpu_microseconds_per_sequence"]
                print(f"length {length:4d}  {stage:8s}  {microseconds:6.1f} µs CPU per sequence")
    prelude.write_results(args.results_json, {"options": vars(args), "runs": rows})
    return {"runs": rows}


if __name__ == "__main__":
    main()
