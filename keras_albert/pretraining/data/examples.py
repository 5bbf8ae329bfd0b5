"""One document → its keyed, encoded examples: the unit of work of both engines.

The local writer (`writer.py`) and the Beam pipeline (`beam.py`) call the same three functions,
so the two cannot drift apart:

    partner_documents   a file's documents, each with its NSP partner from the same file
    document_records    a document (and partner) → its stats and `KeyedRecord`s
    shard_of            the shard of a record, from its sort key (`shard_paths`: its file)

Everything random is seeded by `(seed, document key)` (`documents.Document.key`: the file's
path relative to its input and the document's ordinal there): a document's examples do not
depend on the runner, the number of workers, retries or the order files are read. Each record's
sort key is a hash of `(seed, document key, example ordinal)`; a record goes to shard
`sort_key % num_shards`, and a shard holds its records sorted by `(sort_key, record)`: a seeded
full shuffle, the same bytes from either engine.

NSP partners, a departure from the original (a random document of the whole corpus, in
memory): the partner is a seeded pick among the `nsp_partner_window` previous documents of
the same file (the next one for a file's first), so that a file is a self-contained unit of
work. A file's only document has no partner: all its pairs are "B follows A" (label 0), and
the summary says so under "skipped".
"""

from __future__ import annotations

import collections
import dataclasses
import hashlib
import itertools
import random
from collections.abc import Iterable, Iterator

from keras_albert.pretraining.data.config import PretrainingDataConfig
from keras_albert.pretraining.data.documents import Document, document_sentences
from keras_albert.pretraining.data.pairs import create_examples_from_document
from keras_albert.pretraining.data.records import PretrainingExample, encode_example
from keras_albert.pretraining.data.summary import DocumentStats
from keras_albert.pretraining.data.vocabulary import TokenizerLike, TokenTables

NO_PARTNER = "no NSP partner (the only document of its file): every B follows its A"


@dataclasses.dataclass(frozen=True, order=True)
class KeyedRecord:
    """A serialized example and its place: the shard and order come from `sort_key`."""

    sort_key: int
    record: bytes
    # The example itself, when the caller asked for it (tests, statistics); not compared.
    example: PretrainingExample | None = dataclasses.field(default=None, compare=False)


def sort_key(seed: int, document_key: str, ordinal: int) -> int:
    """A 64-bit hash of `(seed, document key, example ordinal)`, the same in every process."""
    digest = hashlib.blake2b(f"{seed}/{document_key}/{ordinal}".encode(), digest_size=8)
    return int.from_bytes(digest.digest(), "big")


def shard_of(key: int, num_shards: int) -> int:
    return key % num_shards


def shard_paths(output_prefix: str, num_shards: int) -> list[str]:
    """`{prefix}-00000-of-00004.tfrecord` ..."""
    return [f"{output_prefix}-{i:05d}-of-{num_shards:05d}.tfrecord" for i in range(num_shards)]


def partner_documents(
    documents: Iterable[Document], config: PretrainingDataConfig
) -> Iterator[tuple[Document, Document | None]]:
    """Each document with its NSP partner (None in SOP mode or alone in its file): a seeded
    pick among the `nsp_partner_window` previous documents of its file, the next for the
    first. Documents of one file must come together, in order (as `iter_documents` gives)."""
    if config.task != "nsp":
        for document in documents:
            yield document, None
        return
    for _, group in itertools.groupby(documents, key=_file_key):
        file_documents = iter(group)
        first = next(file_documents)
        second = next(file_documents, None)
        yield first, second
        if second is None:
            continue
        history = collections.deque([first], maxlen=config.nsp_partner_window)
        for document in itertools.chain([second], file_documents):
            rng = random.Random(f"{config.seed}/partner/{document.key}")
            yield document, history[rng.randrange(len(history))]
            history.append(document)


def _file_key(document: Document) -> str:
    return document.key.rsplit(":", 1)[0]


def document_records(
    document: Document,
    partner: Document | None,
    tokenizer: TokenizerLike,
    tables: TokenTables,
    config: PretrainingDataConfig,
    keep_examples: bool = False,
) -> tuple[DocumentStats, list[KeyedRecord]]:
    """The document's `dupe_factor` passes of examples, encoded, with their sort keys."""
    stats = DocumentStats(source=document.source)
    sentences = document_sentences(document, tokenizer, config.language)
    stats.num_sentences = len(sentences)
    if not sentences:
        stats.skipped["document without tokens"] += 1
        return stats, []
    partner_sentences = None
    if config.task == "nsp":
        if partner is None:
            stats.skipped[NO_PARTNER] += 1
        else:
            partner_sentences = document_sentences(partner, tokenizer, config.language)
    # String seeds are hashed with SHA-512 by `random`: stable across runs and platforms.
    rng = random.Random(f"{config.seed}/{document.key}")
    records = []
    for _ in range(config.dupe_factor):
        for example in create_examples_from_document(
            sentences, rng, tables, config, partner_sentences, stats.skipped
        ):
            record = encode_example(
                example, config.sequence_length, config.max_predictions_per_sequence
            )
            key = sort_key(config.seed, document.key, len(records))
            records.append(KeyedRecord(key, record, example if keep_examples else None))
            stats.add_example(example, tables.special)
    return stats, records
