"""The local engine: a worker pool and the sharded writer, text files → pretraining TFRecords.

One document at a time (memory holds one document per worker plus `write_shuffle_buffer`
records, never the corpus): the main process reads documents (`documents.iter_documents`),
worker processes make each one's keyed records (`examples.document_records`: sentences,
pairs, masks, encoding); the main process sorts them into `num_shards` TFRecord files in the
original feature layout by the records' sort keys (`examples`: a seeded full shuffle), in
memory up to `write_shuffle_buffer` records and through sorted runs on disk beyond.

Determinism: every document's examples are seeded from `(seed, document key)` and every
record's shard and place from its sort key, so the same input and seed give byte-identical
files with 1 or N workers, and the same files as the Beam pipeline (`beam.py`). The original
is not deterministic (its n-gram draw uses numpy's unseeded global RNG) and shuffles in memory.
"""

from __future__ import annotations

import collections
import multiprocessing
import multiprocessing.pool
import os
import pickle
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Literal

from keras_albert import directories, validation
from keras_albert.pretraining.data.config import PretrainingDataConfig
from keras_albert.pretraining.data.documents import Document, expand_input_files, iter_documents
from keras_albert.pretraining.data.examples import (
    KeyedRecord,
    document_records,
    partner_documents,
    shard_of,
    shard_paths,
)
from keras_albert.pretraining.data.records import PretrainingExample
from keras_albert.pretraining.data.runs import merge_runs, order, read_run, write_run
from keras_albert.pretraining.data.summary import DocumentStats, PretrainingDataSummary
from keras_albert.pretraining.data.vocabulary import TokenizerLike, TokenTables

# The original tool's settings (frozen: one shared instance is safe as a default).
_DEFAULT_CONFIG = PretrainingDataConfig()

_worker_tokenizer: TokenizerLike | None = None
_worker_tables: TokenTables | None = None
_worker_config: PretrainingDataConfig | None = None
_worker_keeps_examples = False


def _init_worker(
    tokenizer: TokenizerLike | Callable[[], TokenizerLike],
    config: PretrainingDataConfig,
    keep_examples: bool,
) -> None:
    global _worker_tokenizer, _worker_tables, _worker_config, _worker_keeps_examples
    if not isinstance(tokenizer, TokenizerLike):
        tokenizer = tokenizer()  # a factory, already checked in the main process
    _worker_tokenizer = tokenizer
    _worker_tables = TokenTables(tokenizer)
    _worker_config = config
    _worker_keeps_examples = keep_examples


def _process_document(
    task: tuple[Document, Document | None],
) -> tuple[DocumentStats, list[KeyedRecord], int]:
    """Stats, keyed records (with their examples if asked for) and bytes consumed."""
    document, partner = task
    stats, records = document_records(
        document, partner, _worker_tokenizer, _worker_tables, _worker_config,
        _worker_keeps_examples,
    )  # fmt: skip
    return stats, records, document.num_bytes


class _ShardSorter:
    """Records in shard order, then by `(sort_key, record)`, in bounded memory: up to
    `buffer_size` in memory, then sorted runs in files beside the output, merged at the end
    (`runs.py`)."""

    def __init__(self, run_prefix: str, num_shards: int, buffer_size: int):
        self.run_prefix, self.num_shards, self.buffer_size = run_prefix, num_shards, buffer_size
        self.buffer: list[tuple] = []  # (shard, sort_key, record, example)
        self.runs: list[str] = []  # every run file written, merged ones included

    def add(self, item: KeyedRecord) -> None:
        shard = shard_of(item.sort_key, self.num_shards)
        self.buffer.append((shard, item.sort_key, item.record, item.example))
        if len(self.buffer) < self.buffer_size:
            return
        self.buffer.sort(key=order)
        self._write_run(self.buffer)
        self.buffer = []

    def __iter__(self) -> Iterator[tuple[int, bytes, PretrainingExample | None]]:
        """`(shard, record, example)` in written order."""
        self.buffer.sort(key=order)
        merged = merge_runs(list(self.runs), _read_run, self._write_run, self.buffer)
        for shard, _, record, example in merged:
            yield shard, record, example

    def _write_run(self, items: Iterable[tuple]) -> str:
        path = f"{self.run_prefix}.run{len(self.runs):05d}.incomplete"
        self.runs.append(path)
        with open(path, "wb") as handle:
            write_run(handle, items)
        return path

    def remove_runs(self) -> None:
        for path in self.runs:
            if os.path.exists(path):
                os.remove(path)
        self.runs = []


def _read_run(path: str) -> Iterator[tuple]:
    with open(path, "rb") as handle:
        yield from read_run(handle)


def ordered_bounded_map(
    pool: multiprocessing.pool.Pool, function: Callable, items: Iterable, window: int
) -> Iterator:
    """`pool.imap` with at most `window` items in flight.

    `Pool.imap` drains its input iterator as fast as it can, which would read the whole corpus
    into the task queue; this pulls the next document only when one result has been taken.
    """
    pending: collections.deque = collections.deque()
    for item in items:
        pending.append(pool.apply_async(function, (item,)))
        if len(pending) >= window:
            yield pending.popleft().get()
    while pending:
        yield pending.popleft().get()


def create_pretraining_data(
    inputs: Sequence[str],
    output_prefix: str,
    tokenizer: TokenizerLike | Callable[[], TokenizerLike],
    config: PretrainingDataConfig = _DEFAULT_CONFIG,
    num_workers: int = 1,
    num_shards: int = 1,
    progress: bool = True,
    on_example: Callable[[PretrainingExample], None] | None = None,
    start_method: Literal["spawn", "fork", "forkserver"] = "spawn",
) -> PretrainingDataSummary:
    """Turns text files into sharded TFRecords of pretraining examples.

    Args:
        inputs: files, directories (walked for text files: `documents.is_text_file_name`)
            or globs.
        output_prefix: shards are `{output_prefix}-{i:05d}-of-{num_shards:05d}.tfrecord`;
            its directory is created.
        tokenizer: a `TokenizerLike`, pickled to the workers when `num_workers > 1`, or a
            picklable zero-argument factory of one, called once per process (for tokenizers
            holding TensorFlow resources, e.g.
            `functools.partial(AlbertTokenizer, proto=path, lowercase=True)`).
        config: how examples are made.
        num_workers: processes making examples (output does not depend on it).
        num_shards: output files; a record's shard and place come from its sort key.
        progress: show a tqdm bar over input bytes.
        on_example: called with every example in written order (tests, statistics).
        start_method: how workers start. "spawn" (safe anywhere): each imports what the
            tokenizer needs, for a TensorFlow-backed tokenizer ~5 CPU seconds per worker.
            "fork" (POSIX): workers inherit the main process's tokenizer instance without
            pickling or building it again; safe when its `encode` runs no TensorFlow ops
            (as `AlbertTokenizer`'s Python path), since a forked child must not use a
            TensorFlow runtime started in the parent. Output does not depend on it.

    Returns:
        The summary: counts, mask rate, label balance, n-gram histogram, skipped inputs. When
        no example was made (no usable text), no shard is written: `output_files` is empty.
    """
    factory = None
    if not isinstance(tokenizer, TokenizerLike) and callable(tokenizer):
        factory, tokenizer = tokenizer, tokenizer()
    if not isinstance(tokenizer, TokenizerLike):
        raise TypeError(
            "`tokenizer` must provide the TokenizerLike interface (vocabulary_size, *_id, "
            "special_ids, encode, id_to_piece, piece_to_id, is_word_start) or be a factory "
            f"of one. Received: tokenizer of type {type(tokenizer).__name__}"
        )
    validation.require_positive_int("num_workers", num_workers)
    validation.require_positive_int("num_shards", num_shards)
    validation.require_one_of("start_method", start_method, multiprocessing.get_all_start_methods())
    import tensorflow as tf
    from tqdm import tqdm

    started = time.perf_counter()
    summary = PretrainingDataSummary()
    files = expand_input_files(inputs, summary.skipped)
    total_bytes = sum(os.path.getsize(f.path) for f in files)
    tasks = partner_documents(iter_documents(files, config, summary), config)

    num_written = 0
    # A forked worker inherits the built tokenizer (Pool arguments are not pickled then).
    source = tokenizer if start_method == "fork" else factory or tokenizer
    if num_workers > 1 and start_method != "fork":
        try:
            pickle.dumps(source)
        except Exception as error:
            raise TypeError(
                "`tokenizer` must be picklable to reach the worker processes; it cannot be "
                f"pickled ({error}): pass a picklable factory of it instead, e.g. "
                "functools.partial(TokenizerClass, ...), use start_method='fork' or "
                f"num_workers=1. Received: tokenizer of type {type(source).__name__}"
            ) from error
    paths = shard_paths(output_prefix, num_shards)
    # An empty run (no usable text) writes no shard, and leaves no directory it made.
    with directories.output_directory(os.path.dirname(os.path.abspath(output_prefix))):
        # Shards are written under temporary names and renamed once all are complete, so a glob of
        # `*.tfrecord` never matches a half-written file.
        partial_paths = [f"{p}.incomplete" for p in paths]
        writers = [tf.io.TFRecordWriter(p) for p in partial_paths]
        # disable=None: a bar on a terminal only, none in a redirected log.
        bar = tqdm(total=total_bytes, unit="B", unit_scale=True, disable=None if progress else True)
        pool = None
        finished = False
        sorter = _ShardSorter(output_prefix, num_shards, config.write_shuffle_buffer)
        try:
            if num_workers == 1:
                _init_worker(tokenizer, config, on_example is not None)
                results = map(_process_document, tasks)
            else:
                worker_args = (source, config, on_example is not None)
                context = multiprocessing.get_context(start_method)
                pool = context.Pool(num_workers, initializer=_init_worker, initargs=worker_args)
                results = ordered_bounded_map(pool, _process_document, tasks, 4 * num_workers)
            for stats, records, num_bytes in results:
                summary.merge_document(stats)
                for item in records:
                    sorter.add(item)
                bar.update(num_bytes)
                bar.set_postfix(examples=summary.num_examples, refresh=False)
            for shard, record, example in sorter:
                writers[shard].write(record)
                num_written += 1
                if on_example is not None:
                    on_example(example)
            finished = num_written > 0
        finally:
            bar.close()
            if pool is not None:
                pool.terminate()
            sorter.remove_runs()
            for writer in writers:
                writer.close()
            for partial, path in zip(partial_paths, paths, strict=True):
                if finished:
                    os.replace(partial, path)
                elif os.path.exists(partial):
                    os.remove(partial)
    summary.output_files = paths if num_written else []
    summary.seconds = time.perf_counter() - started
    return summary
