"""Held-out intrinsic sets (SOP and NSP from the same held-out text) and the evaluation that
scores a pretrainer on them, against a NumPy count over the decoded records."""

import glob
import os

import numpy as np
import pytest
import sentencex
import tensorflow as tf

from keras_albert.config import AlbertConfig
from keras_albert.models import AlbertBackbone, AlbertPretrainer
from keras_albert.pretraining.data import PretrainingDataConfig, decode_record
from keras_albert.pretraining.data.intrinsic_sets import write_intrinsic_sets
from keras_albert.pretraining.intrinsic_eval import evaluate_sentence_pairs
from keras_albert.text.tokenizer import AlbertTokenizer
from tests.text._paths import ALBERT_SPM, DATA_DIR

SEQUENCE_LENGTH = 32
PREDICTIONS = 5


@pytest.fixture(scope="module")
def tokenizer():
    return AlbertTokenizer(ALBERT_SPM)


@pytest.fixture(scope="module")
def sets(tmp_path_factory, tokenizer):
    # Held-out text: the sample's first 40 paragraphs, each one document (blank-line separated).
    with open(os.path.join(DATA_DIR, "austen_paragraphs.txt"), encoding="utf-8") as f:
        paragraphs = f.read().split("\n\n")[:40]
    source = str(tmp_path_factory.mktemp("text") / "held_out.txt")
    with open(source, "w", encoding="utf-8") as f:
        f.write("\n\n".join(paragraphs) + "\n\n")
    config = PretrainingDataConfig(
        sequence_length=SEQUENCE_LENGTH,
        max_predictions_per_sequence=PREDICTIONS,
        dupe_factor=1,
        document_split="blank_line",
        seed=5,
    )
    output = tmp_path_factory.mktemp("held_out")
    return source, write_intrinsic_sets(source, str(output), tokenizer, config)


def _decoded(files):
    rows = []
    for record in tf.data.TFRecordDataset(files):
        features = decode_record(record, SEQUENCE_LENGTH, PREDICTIONS)
        rows.append({k: v.numpy() for k, v in features.items()})
    return rows


def _segments(row):
    """(A, B) token ids with the masked positions restored (the records' static masks)."""
    weights = row["mask_weights"] > 0
    tokens = row["token_ids"][row["padding_mask"] > 0].tolist()
    positions, originals = row["mask_positions"][weights], row["mask_ids"][weights]
    for position, token in zip(positions, originals, strict=True):
        tokens[position] = int(token)
    length_a = int(np.sum(row["segment_ids"][: len(tokens)] == 0)) - 2
    return tokens[1 : length_a + 1], tokens[length_a + 2 : -1]


def _in_order(stream, first, second, gap=160):
    """`second` starts at most `gap` tokens after `first` ends in `stream` (pairs are trimmed
    at random ends to fit, so the tokens trimmed off may lie between them)."""
    text = "".join(chr(0x10000 + t) for t in stream)
    first, second = ("".join(chr(0x10000 + t) for t in ids) for ids in (first, second))
    start = text.find(first)
    while start >= 0:  # every occurrence of `first` (a short segment may occur often)
        end = start + len(first)
        following = text.find(second, end)
        if 0 <= following - end <= gap:
            return True
        start = text.find(first, start + 1)
    return False


def test_sop_and_nsp_sets_pair_segments_as_their_task_says(sets, tokenizer):
    source, written = sets
    with open(source, encoding="utf-8") as f:
        # the text as one token stream, sentence by sentence as the data tool tokenizes it
        paragraphs = [" ".join(p.split()) for p in f.read().split("\n\n") if p.strip()]
    stream = [
        t
        for p in paragraphs
        for sentence in sentencex.segment("en", p)
        for t in tokenizer.encode(sentence.strip())
    ]
    sop, nsp = _decoded(written["sop"]["files"]), _decoded(written["nsp"]["files"])
    assert len(sop) == written["sop"]["examples"] and len(nsp) == written["nsp"]["examples"]
    for rows, task in ((sop, "sop"), (nsp, "nsp")):
        labels = [int(r["sentence_order_label"]) for r in rows]
        assert 0.3 < np.mean(labels) < 0.7, task
    # SOP: label 0 is A then B as written, label 1 the two swapped.
    for row in sop:
        a, b = _segments(row)
        if row["sentence_order_label"] == 0:
            assert _in_order(stream, a, b)
        else:
            assert _in_order(stream, b, a)
    # NSP: label 0 is A then B as written; label 1 takes B from another document.
    negatives = 0
    for row in nsp:
        a, b = _segments(row)
        if row["sentence_order_label"] == 0:
            assert _in_order(stream, a, b)
        else:
            negatives += not _in_order(stream, a, b)
    assert negatives >= 0.9 * sum(r["sentence_order_label"] for r in nsp)


@pytest.fixture(scope="module")
def pretrainer(tokenizer):
    config = AlbertConfig(
        vocabulary_size=tokenizer.vocabulary_size,
        max_sequence_length=SEQUENCE_LENGTH,
        embedding_dim=16,
        hidden_dim=32,
        intermediate_dim=64,
        num_layers=1,
        num_heads=2,
    )
    return AlbertPretrainer(AlbertBackbone.from_albert_config(config))


@pytest.mark.parametrize("task", ["sop", "nsp"])
def test_accuracies_match_a_numpy_count_over_every_record(sets, pretrainer, task):
    _, written = sets
    rows = _decoded(written[task]["files"])
    x = {
        name: np.stack([r[name] for r in rows])
        for name in ("token_ids", "segment_ids", "padding_mask", "mask_positions")
    }
    outputs = pretrainer(x, training=False)
    labels = np.array([r["sentence_order_label"] for r in rows])
    pair = np.mean(np.argmax(outputs["sop_logits"].numpy(), -1) == labels)
    weights = np.stack([r["mask_weights"] for r in rows]) > 0
    hits = np.argmax(outputs["mlm_logits"].numpy(), -1) == np.stack([r["mask_ids"] for r in rows])
    pattern = os.path.join(os.path.dirname(written[task]["files"][0]), f"{task}-*.tfrecord")
    # batch 48: several batches and a partial last one, all counted once
    result = evaluate_sentence_pairs(pretrainer, pattern, batch_size=48)
    assert result["examples"] == len(rows) > 48 and len(rows) % 48
    assert result["pair_accuracy"] == pytest.approx(pair, abs=1e-12)
    assert result["mlm_accuracy"] == pytest.approx(hits[weights].mean(), abs=1e-12)
    assert result["positive_share"] == pytest.approx(labels.mean(), abs=1e-12)


def test_a_missing_pretrainer_is_named(tmp_path):
    with pytest.raises(ValueError, match="`pretrainer` must be a pretraining output directory"):
        evaluate_sentence_pairs(str(tmp_path), str(tmp_path / "*.tfrecord"))


def test_held_out_text_without_pairs_is_refused(tmp_path, tokenizer):
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n", encoding="utf-8")
    config = PretrainingDataConfig(sequence_length=SEQUENCE_LENGTH, document_split="blank_line")
    with pytest.raises(ValueError, match="`held_out_text` must hold text"):
        write_intrinsic_sets(str(empty), str(tmp_path / "out"), tokenizer, config)
    assert not glob.glob(str(tmp_path / "out" / "*.tfrecord"))
