"""Throughput of example creation on the six embedded Austen novels (run by hand).

    python -m benchmarks.pretraining_data_throughput [--dupe_factor 1]

For sequence_length 128 and 512 and 1 vs 2 worker processes: wall seconds, examples/s,
sentences/s, input MB/s and the 2-process speed-up; the end-to-end time includes reading,
sentence splitting, tokenization, masking, serialization and TFRecord writing (and, with workers,
starting them). CPU seconds of the main process and of the workers show the serial share: the
main process only reads files and writes records. On a shared machine wall-clock figures
move with the load; examples per CPU second do not.
"""

import functools
import os
import resource
import tempfile
import time

from benchmarks import prelude
from keras_albert.pretraining.data import (
    PretrainingDataConfig,
    create_pretraining_data,
)

AUSTEN = prelude.data_path("corpus", "janeaustenr")
SPM_MODEL = str(prelude.TEST_DATA / "30k-clean.model")


def load_tokenizer():
    from keras_albert.text.tokenizer import AlbertTokenizer

    return functools.partial(AlbertTokenizer, proto=SPM_MODEL, lowercase=True)


def main():
    parser = prelude.parser(__file__)
    parser.add_argument("--dupe_factor", type=int, default=1)
    parser.add_argument("--lengths", type=int, nargs="+", default=[128, 512])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--start_method", default="spawn", choices=["spawn", "fork", "forkserver"])
    args = parser.parse_args()
    prelude.header()
    tokenizer = load_tokenizer()
    import tensorflow  # noqa: F401  (the writer's; imported here so no row pays for it)

    num_bytes = sum(os.path.getsize(os.path.join(AUSTEN, n)) for n in os.listdir(AUSTEN))
    print(
        f"corpus: {num_bytes / 1e6:.1f} MB, "
        f"dupe_factor {args.dupe_factor}, start_method {args.start_method}"
    )
    print(
        "sequence_length  workers  seconds  examples  examples/s  sentences/s  MB/s  speed-up"
        "  main_cpu_s  worker_cpu_s  examples/cpu_s"
    )
    rows = []
    with tempfile.TemporaryDirectory() as directory:
        for length in args.lengths:
            config = PretrainingDataConfig(sequence_length=length, dupe_factor=args.dupe_factor)
            baseline = None
            for workers in args.workers:
                main_cpu = time.process_time()
                children_cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
                summary = create_pretraining_data(
                    [AUSTEN], os.path.join(directory, f"{length}-{workers}"), tokenizer, config,
                    num_workers=workers, num_shards=4, progress=False,
                    start_method=args.start_method,
                )  # fmt: skip
                main_cpu = time.process_time() - main_cpu
                children = resource.getrusage(resource.RUSAGE_CHILDREN)
                worker_cpu = (
                    children.ru_utime
                    + children.ru_stime
                    - children_cpu.ru_utime
                    - children_cpu.ru_stime
                )
                seconds = summary.seconds
                baseline = baseline or seconds
                rows.append(
                    {"sequence_length": length, "workers": workers, "seconds": seconds,
                     "examples": summary.num_examples, "sentences": summary.num_sentences,
                     "main_cpu_seconds": main_cpu, "worker_cpu_seconds": worker_cpu}
                )  # fmt: skip
                print(
                    f"{length:15d}  {workers:7d}  {seconds:7.2f}  {summary.num_examples:8d}  "
                    f"{summary.num_examples / seconds:10.0f}  "
                    f"{summary.num_sentences * args.dupe_factor / seconds:11.0f}  "
                    f"{num_bytes / 1e6 / seconds:4.2f}  {baseline / seconds:8.2f}"
                    f"  {main_cpu:10.2f}  {worker_cpu:12.2f}"
                    f"  {summary.num_examples / (main_cpu + worker_cpu):14.0f}"
                )
    prelude.write_results(
        args.results_json,
        {"options": vars(args), "cpus": os.cpu_count(), "corpus_bytes": num_bytes, "runs": rows},
    )


if __name__ == "__main__":
    main()
