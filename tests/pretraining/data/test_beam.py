"""The Beam engine writes the local tool's bytes and summary, on any number of workers.

Real prose (WikiText, Austen), tiny: a few documents at 64 tokens, one pass. Runs on the
DirectRunner's engines (FnApiRunner in memory or threads; BundleBasedDirectRunner, which
retries a failed bundle).
"""

import bz2
import collections
import dataclasses
import functools
import gzip
import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys

import apache_beam  # noqa: F401 (the `beam` extra, in the test extra too: a missing one fails)
import pytest
import tensorflow as tf

from keras_albert.pretraining.data import PretrainingDataConfig, create_pretraining_data, runs
from keras_albert.pretraining.data import beam as beam_engine
from keras_albert.pretraining.data.examples import NO_PARTNER
from keras_albert.pretraining.data.records import count_records, inspect_records
from keras_albert.pretraining.data.summary import PretrainingDataSummary
from keras_albert.text.python_tokenizer import PythonTokenizer, read_vocabulary_file
from keras_albert.text.tokenizer import AlbertTokenizer  # noqa: E402
from tests.pretraining.data import _worker_probe
from tests.pretraining.data._helpers import AUSTEN, REPO  # noqa: E402
from tests.text._paths import ALBERT_SPM, DATA_DIR  # noqa: E402

NUM_SHARDS = 3
IN_MEMORY = ("--runner", "FnApiRunner")
TWO_THREADS = (*IN_MEMORY, "--direct_num_workers=2", "--direct_running_mode=multi_threading")


@pytest.fixture(scope="module")
def tokenizer():
    """The local engine's, as the tool makes it."""
    return functools.partial(AlbertTokenizer, proto=ALBERT_SPM)


@pytest.fixture(scope="module")
def beam_tokenizer():
    """Beam's, as the tool makes it: the model's bytes travel to the workers, which build the
    Python tokenizer (no TensorFlow); the local engine's AlbertTokenizer gives the same ids."""
    return functools.partial(PythonTokenizer, proto=read_vocabulary_file(ALBERT_SPM))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """A directory as a corpus arrives: plain, gzip and bzip2 text, a line of Latin-1, and
    files that are not text (skipped and listed)."""
    root = tmp_path_factory.mktemp("corpus")
    (root / "wiki").mkdir()
    shutil.copy(os.path.join(DATA_DIR, "wikitext_sample.txt"), root / "wiki" / "wiki_00")
    persuasion = open(os.path.join(AUSTEN, "persuasion.txt"), encoding="utf-8").read()
    (root / "austen").mkdir()
    with gzip.open(root / "austen" / "persuasion.txt.gz", "wt", encoding="utf-8") as handle:
        handle.write(persuasion[:12_000])
    with bz2.open(root / "austen" / "persuasion_end.txt.bz2", "wt", encoding="utf-8") as handle:
        handle.write(persuasion[-12_000:])
    (root / "austen" / "latin1.txt").write_bytes(
        "Caf\u00e9 society was dull.\n".encode("latin-1")
        + b"Anne walked to the village. She met Mr. Elliot there.\n"
    )
    (root / "README.md").write_text("About this corpus.\n")
    (root / "austen" / "chapters.csv").write_text("1,2\n")
    (root / ".cache").mkdir()
    (root / ".cache" / "old.txt").write_text("Never read.\n")
    return str(root)


def inputs_of(corpus):
    return [corpus, os.path.join(corpus, "nothing-*.txt")]


def config_of(task, max_ngram):
    return PretrainingDataConfig(
        sequence_length=64, dupe_factor=1, seed=5, task=task, max_ngram=max_ngram
    )


def records(paths):
    return [bytes(r) for path in paths for r in tf.data.TFRecordDataset(path).as_numpy_iterator()]


def digests(paths):
    return [hashlib.sha256(open(path, "rb").read()).hexdigest() for path in paths]


def comparable(summary):
    fields = dict(vars(summary))
    fields.pop("seconds")
    fields["output_files"] = [os.path.basename(p) for p in summary.output_files]
    return fields


@pytest.fixture(scope="module")
def local_runs(corpus, tokenizer, tmp_path_factory):
    """The local tool's output per (task, max_ngram, workers), made once."""
    runs = {}

    def run(task, max_ngram, num_workers=1):
        key = (task, max_ngram, num_workers)
        if key not in runs:
            prefix = str(tmp_path_factory.mktemp("local") / "x")
            runs[key] = create_pretraining_data(
                inputs_of(corpus), prefix, tokenizer, config_of(task, max_ngram),
                num_workers=num_workers, num_shards=NUM_SHARDS, progress=False,
                start_method="fork",
            )  # fmt: skip
        return runs[key]

    return run


@pytest.fixture(scope="module")
def beam_sop(corpus, beam_tokenizer, tmp_path_factory):
    prefix = str(tmp_path_factory.mktemp("beam_sop") / "x")
    return beam_engine.create_pretraining_data_beam(
        inputs_of(corpus), prefix, beam_tokenizer, config_of("sop", 3), NUM_SHARDS, IN_MEMORY
    )


def test_sop_ngram_masks_one_worker_give_the_local_tools_examples_and_summary(beam_sop, local_runs):
    local = local_runs("sop", 3)
    assert local.num_examples > 100
    assert collections.Counter(records(beam_sop.output_files)) == collections.Counter(
        records(local.output_files)
    )
    # The same shards, byte for byte: a record's shard and place come from its key's hash.
    assert digests(beam_sop.output_files) == digests(local.output_files)
    assert comparable(beam_sop) == comparable(local)
    assert len(beam_sop.span_length_counts) == 3
    # The summary file beside the shards holds what the run returned, shards and time included.
    prefix = beam_sop.output_files[0].rsplit("-", 3)[0]  # {prefix}-00000-of-0000N.tfrecord
    with open(f"{prefix}.summary.json") as file:
        on_disk = PretrainingDataSummary.from_json(file.read())
    assert on_disk.output_files == beam_sop.output_files
    assert on_disk.seconds == pytest.approx(beam_sop.seconds) and on_disk.seconds > 0


def test_nsp_single_word_masks_two_workers_give_the_local_tools_examples_and_summary(
    corpus, beam_tokenizer, local_runs, tmp_path
):
    local_one, local_two = local_runs("nsp", 1), local_runs("nsp", 1, num_workers=2)
    beam = beam_engine.create_pretraining_data_beam(
        inputs_of(corpus), str(tmp_path / "x"), beam_tokenizer, config_of("nsp", 1), NUM_SHARDS,
        TWO_THREADS,
    )  # fmt: skip
    assert collections.Counter(records(beam.output_files)) == collections.Counter(
        records(local_one.output_files)
    )
    assert digests(beam.output_files) == digests(local_one.output_files)
    assert digests(local_two.output_files) == digests(local_one.output_files)
    assert comparable(beam) == comparable(local_one) == comparable(local_two)
    assert set(beam.span_length_counts) == {1}
    assert 0.3 < beam.sentence_order_balance < 0.6
    # The Latin-1 file's one document has no partner in its file: said, not hidden.
    assert beam.skipped[(os.path.join(corpus, "austen", "latin1.txt"), NO_PARTNER)] == 1


def test_the_summary_counts_compressed_files_skipped_files_and_invalid_utf8(beam_sop, corpus):
    skipped = {
        (os.path.relpath(path, corpus), reason): n for (path, reason), n in beam_sop.skipped.items()
    }
    # The three compressed or plain text files and the Latin-1 one are read; the rest listed.
    assert beam_sop.num_files == 4
    assert skipped.pop(("README.md", "not a text file name (in a directory)")) == 1
    assert skipped.pop(("austen/chapters.csv", "not a text file name (in a directory)")) == 1
    assert skipped.pop(("nothing-*.txt", "no such file, directory or matching glob")) == 1
    assert skipped.pop(("austen/latin1.txt", "line with invalid UTF-8")) == 1
    assert set(reason for _, reason in skipped) <= {"one-word chunk (cannot form a pair)"}
    # WikiText's articles, Persuasion's two pieces (no chapter heading inside) and the
    # Latin-1 file's one valid line.
    assert beam_sop.num_documents > 5
    assert "austen/latin1.txt: line with invalid UTF-8 x1" in str(beam_sop).replace(
        corpus + "/", ""
    )


def test_a_worker_process_imports_neither_tensorflow_nor_keras(tmp_path, monkeypatch):
    """The DirectRunner's multi_processing mode starts a real Beam SDK worker, which builds the
    tokenizer and makes every example of one real document: TensorFlow's import (seconds per
    worker) is nowhere on its path (`keras_albert._startup.is_beam_worker`, `PythonTokenizer`,
    records serialized and framed without TensorFlow)."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([REPO, os.environ.get("PYTHONPATH", "")]))
    document = tmp_path / "persuasion_chapter.txt"
    document.write_text(
        open(os.path.join(AUSTEN, "persuasion.txt"), encoding="utf-8").read()[:6_000]
    )
    reports = tmp_path / "reports"
    reports.mkdir()
    factory = functools.partial(
        _worker_probe.reporting_tokenizer, str(reports), proto=read_vocabulary_file(ALBERT_SPM)
    )
    summary = beam_engine.create_pretraining_data_beam(
        [str(document)], str(tmp_path / "x"), factory, config_of("sop", 3), 1,
        ("--runner", "FnApiRunner", "--direct_num_workers=1",
         "--direct_running_mode=multi_processing"),
    )  # fmt: skip
    assert summary.num_examples > 10
    workers = {
        path.stem: json.loads(path.read_text())
        for path in reports.iterdir()
        if path.stem != str(os.getpid())  # the launcher checks the factory once
    }
    assert workers, "no worker process built the tokenizer"
    for loaded in workers.values():
        assert loaded == dict.fromkeys(_worker_probe.HEAVY_MODULES, False)


def test_the_pretraining_drivers_record_check_accepts_the_beam_shards(beam_sop):
    layout = inspect_records(",".join(beam_sop.output_files), "train_data")
    assert (layout.sequence_length, layout.max_predictions_per_sequence) == (64, 20)
    assert count_records(beam_sop.output_files) == beam_sop.num_examples


def test_a_bundle_that_fails_once_is_retried_without_duplicates_or_losses(
    corpus, beam_tokenizer, local_runs, tmp_path, monkeypatch
):
    """The runner drops a failed bundle's outputs and runs it again; the retry makes the
    same records (a function of seed and document key), so nothing is doubled or lost. A
    buffer of a few records: the failed attempt has written runs, which nothing refers to."""
    process = beam_engine._DocumentRecords.process
    marker = tmp_path / "failed_once"

    def fails_once_midway(self, pair):
        for count, output in enumerate(process(self, pair)):
            # After the document's first run.
            if count == 1 and pair[0].key.startswith("wiki/wiki_00") and not marker.exists():
                marker.write_text("failed")
                raise RuntimeError("injected failure, first try")
            yield output

    monkeypatch.setattr(beam_engine._DocumentRecords, "process", fails_once_midway)
    config = dataclasses.replace(config_of("sop", 3), write_shuffle_buffer=8)
    beam = beam_engine.create_pretraining_data_beam(
        inputs_of(corpus), str(tmp_path / "x"), beam_tokenizer, config, NUM_SHARDS,
        ("--runner", "BundleBasedDirectRunner"),
    )  # fmt: skip
    assert marker.exists()
    local = local_runs("sop", 3)
    assert digests(beam.output_files) == digests(local.output_files)
    assert comparable(beam) == comparable(local)


def test_a_shard_merges_many_runs_into_the_local_tools_bytes_and_no_run_is_left(
    corpus, beam_tokenizer, local_runs, tmp_path, monkeypatch
):
    """A buffer of a few records: every shard is merged from many runs (beyond a fan-in of 4,
    some merged first), into the local tool's bytes; no temporary file is left afterwards."""
    monkeypatch.setattr(runs, "MAX_OPEN_RUNS", 4)
    merge_runs, runs_per_shard = beam_engine.merge_runs, []

    def counting(sections, *args):
        runs_per_shard.append(len({path for path, _, _ in sections}))
        return merge_runs(sections, *args)

    monkeypatch.setattr(beam_engine, "merge_runs", counting)
    config = dataclasses.replace(config_of("sop", 3), write_shuffle_buffer=8)
    beam = beam_engine.create_pretraining_data_beam(
        inputs_of(corpus), str(tmp_path / "x"), beam_tokenizer, config, NUM_SHARDS, IN_MEMORY
    )
    assert len(runs_per_shard) == NUM_SHARDS and min(runs_per_shard) > 4
    local = local_runs("sop", 3)
    assert digests(beam.output_files) == digests(local.output_files)
    assert comparable(beam) == comparable(local)
    assert sorted(os.listdir(tmp_path)) == sorted(
        [os.path.basename(p) for p in beam.output_files] + ["x.summary.json"]
    )


def test_nothing_to_read_and_a_missing_model_fail_in_one_line_before_any_work(
    beam_tokenizer, tmp_path
):
    from keras_albert.cli import USER_ERRORS

    spec = importlib.util.spec_from_file_location(
        "create_pretraining_data_cli", os.path.join(REPO, "tools", "create_pretraining_data.py")
    )
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    main = tool.main

    nothing = str(tmp_path / "nothing-*.txt")
    with pytest.raises(ValueError, match=r"`inputs` must name at least one readable file.*nothing"):
        beam_engine.create_pretraining_data_beam([nothing], str(tmp_path / "x"), beam_tokenizer)
    text = os.path.join(DATA_DIR, "wikitext_sample.txt")
    common = ["--engine", "beam", "--output-dir", str(tmp_path / "out")]
    with pytest.raises(USER_ERRORS, match="not found"):
        main([*common, "--inputs", text, "--vocabulary", str(tmp_path / "missing.model")])
    with pytest.raises(USER_ERRORS, match="Beam's and need --engine beam"):
        main(["--inputs", text, "--output-dir", "o", "--vocabulary", ALBERT_SPM, "--", "-x"])
    assert not os.path.exists(tmp_path / "out") and not os.path.exists("o")


@pytest.mark.slow  # ≈ 15 s: a fresh process imports Beam (CI: --run-slow)
def test_the_command_prints_its_summary_and_nothing_on_stderr(tmp_path):
    text = os.path.join(DATA_DIR, "wikitext_sample.txt")
    result = subprocess.run(
        [sys.executable, "-m", "keras_albert", "create-data", "--engine", "beam", "--inputs",
         text, "--output-dir", str(tmp_path / "out"), "--vocabulary", ALBERT_SPM,
         "--dupe-factor", "1"],
        capture_output=True, text=True, cwd=REPO, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""  # neither Beam's start-up lines nor its BigQuery notice
    with open(tmp_path / "out" / "pretraining.summary.json") as file:
        summary = PretrainingDataSummary.from_json(file.read())
    assert summary.output_files == [str(tmp_path / "out" / "pretraining-00000-of-00001.tfrecord")]
    assert f"examples:          {summary.num_examples}\n" in result.stdout
