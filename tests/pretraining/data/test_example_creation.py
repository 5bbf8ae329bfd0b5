"""Example creation: statistics on the real Austen novels, determinism, bad inputs, splitting."""

import collections
import dataclasses
import functools
import hashlib
import multiprocessing
import os
import random
import threading

import numpy as np
import pytest
import tensorflow as tf

from keras_albert.pretraining.data import (
    PretrainingDataConfig,
    create_pretraining_data,
    expand_inputs,
    iter_documents,
)
from keras_albert.pretraining.data.documents import document_sentences, expand_input_files
from keras_albert.pretraining.data.examples import KeyedRecord
from keras_albert.pretraining.data.masking import mask_tokens
from keras_albert.pretraining.data.pairs import create_examples_from_document
from keras_albert.pretraining.data.records import ORIGINAL_FEATURE_NAMES, serialize_features
from keras_albert.pretraining.data.summary import ExampleCounts
from keras_albert.pretraining.data.vocabulary import TokenTables
from keras_albert.pretraining.data.writer import _ShardSorter, ordered_bounded_map
from keras_albert.text.tokenizer import AlbertTokenizer
from tests.pretraining.data._helpers import AUSTEN, as_text, segments, word_ranges
from tests.text._paths import ALBERT_SPM, DATA_DIR


@pytest.fixture(scope="module")
def tokenizer():
    return AlbertTokenizer(ALBERT_SPM)


@pytest.fixture(scope="module")
def austen(tokenizer, tmp_path_factory):
    """All six novels at sequence_length 128, dupe_factor 2 (about 11k examples, ~15 s)."""
    config = PretrainingDataConfig(sequence_length=128, dupe_factor=2, seed=7)
    examples = []
    prefix = str(tmp_path_factory.mktemp("austen") / "austen")
    summary = create_pretraining_data(
        [AUSTEN], prefix, tokenizer, config, progress=False, on_example=examples.append
    )
    return config, summary, examples


def test_austen_mask_rate_is_15_percent_of_non_special_tokens(austen, tokenizer):
    config, summary, examples = austen
    assert len(examples) > 10_000
    num_masked = sum(len(e.mask_positions) for e in examples)
    num_candidates = sum(
        sum(t not in tokenizer.special_ids for t in e.original_token_ids()) for e in examples
    )
    assert abs(num_masked / num_candidates - 0.15) < 0.01
    assert max(len(e.mask_positions) for e in examples) <= config.max_predictions_per_sequence
    assert summary.num_masked_tokens == num_masked
    assert summary.num_non_special_tokens == num_candidates
    assert summary.num_examples == len(examples)


def test_austen_ngram_lengths_follow_one_over_n(austen, tokenizer):
    _, summary, examples = austen
    counts = collections.Counter(n for e in examples for n in e.span_lengths)
    total = sum(counts.values())
    for n, expected in ((1, 6 / 11), (2, 3 / 11), (3, 2 / 11)):
        assert abs(counts[n] / total - expected) < 0.02, (n, counts[n] / total)
    assert set(counts) == {1, 2, 3}
    assert summary.span_length_counts == counts


def test_austen_masks_whole_words_only(austen, tokenizer):
    _, _, examples = austen
    for example in examples[:3000]:
        masked = set(example.mask_positions)
        num_masked_words = 0
        for start, end in word_ranges(example.original_token_ids(), tokenizer):
            covered = masked.intersection(range(start, end))
            assert not covered or len(covered) == end - start, (start, end, covered)
            num_masked_words += bool(covered)
        # Spans are disjoint runs of whole words, so their lengths add up to the masked words.
        assert num_masked_words == sum(example.span_lengths)


def test_austen_replacements_are_80_10_10_and_never_special(austen, tokenizer):
    _, _, examples = austen
    kinds = collections.Counter()
    for example in examples:
        assert example.mask_positions == sorted(set(example.mask_positions))
        for position, original in zip(example.mask_positions, example.mask_ids, strict=True):
            shown = example.token_ids[position]
            assert original not in tokenizer.special_ids
            if shown == tokenizer.mask_id:
                kinds["mask"] += 1
            elif shown == original:
                kinds["same"] += 1
            else:
                assert shown not in tokenizer.special_ids
                kinds["random"] += 1
    total = sum(kinds.values())
    assert abs(kinds["mask"] / total - 0.8) < 0.01
    assert abs(kinds["same"] / total - 0.1) < 0.01
    assert abs(kinds["random"] / total - 0.1) < 0.01


def test_austen_sentence_order_labels_are_balanced_and_true(austen, tokenizer):
    config, summary, examples = austen
    labels = [e.sentence_order_label for e in examples]
    assert abs(np.mean(labels) - 0.5) < 0.02
    assert summary.num_swapped == sum(labels)

    # Every restored segment is text of one document (so masked_lm_ids are the original
    # tokens), and the order in the document matches the label.
    documents = [
        as_text([t for s in document_sentences(d, tokenizer) for t in s])
        for d in iter_documents(expand_inputs([AUSTEN]), config)
    ]
    corpus = "\n".join(documents)
    num_checked = 0
    for example in examples[:1500]:
        first, second = (as_text(s) for s in segments(example, tokenizer))
        assert first in corpus and second in corpus
        if min(len(first), len(second)) < 8 or corpus.count(first) + corpus.count(second) > 2:
            continue  # short or repeated segments have no unique place in the text
        earlier, later = (second, first) if example.sentence_order_label else (first, second)
        start = corpus.find(earlier)
        stop = corpus.find(later)
        assert start < stop and "\n" not in corpus[start:stop], example.sentence_order_label
        num_checked += 1
    assert num_checked > 1000


def test_austen_examples_fit_the_length_budget(austen, tokenizer):
    config, _, examples = austen
    for example in examples:
        first, second = segments(example, tokenizer)
        assert first and second
        assert len(first) + len(second) <= config.sequence_length - 3
    # The budget is used: most examples are full-length, short_seq_prob makes some shorter.
    lengths = np.array([len(e.token_ids) for e in examples])
    assert 0.75 < np.mean(lengths == config.sequence_length) < 0.95


def test_austen_summary_counts(austen, tokenizer):
    config, summary, _ = austen
    assert summary.num_files == 6
    headings = [
        line
        for name in sorted(os.listdir(AUSTEN))
        for line in open(os.path.join(AUSTEN, name))
        if len(line.split()) == 2 and line.split()[0] in ("CHAPTER", "Chapter", "VOLUME")
    ]
    assert summary.num_heading_lines == len(headings) == 272
    documents = list(iter_documents(expand_inputs([AUSTEN]), config))
    # A preamble (title, author) per novel plus one document per chapter.
    assert summary.num_documents == len(documents) == 6 + 269
    assert summary.num_sentences == sum(len(document_sentences(d, tokenizer)) for d in documents)
    text = str(summary)
    assert f"examples:          {summary.num_examples}" in text
    for (_, reason), _ in summary.skipped.items():
        assert reason == "one-word chunk (cannot form a pair)"


def sha256(paths):
    return [hashlib.sha256(open(p, "rb").read()).hexdigest() for p in paths]


@pytest.mark.slow
def test_output_is_byte_identical_with_1_and_2_workers(tokenizer, tmp_path):
    config = PretrainingDataConfig(sequence_length=128, dupe_factor=1, seed=3)
    persuasion = os.path.join(AUSTEN, "persuasion.txt")
    # A spawned worker gets a factory, as a tokenizer holding TensorFlow resources needs; a
    # forked one inherits the instance.
    factory = functools.partial(AlbertTokenizer, proto=ALBERT_SPM, lowercase=True)
    runs = [
        create_pretraining_data(
            [persuasion],
            str(tmp_path / f"w{w}{method}"),
            source,
            config,
            w,
            3,
            progress=False,
            start_method=method,
        )  # fmt: skip
        for w, source, method in (
            (1, tokenizer, "spawn"),
            (2, factory, "spawn"),
            (2, tokenizer, "fork"),
        )
    ]
    assert runs[0].num_examples == runs[1].num_examples == runs[2].num_examples > 500
    assert sha256(runs[0].output_files) == sha256(runs[1].output_files)
    assert sha256(runs[0].output_files) == sha256(runs[2].output_files)
    other_seed = PretrainingDataConfig(sequence_length=128, dupe_factor=1, seed=4)
    reseeded = create_pretraining_data(
        [persuasion], str(tmp_path / "s4"), tokenizer, other_seed, 1, 3, progress=False
    )
    assert sha256(reseeded.output_files) != sha256(runs[0].output_files)


def test_written_records_parse_back_to_the_examples(tokenizer, tmp_path):
    config = PretrainingDataConfig(
        sequence_length=64, max_predictions_per_sequence=10, dupe_factor=1
    )
    examples = []
    summary = create_pretraining_data(
        [os.path.join(AUSTEN, "northangerabbey.txt")],
        str(tmp_path / "n"),
        tokenizer,
        config,
        num_shards=1,
        progress=False,
        on_example=examples.append,
    )
    spec = {
        name: tf.io.FixedLenFeature([size], tf.int64)
        for name, size in (
            ("input_ids", 64),
            ("input_mask", 64),
            ("segment_ids", 64),
            ("token_boundary", 64),
            ("masked_lm_positions", 10),
            ("masked_lm_ids", 10),
            ("next_sentence_labels", 1),
        )
    }
    spec["masked_lm_weights"] = tf.io.FixedLenFeature([10], tf.float32)
    records = list(tf.data.TFRecordDataset(summary.output_files))
    assert len(records) == len(examples) == summary.num_examples
    for record, example in zip(records, examples, strict=True):
        parsed = {k: v.numpy() for k, v in tf.io.parse_single_example(record, spec).items()}
        length, num_masked = len(example.token_ids), len(example.mask_positions)
        np.testing.assert_array_equal(parsed["input_ids"][:length], example.token_ids)
        assert not parsed["input_ids"][length:].any()
        np.testing.assert_array_equal(parsed["input_mask"], [1] * length + [0] * (64 - length))
        np.testing.assert_array_equal(parsed["segment_ids"][:length], example.segment_ids)
        np.testing.assert_array_equal(parsed["token_boundary"][:length], example.token_boundary)
        np.testing.assert_array_equal(
            parsed["masked_lm_positions"][:num_masked], example.mask_positions
        )
        np.testing.assert_array_equal(parsed["masked_lm_ids"][:num_masked], example.mask_ids)
        np.testing.assert_array_equal(
            parsed["masked_lm_weights"], [1.0] * num_masked + [0.0] * (10 - num_masked)
        )
        assert parsed["next_sentence_labels"][0] == example.sentence_order_label
        # token_boundary (of the unmasked tokens): 1 on specials and word starts, as the original.
        expected = [
            int(t in tokenizer.special_ids or tokenizer.is_word_start(t))
            for t in example.original_token_ids()
        ]
        assert example.token_boundary == expected


def test_bad_inputs_are_skipped_and_counted(tokenizer, tmp_path):
    good = tmp_path / "good.txt"
    good.write_text(open(os.path.join(AUSTEN, "persuasion.txt")).read()[:20_000])
    (tmp_path / "empty.txt").write_bytes(b"")
    (tmp_path / "binary.bin").write_bytes(bytes(range(256)) * 100)
    (tmp_path / "latin1.txt").write_bytes(
        "Caf\u00e9 society was dull.\n".encode("latin-1") + b"It rained all day long.\n"
    )
    with open(tmp_path / "long_line.txt", "wb") as handle:
        handle.write(b"x" * 10_000_000 + b"\nAnne walked to the village. She met Mr. Elliot.\n")
    (tmp_path / "no_text").mkdir()
    missing = str(tmp_path / "missing.txt")
    config = PretrainingDataConfig(sequence_length=64, dupe_factor=1, document_split="file")
    inputs = [
        str(good),
        str(tmp_path / "empty.txt"),
        str(tmp_path / "binary.bin"),
        str(tmp_path / "latin1.txt"),
        str(tmp_path / "long_line.txt"),
        str(tmp_path / "no_text"),
        missing,
    ]
    summary = create_pretraining_data(
        inputs, str(tmp_path / "out" / "x"), tokenizer, config, progress=False
    )
    skipped = {(os.path.basename(path), reason): n for (path, reason), n in summary.skipped.items()}
    assert skipped == {
        ("empty.txt", "empty file"): 1,
        ("binary.bin", "binary file (NUL bytes)"): 1,
        ("latin1.txt", "line with invalid UTF-8"): 1,
        ("long_line.txt", "line longer than 1000000 bytes"): 1,
        ("no_text", "directory contains no text files"): 1,
        ("missing.txt", "no such file, directory or matching glob"): 1,
    }
    assert summary.num_files == 5
    # good.txt, the valid line of latin1.txt and the two sentences after the long line.
    assert summary.num_documents == 3
    text = str(summary)
    for (path, reason), _ in summary.skipped.items():
        assert path in text and reason in text
    assert summary.num_examples > 0


def test_a_directory_yields_its_text_files_and_lists_the_others(tmp_path):
    corpus = tmp_path / "corpus"
    (corpus / "wiki" / "AA").mkdir(parents=True)
    (corpus / ".git").mkdir()
    read = ["book.txt", "notes.TXT", "wiki/AA/wiki_00", "wiki.test.raw"]
    left = ["NOTICE.md", "LICENSE", "README.txt", "wiki/notice.txt", "data.json", ".hidden.txt",
            "model.tfrecord"]  # fmt: skip
    for name in read + left:
        (corpus / name).write_text("Anne walked to the village.\n")
    (corpus / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    skipped = collections.Counter()
    files = expand_inputs([str(corpus)], skipped)
    assert sorted(files) == sorted(str(corpus / name) for name in read)
    assert dict(skipped) == {
        (str(corpus / name), "not a text file name (in a directory)"): 1 for name in left
    }
    # A file named by path is read whatever its name: the caller chose it.
    assert expand_inputs([str(corpus / "NOTICE.md")]) == [str(corpus / "NOTICE.md")]


def write(path, text):
    path.write_text(text)
    return str(path)


def documents_of(paths, **overrides):
    config = PretrainingDataConfig(**overrides)
    return [(d.texts, d.split_sentences) for d in iter_documents(paths, config)]


def test_document_split_rules(tmp_path):
    book = write(
        tmp_path / "book.txt",
        "A TITLE\n\nBy Someone\n\n\nCHAPTER I\n\nFirst para. Mr. Smith came.\n\n"
        "Second para\nwrapped   here.\n\nChapter 2\n\nOther text.\n",
    )
    other = write(tmp_path / "other.txt", "One.\n\nTwo.\n")
    assert documents_of([book], document_split="heading") == [
        (["A TITLE", "By Someone"], True),
        (["First para. Mr. Smith came.", "Second para wrapped here."], True),
        (["Other text."], True),
    ]
    assert documents_of([book, other], document_split="blank_line") == [
        ([text], True)
        for text in (
            "A TITLE",
            "By Someone",
            "CHAPTER I",
            "First para. Mr. Smith came.",
            "Second para wrapped here.",
            "Chapter 2",
            "Other text.",
            "One.",
            "Two.",
        )
    ]
    assert documents_of([book, other], document_split="file")[1] == (["One.", "Two."], True)
    original = write(tmp_path / "original.txt", "Sentence one.\nSentence two.\n\nNext doc.\n")
    assert documents_of([original], document_split="original") == [
        (["Sentence one.", "Sentence two."], False),
        (["Next doc."], False),
    ]


def test_wikitext_articles_split_at_level_one_headings():
    sample = os.path.join(DATA_DIR, "wikitext_sample.txt")
    documents = list(iter_documents([sample], PretrainingDataConfig()))
    assert len(documents) == 2
    assert documents[0].texts[0].startswith("Robert Boulter is an English")
    assert documents[1].texts[0].startswith("Du Fu ( Wade")
    # Section headings (" = = Career = = ") end paragraphs and are not text.
    assert not any("= =" in text for d in documents for text in d.texts)
    assert len(documents[0].texts) == 3  # the text between its section headings


def test_sentences_are_split_by_sentencex_keeping_abbreviations(tokenizer, tmp_path):
    path = write(
        tmp_path / "a.txt", 'Mr. Bennet replied that he had not. "But it is," returned she.\n'
    )
    document = next(iter_documents([path], PretrainingDataConfig(document_split="file")))
    sentences = document_sentences(document, tokenizer)
    assert sentences == [
        tokenizer.encode("Mr. Bennet replied that he had not."),
        tokenizer.encode('"But it is," returned she.'),
    ]


def tables_and_config(tokenizer, **overrides):
    return TokenTables(tokenizer), PretrainingDataConfig(**overrides)


def test_mask_budget_is_capped_by_max_predictions(tokenizer):
    tables, config = tables_and_config(tokenizer, sequence_length=512)
    words = tokenizer.encode(open(os.path.join(AUSTEN, "emma.txt")).read()[5_000:9_000])
    tokens = [tokenizer.cls_id, *words[:300], tokenizer.sep_id, *words[300:509], tokenizer.sep_id]
    counts = []
    for seed in range(200):
        masked, positions, _, _ = mask_tokens(tokens, random.Random(seed), tables, config)
        assert len(positions) <= 20
        assert tokenizer.sep_id not in (tokens[p] for p in positions)
        counts.append(len(positions))
    # round(0.15 * 509) = 76 > 20: the cap binds; spans that overshoot 20 are never kept.
    assert 18 < np.mean(counts) <= 20


def test_masked_lm_prob_zero_writes_unmasked_examples(tokenizer):
    tables, config = tables_and_config(tokenizer, masked_lm_prob=0.0)
    tokens = [tokenizer.cls_id, *tokenizer.encode("a short sentence here"), tokenizer.sep_id]
    masked, positions, ids, spans = mask_tokens(tokens, random.Random(0), tables, config)
    assert (masked, positions, ids, spans) == (tokens, [], [], [])


def test_one_sentence_chunk_is_split_inside_the_sentence_in_sop_mode(tokenizer):
    """Decision: the original pairs a one-sentence chunk with a random document's text; here
    the sentence is cut at a random word start, so SOP pairs never mix documents."""
    tables, config = tables_and_config(tokenizer, sequence_length=24, masked_lm_prob=0.0)
    sentence = tokenizer.encode(" ".join(f"word{i}" for i in range(40)))
    text = as_text(sentence)
    rng = random.Random(0)
    labels = []
    for _ in range(50):
        for example in create_examples_from_document([sentence], rng, tables, config):
            first, second = (as_text(s) for s in segments(example, tokenizer))
            earlier, later = (second, first) if example.sentence_order_label else (first, second)
            assert earlier in text and later in text
            assert text.find(earlier) + len(earlier) <= text.find(later)
            assert example.cut_inside_sentence
            labels.append(example.sentence_order_label)
    assert 0.3 < np.mean(labels) < 0.7


def test_pairs_cut_inside_a_sentence_are_counted(tokenizer):
    """The summary's count of one-sentence cuts: none while every chunk holds several whole
    sentences (only a document's last chunk can be a lone sentence), all for one long one."""
    tables, config = tables_and_config(tokenizer, sequence_length=128, short_seq_prob=0.0)
    short = [tokenizer.encode(f"Sentence number {i} is short.") for i in range(200)]
    long = [tokenizer.encode(" ".join(f"word{i}" for i in range(150)))]
    for sentences, expected_at_most in ((short, 1), (long, None)):
        counts = ExampleCounts()
        examples = create_examples_from_document(sentences, random.Random(0), tables, config)
        for example in examples:
            counts.add_example(example, tables.special)
        flagged = sum(example.cut_inside_sentence for example in examples)
        assert counts.num_cut_inside_sentence == flagged
        if expected_at_most is None:
            assert flagged == len(examples) == 1
        else:
            assert len(examples) > 5 and flagged <= expected_at_most


def test_nsp_mode_takes_b_from_another_document(tokenizer):
    tables, config = tables_and_config(tokenizer, sequence_length=48, task="nsp")
    novels = [
        open(os.path.join(AUSTEN, n)).read()[3_000:8_000] for n in ("emma.txt", "persuasion.txt")
    ]
    documents = [[tokenizer.encode(s) for s in novel.split(". ")] for novel in novels]
    texts = [as_text([t for s in document for t in s]) for document in documents]
    rng = random.Random(1)
    labels = []
    for _ in range(20):
        for example in create_examples_from_document(
            documents[0], rng, tables, config, partner=documents[1]
        ):
            first, second = (as_text(s) for s in segments(example, tokenizer))
            assert first in texts[0]
            assert second in texts[1 if example.sentence_order_label else 0]
            labels.append(example.sentence_order_label)
    assert len(labels) > 300 and 0.4 < np.mean(labels) < 0.6


def test_invalid_arguments_name_the_value(tokenizer, tmp_path):
    with pytest.raises(ValueError, match="masked_lm_prob.*1.5"):
        PretrainingDataConfig(masked_lm_prob=1.5)
    with pytest.raises(ValueError, match="task.*'mlm'"):
        PretrainingDataConfig(task="mlm")
    with pytest.raises(ValueError, match="heading_pattern"):
        PretrainingDataConfig(heading_pattern="(")
    with pytest.raises(TypeError, match="TokenizerLike.*str"):
        create_pretraining_data(["x"], str(tmp_path / "x"), "not a tokenizer")

    class Unpicklable:
        def __init__(self):
            self.lock = threading.Lock()

        def __getattr__(self, name):
            return getattr(tokenizer, name)

    unpicklable = Unpicklable()
    with pytest.raises(TypeError, match="cannot be pickled.*factory"):
        create_pretraining_data(["x"], str(tmp_path / "x"), unpicklable, num_workers=2)
    with pytest.raises(ValueError, match="start_method.*'thread'"):
        create_pretraining_data(["x"], str(tmp_path / "x"), tokenizer, start_method="thread")
    with pytest.raises(ValueError, match="num_workers.*0"):
        create_pretraining_data(["x"], str(tmp_path / "x"), tokenizer, num_workers=0)


def test_serialized_bytes_equal_tensorflows_example():
    """Workers serialize without TensorFlow; the bytes must be tf.train.Example's."""
    rng = np.random.default_rng(0)
    features = {name: rng.integers(0, 2**40, 9) for name in ORIGINAL_FEATURE_NAMES}
    features["masked_lm_weights"] = rng.random(9).astype(np.float32)
    expected = tf.train.Example(
        features=tf.train.Features(
            feature={
                name: tf.train.Feature(float_list=tf.train.FloatList(value=values))
                if values.dtype == np.float32
                else tf.train.Feature(int64_list=tf.train.Int64List(value=values))
                for name, values in features.items()
            }
        )
    )
    assert serialize_features(features) == expected.SerializeToString(deterministic=True)


def test_workers_pull_documents_only_as_results_are_taken():
    """Streaming: at most `window` documents are in flight, whatever the corpus size."""
    pulled = []

    def items():
        for i in range(50):
            pulled.append(i)
            yield -i

    pool = multiprocessing.get_context("spawn").Pool(2)
    try:
        # A builtin: the workers need not import this (TensorFlow-importing) test module.
        results = ordered_bounded_map(pool, abs, items(), window=4)
        taken = []
        for value in results:
            taken.append(value)
            assert len(pulled) <= len(taken) + 4
    finally:
        pool.terminate()
    assert taken == list(range(50))


def test_documents_are_read_lazily(tmp_path):
    first = write(tmp_path / "a.txt", "One document.\n")
    opened = []

    def files():
        for path in (first, str(tmp_path / "never.txt")):
            opened.append(path)
            yield path

    documents = iter_documents(files(), PretrainingDataConfig(document_split="file"))
    assert next(documents).texts == ["One document."]
    assert opened == [first]


def test_a_failed_run_leaves_no_shard_behind(tokenizer, tmp_path):
    """Shards appear only complete: a run that fails midway leaves neither shards nor parts,
    nor the folder it made."""
    path = write(tmp_path / "p.txt", open(os.path.join(AUSTEN, "persuasion.txt")).read()[:20_000])
    config = PretrainingDataConfig(sequence_length=64, dupe_factor=1, write_shuffle_buffer=1)
    seen = []

    def fail_on_the_third(example):
        seen.append(example)
        if len(seen) == 3:
            raise RuntimeError("stop")

    prefix = str(tmp_path / "out" / "x")
    with pytest.raises(RuntimeError, match="stop"):
        create_pretraining_data(
            [path], prefix, tokenizer, config, num_shards=2, progress=False,
            on_example=fail_on_the_third,
        )  # fmt: skip
    assert not os.path.exists(tmp_path / "out")
    summary = create_pretraining_data(
        [path], prefix, tokenizer, config, num_shards=2, progress=False
    )
    assert sorted(os.listdir(tmp_path / "out")) == [
        os.path.basename(p) for p in summary.output_files
    ]


def test_documents_are_keyed_by_their_place_in_the_corpus_not_its_location(tokenizer, tmp_path):
    """Keys are paths relative to the input (plus the ordinal): a corpus moved elsewhere, or
    read through a small write buffer (sorted runs on disk), gives the same bytes."""
    text = open(os.path.join(AUSTEN, "persuasion.txt")).read()[:15_000]
    for place in ("a", "b/c"):
        (tmp_path / place / "books").mkdir(parents=True)
        write(tmp_path / place / "books" / "p.txt", text)
    config = PretrainingDataConfig(sequence_length=64, dupe_factor=1)
    runs = [
        create_pretraining_data(
            [str(tmp_path / place / "books")],
            str(tmp_path / f"out{i}" / "x"),
            tokenizer,
            dataclasses.replace(config, write_shuffle_buffer=buffer),
            num_shards=2,
            progress=False,
        )  # fmt: skip
        for i, (place, buffer) in enumerate((("a", 10_000), ("b/c", 10_000), ("a", 7)))
    ]
    assert runs[0].num_examples > 30
    assert sha256(runs[0].output_files) == sha256(runs[1].output_files)
    assert sha256(runs[0].output_files) == sha256(runs[2].output_files)
    # The runs on disk are gone.
    assert sorted(os.listdir(tmp_path / "out2")) == [
        os.path.basename(p) for p in runs[2].output_files
    ]
    documents = list(iter_documents(expand_input_files([str(tmp_path / "a")]), config))
    assert [d.key for d in documents[:2]] == ["books/p.txt:0", "books/p.txt:1"]


def test_the_shard_sorter_spills_and_merges_its_runs_in_order(tmp_path):
    rng = random.Random(0)
    items = [KeyedRecord(rng.randrange(1000), bytes([rng.randrange(256)])) for _ in range(300)]
    # 2 records a run: 150 runs, merged at the end, at most 64 open at once.
    sorter = _ShardSorter(str(tmp_path / "x"), 3, 2)
    for item in items:
        sorter.add(item)
    assert len(sorter.runs) == 150
    expected = sorted((item.sort_key % 3, item.sort_key, item.record) for item in items)
    assert [(shard, record) for shard, record, _ in sorter] == [(s, r) for s, _, r in expected]
    assert len(sorter.runs) > 150  # the runs merged first, before the last 64
    sorter.remove_runs()
    assert os.listdir(tmp_path) == []
