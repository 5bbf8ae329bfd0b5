"""The Beam engine: the local tool's pretraining data on Apache Beam, for a corpus beyond one
machine (Dataflow, Flink, Spark, or the DirectRunner's processes).

    files (expanded here, the local rules)  → Create (spread over the workers)
      → per file: documents, each with its NSP partner        (read as the local engine reads)
        → batches of about 256 KB of text, each a file of `{output_prefix}.tmp/`
      → Reshuffle (the batches' paths spread over the workers)
      → per document: keyed records                            (examples.py, as the local engine)
        → per bundle: up to `write_shuffle_buffer` records, sorted into a run file (`runs.py`)
      → (shard, where a run holds that shard's records), and (SUMMARY_KEY, a document's stats)
      → GroupByKey → a shard's parts of runs merged by (sort_key, record) → its TFRecord file;
                     the summaries (files', documents', the launcher's) → summary.json
      → (after the pipeline, whatever its end) `{output_prefix}.tmp/` removed

A file is the unit of reading (its documents are numbered in order and find their NSP partners
in it); a batch of documents the unit of work: a corpus in a few huge files is read by a few
workers but its examples are made by all of them. Neither text nor records cross a shuffle,
only paths: a runner that holds a shuffle in memory (the DirectRunner does) holds no more as
the corpus grows. A worker holds a batch of documents and its buffer of records, a shard's
writer one read buffer per run (at most `runs.MAX_OPEN_RUNS` open; beyond, runs are merged
into fewer first): memory does not grow with the corpus, the temporary files do (about the
text plus the records). The summaries go through the same GroupByKey under a key of their own
rather than through a combiner's stages (on the DirectRunner each stage and each element
crossing processes is a cost the local engine has not).

The work is the local engine's, function for function: `documents.iter_documents` through
Beam's FileSystems (so `gs://`, `s3://`, `hdfs://` inputs), `examples.partner_documents` and
`examples.document_records`. Every record is a function of (seed, document key) and lands in
the shard and place its sort key gives, so a runner, a number of workers, the bundling or a
retried bundle cannot change the output: the files are byte for byte the local tool's. Every
temporary file has a name of its own (a retried bundle writes new ones) and the shuffles carry
only the committed bundles' paths: a failed attempt's files are never read.

The tokenizer travels inside the DoFn: pass a picklable factory holding the model's bytes
(`functools.partial(PythonTokenizer, proto=model_bytes, ...)`, `keras_albert.text.
python_tokenizer`: AlbertTokenizer's ids without TensorFlow), so workers need no access to the
model file. A worker imports neither Keras nor TensorFlow (`keras_albert._startup.
is_beam_worker`): it starts in about a second rather than seven. This module imports
apache_beam; nothing else in the library does.
"""

from __future__ import annotations

import os
import pickle
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from typing import BinaryIO

import apache_beam as beam
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.transforms.window import GlobalWindows

from keras_albert import validation
from keras_albert.pretraining.data.config import PretrainingDataConfig
from keras_albert.pretraining.data.documents import (
    LOCAL_FILES,
    Document,
    InputFile,
    expand_input_files,
    iter_documents,
)
from keras_albert.pretraining.data.examples import (
    document_records,
    partner_documents,
    shard_of,
    shard_paths,
)
from keras_albert.pretraining.data.records import frame_record
from keras_albert.pretraining.data.runs import merge_runs, order, read_run, write_run
from keras_albert.pretraining.data.summary import DocumentStats, PretrainingDataSummary
from keras_albert.pretraining.data.vocabulary import TokenizerLike, TokenTables

# Text per batch of documents, the unit of work after reading: about half a CPU second of
# examples at sequence length 128, so that workers finish together.
DOCUMENT_BATCH_BYTES = 1 << 18
# The GroupByKey key of the summaries (shards are 0 .. num_shards - 1).
SUMMARY_KEY = -1
_SUMMARY = "summary"
# The original tool's settings (frozen: one shared instance is safe as a default).
_DEFAULT_CONFIG = PretrainingDataConfig()


class _BeamFiles:
    """Local paths as the local engine reads them; any other through Beam's FileSystems."""

    @staticmethod
    def _remote(path: str) -> bool:
        return "://" in path

    def is_dir(self, path: str) -> bool:
        if not self._remote(path):
            return LOCAL_FILES.is_dir(path)
        return not FileSystems.exists(path) and bool(self.walk(path))

    def is_file(self, path: str) -> bool:
        if not self._remote(path):
            return LOCAL_FILES.is_file(path)
        return FileSystems.exists(path)

    def walk(self, path: str) -> list[str]:
        if not self._remote(path):
            return LOCAL_FILES.walk(path)
        root = path.rstrip("/") + "/"
        paths = self.glob(root + "**")
        # As os.walk's pruning in LocalFiles: nothing inside a hidden directory.
        return [
            p for p in paths if not any(d.startswith(".") for d in p[len(root) :].split("/")[:-1])
        ]

    def glob(self, pattern: str) -> list[str]:
        if not self._remote(pattern):
            return LOCAL_FILES.glob(pattern)
        return [m.path for m in FileSystems.match([pattern])[0].metadata_list]

    def open(self, path: str) -> BinaryIO:
        if not self._remote(path):
            return LOCAL_FILES.open(path)
        return FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED)


class _FileDocuments(beam.DoFn):
    """One input file → its documents, each with its NSP partner, in batches of about
    `DOCUMENT_BATCH_BYTES` of text, each written to a file of `temp_dir` and sent on as its
    path; and, tagged `SUMMARY_KEY`, `(SUMMARY_KEY, what reading the file counted)`."""

    def __init__(self, config: PretrainingDataConfig, temp_dir: str):
        self.config, self.temp_dir = config, temp_dir

    def setup(self):
        self.files = _BeamFiles()

    def process(self, file: tuple[str, str]):
        part = PretrainingDataSummary()
        documents = iter_documents([InputFile(*file)], self.config, part, self.files)
        batch, num_bytes = [], 0
        for pair in partner_documents(documents, self.config):
            batch.append(pair)
            num_bytes += pair[0].num_bytes
            if num_bytes >= DOCUMENT_BATCH_BYTES:
                yield self._write_batch(batch)
                batch, num_bytes = [], 0
        if batch:
            yield self._write_batch(batch)
        yield beam.pvalue.TaggedOutput(_SUMMARY, (SUMMARY_KEY, part))

    def _write_batch(self, batch: list[tuple[Document, Document | None]]) -> str:
        path = _temp_path(self.temp_dir, "documents")
        with FileSystems.create(path, compression_type=CompressionTypes.UNCOMPRESSED) as handle:
            pickle.dump(batch, handle, protocol=pickle.HIGHEST_PROTOCOL)
        return path


def _read_batch(path: str) -> list[tuple[Document, Document | None]]:
    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as handle:
        return pickle.load(handle)


class _DocumentRecords(beam.DoFn):
    """A document and its partner → its records, gathered with the bundle's others up to
    `write_shuffle_buffer`; a full buffer, and the bundle's last, is sorted into a run file of
    `temp_dir` (`runs.write_run`) and sent on as `(shard, (run path, start, count))`, one per
    shard in the run. And per document `(SUMMARY_KEY, its stats)`."""

    def __init__(
        self,
        tokenizer: Callable[[], TokenizerLike],
        config: PretrainingDataConfig,
        num_shards: int,
        temp_dir: str,
    ):
        self.tokenizer_factory, self.config, self.num_shards = tokenizer, config, num_shards
        self.temp_dir = temp_dir

    def setup(self):
        self.tokenizer = self.tokenizer_factory()
        self.tables = TokenTables(self.tokenizer)

    def start_bundle(self):
        self.buffer: list[tuple] = []  # (shard, sort_key, record)

    def process(self, pair: tuple[Document, Document | None]):
        stats, records = document_records(*pair, self.tokenizer, self.tables, self.config)
        for item in records:
            shard = shard_of(item.sort_key, self.num_shards)
            self.buffer.append((shard, item.sort_key, item.record))
            if len(self.buffer) >= self.config.write_shuffle_buffer:
                yield from self._write_run()
        yield SUMMARY_KEY, stats

    def finish_bundle(self):
        if self.buffer:
            for section in self._write_run():
                yield GlobalWindows.windowed_value_at_end_of_window(section)

    def _write_run(self) -> list[tuple[int, tuple[str, int, int]]]:
        self.buffer.sort(key=order)
        path = _temp_path(self.temp_dir, "run")
        with FileSystems.create(path, compression_type=CompressionTypes.UNCOMPRESSED) as handle:
            sections = write_run(handle, self.buffer)
        self.buffer = []
        return [(shard, (path, start, count)) for shard, (start, count) in sections.items()]


class _Write(beam.DoFn):
    """A shard's sections of runs merged in `(sort_key, record)` order into its TFRecord file
    (`runs.merge_runs`; runs merged first, when many, go to `temp_dir` too), written under a
    temporary name and renamed (a retry writes the same bytes again); or, under
    `SUMMARY_KEY`, every file's summary merged into `{output_prefix}.summary.json`."""

    def __init__(self, output_prefix: str, num_shards: int, temp_dir: str):
        self.paths = shard_paths(output_prefix, num_shards)
        self.summary_path = f"{output_prefix}.summary.json"
        self.temp_dir = temp_dir

    def process(self, element):
        key, values = element
        if key == SUMMARY_KEY:
            summary = PretrainingDataSummary()
            for part in values:  # files' and the launcher's counts; documents' stats
                if isinstance(part, DocumentStats):
                    summary.merge_document(part)
                else:
                    summary.merge(part)
            _write_text(self.summary_path, summary.to_json())
            yield self.summary_path
            return
        path = self.paths[key]
        partial = f"{path}.incomplete"
        sections = [v for v in values if v is not None]  # None: the shard's placeholder
        merged = merge_runs(sections, _read_section, self._write_merged_run)
        with FileSystems.create(partial, compression_type=CompressionTypes.UNCOMPRESSED) as handle:
            for _, _, record in merged:
                handle.write(frame_record(record))
        FileSystems.rename([partial], [path])
        yield path

    def _write_merged_run(self, items) -> tuple[str, int, int]:
        path = _temp_path(self.temp_dir, "run")
        with FileSystems.create(path, compression_type=CompressionTypes.UNCOMPRESSED) as handle:
            ((start, count),) = write_run(handle, items).values()  # one shard's items
        return path, start, count


def _temp_path(temp_dir: str, kind: str) -> str:
    # A name of its own: a retried bundle's files sit beside the failed attempt's, which
    # nothing refers to (the runner drops a failed attempt's outputs).
    return FileSystems.join(temp_dir, f"{uuid.uuid4().hex}.{kind}")


def _read_section(section: tuple[str, int, int]) -> Iterator[tuple]:
    path, start, count = section
    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as handle:
        handle.seek(start)
        yield from read_run(handle, count)


def _remove_temp_dir(temp_dir: str) -> None:
    """Every file in `temp_dir` (failed attempts' too), then the directory where there is one
    (local paths; object stores have none)."""
    found = FileSystems.match([FileSystems.join(temp_dir, "*")])[0].metadata_list
    if found:
        FileSystems.delete([m.path for m in found])
    if FileSystems.exists(temp_dir):
        FileSystems.delete([temp_dir])


def _write_text(path: str, text: str) -> None:
    with FileSystems.create(path, compression_type=CompressionTypes.UNCOMPRESSED) as handle:
        handle.write(text.encode())


def _read_text(path: str) -> str:
    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as handle:
        return handle.read().decode()


def create_pretraining_data_beam(
    inputs: Sequence[str],
    output_prefix: str,
    tokenizer: Callable[[], TokenizerLike],
    config: PretrainingDataConfig = _DEFAULT_CONFIG,
    num_shards: int = 1,
    pipeline_args: Sequence[str] = (),
) -> PretrainingDataSummary:
    """Builds and runs the Beam pipeline that writes the local tool's shards; waits for it.

    Args:
        inputs: files, directories (walked for text files: `documents.is_text_file_name`),
            globs; local or any path Beam's FileSystems reads; `.gz`/`.bz2` decompressed.
            Expanded here, before the pipeline starts.
        output_prefix: shards are `{output_prefix}-{i:05d}-of-{num_shards:05d}.tfrecord`,
            beside `{output_prefix}.summary.json` (the summary, for detached runs); the
            pipeline's files go to `{output_prefix}.tmp/` while it runs.
        tokenizer: a picklable zero-argument factory of the tokenizer, called once per worker;
            it travels inside the pipeline (hold the model's bytes, not its path, for
            remote workers): `functools.partial(PythonTokenizer, proto=model_bytes)`, whose
            workers import no TensorFlow. It is called once here first, so a bad model fails
            before the pipeline starts.
        config: how examples are made (as the local tool; `write_shuffle_buffer` is the
            records a bundle buffers before it writes a sorted run).
        num_shards: output files; a record's shard and place come from its sort key.
        pipeline_args: Beam's own flags, untouched (`--runner DataflowRunner --project ...`).

    Returns:
        The summary the pipeline computed (plus `seconds`); as the local tool's on the same
        inputs. When no example was made no shard is kept: `output_files` is empty.

    Raises:
        ValueError: `inputs` name no file at all (nothing would run).
    """
    validation.require_positive_int("num_shards", num_shards)
    if isinstance(tokenizer, TokenizerLike) or not callable(tokenizer):
        raise TypeError(
            "`tokenizer` must be a picklable zero-argument factory of a TokenizerLike (it "
            "travels to the workers), e.g. functools.partial(PythonTokenizer, "
            f"proto=model_bytes). Received: tokenizer of type {type(tokenizer).__name__}"
        )
    tokenizer()
    try:
        pickle.dumps(tokenizer)
    except Exception as error:
        raise TypeError(
            f"`tokenizer` must be picklable to reach the Beam workers ({error}). Received: "
            f"tokenizer={tokenizer!r}"
        ) from error
    started = time.perf_counter()
    launcher_part = PretrainingDataSummary()
    files = expand_input_files(inputs, launcher_part.skipped, _BeamFiles())
    if not files:
        raise ValueError(
            "`inputs` must name at least one readable file (a path, a directory with text "
            f"files or a glob that matches). Received: inputs={list(inputs)}"
        )
    if "://" not in output_prefix:
        os.makedirs(os.path.dirname(os.path.abspath(output_prefix)), exist_ok=True)
    summary_path = f"{output_prefix}.summary.json"
    # Batches of documents and sorted runs, until the shards are written.
    temp_dir = f"{output_prefix}.tmp"
    try:
        with beam.Pipeline(options=PipelineOptions(list(pipeline_args))) as pipeline:
            documents = (
                pipeline
                # Create spreads its elements (a reshuffle of its own).
                | "Files" >> beam.Create([(f.path, f.key) for f in files])
                | "Documents"
                >> beam.ParDo(_FileDocuments(config, temp_dir)).with_outputs(
                    _SUMMARY, main="documents"
                )
            )
            made = (
                documents.documents
                | "SpreadDocuments" >> beam.Reshuffle()
                | "ReadDocuments" >> beam.FlatMap(_read_batch)
                | "Examples"
                >> beam.ParDo(_DocumentRecords(tokenizer, config, num_shards, temp_dir))
            )
            # Every shard (an empty one is written too) and what the launcher skipped.
            start = [(i, None) for i in range(num_shards)] + [(SUMMARY_KEY, launcher_part)]
            (
                (
                    made,
                    documents[_SUMMARY],
                    pipeline | "EveryShard" >> beam.Create(start, reshuffle=False),
                )
                | "WithEveryShard" >> beam.Flatten()
                | "ByShard" >> beam.GroupByKey()
                | "Write" >> beam.ParDo(_Write(output_prefix, num_shards, temp_dir))
            )
    finally:
        _remove_temp_dir(temp_dir)

    summary = PretrainingDataSummary.from_json(_read_text(summary_path))
    paths = shard_paths(output_prefix, num_shards)
    if summary.num_examples:
        summary.output_files = paths
    else:  # as the local tool: no shard when no example was made
        FileSystems.delete([p for p in paths if FileSystems.exists(p)])
    summary.seconds = time.perf_counter() - started
    # The file says what the run returns: its shards and its time.
    _write_text(summary_path, summary.to_json())
    return summary
