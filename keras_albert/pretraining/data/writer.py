"""The worker pool and the sharded writer: text files → pretraining TFRecords, with a summary.

One document at a time (memory holds one document per worker plus a bounded write-shuffle
buffer, never the corpus): the main process reads documents (`documents.iter_documents`),
worker processes split and tokenize their sentences, make the examples (`pairs`, `masking`)
and encode them (`records`); the main process writes them, in document order through a seeded
shuffle buffer, round-robin to `num_shards` TFRecord files in the original feature layout.

Determinism: every document gets its own `random.Random` seeded from `(seed, document_index)`;
the writer's shuffle has its own seeded generator and sees examples in document order whatever
the number of workers. The same input and seed give byte-identical files with 1 or N workers
(the original is not: its n-gram draw uses numpy's unseeded global RNG). Examples are shuffled
through a bounded buffer instead of all in memory, unlike the original.
"""

from __future__ import annotations

import collections
import itertools
import multiprocessing
import multiprocessing.pool
import os
import pickle
import random
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Literal

from keras_albert import directories, validation
from keras_albert.pretraining.data.config import PretrainingDataConfig
from keras_albert.pretraining.data.documents import (
    Document,
    document_sentences,
    expand_inputs,
    iter_documents,
)
from keras_albert.pretraining.data.pairs import create_examples_from_document
from keras_albert.pretraining.data.records import PretrainingExample, encode_example
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
) -> tuple[DocumentStats, list[tuple[bytes, PretrainingExample | None]], int]:
    """Stats, serialized records (with their examples if asked for) and bytes consumed."""
    document, partner = task
    config, tokenizer, tables = _worker_config, _worker_tokenizer, _worker_tables
    stats = DocumentStats(source=document.source)
    sentences = document_sentences(document, tokenizer, config.language)
    stats.num_sentences = len(sentences)
    partner_sentences = document_sentences(partner, tokenizer, config.language) if partner else None
    if not sentences:
        stats.skipped["document without tokens"] += 1
        return stats, [], document.num_bytes
    # String seeds are hashed with SHA-512 by `random`: stable across runs and platforms.
    rng = random.Random(f"{config.seed}/{document.index}")
    records = []
    for _ in range(config.dupe_factor):
        for example in create_examples_from_document(
            sentences, rng, tables, config, partner_sentences, stats.skipped
        ):
            record = encode_example(
                example, config.sequence_length, config.max_predictions_per_sequence
            )
            records.append((record, example if _worker_keeps_examples else None))
            stats.add_example(example, tables.special)
    return stats, records, document.num_bytes


def _tasks(
    documents: Iterator[Document], config: PretrainingDataConfig
) -> Iterator[tuple[Document, Document | None]]:
    """Pairs each document with its NSP partner: a seeded pick among the previous
    `nsp_partner_window` documents (the next one for the first)."""
    if config.task != "nsp":
        for document in documents:
            yield document, None
        return
    history: collections.deque[Document] = collections.deque(maxlen=config.nsp_partner_window)
    first = next(documents, None)
    if first is None:
        return
    second = next(documents, None)
    yield first, second
    if second is None:
        return
    history.append(first)
    for document in itertools.chain([second], documents):
        rng = random.Random(f"{config.seed}/partner/{document.index}")
        yield document, history[rng.randrange(len(history))]
        history.append(document)


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


def shard_paths(output_prefix: str, num_shards: int) -> list[str]:
    """`{prefix}-00000-of-00004.tfrecord` ..."""
    return [f"{output_prefix}-{i:05d}-of-{num_shards:05d}.tfrecord" for i in range(num_shards)]


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
        num_shards: output files; examples are dealt round-robin after the shuffle buffer.
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
    files = expand_inputs(inputs, summary.skipped)
    total_bytes = sum(os.path.getsize(f) for f in files)
    tasks = _tasks(iter_documents(files, config, summary), config)

    shuffle_rng = random.Random(f"{config.seed}/write")
    buffer: list[tuple[bytes, PretrainingExample | None]] = []
    num_written = 0

    def write(record: bytes, example: PretrainingExample | None) -> None:
        nonlocal num_written
        writers[num_written % num_shards].write(record)
        num_written += 1
        if on_example is not None:
            on_example(example)

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
                    if len(buffer) < config.write_shuffle_buffer:
                        buffer.append(item)
                        continue
                    slot = shuffle_rng.randrange(len(buffer))
                    write(*buffer[slot])
                    buffer[slot] = item
                bar.update(num_bytes)
                bar.set_postfix(examples=num_written + len(buffer), refresh=False)
            shuffle_rng.shuffle(buffer)
            for item in buffer:
                write(*item)
            finished = num_written > 0
        finally:
            bar.close()
            if pool is not None:
                pool.terminate()
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
