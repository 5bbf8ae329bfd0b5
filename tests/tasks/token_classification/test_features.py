"""CoNLL NER files → word-aligned pieces → word tags and entity scores, on WNUT 2017 dev."""

import os

import numpy as np
import pytest
import seqeval.metrics as seqeval_metrics

from keras_albert.tasks.token_classification.features import (
    IGNORE_LABEL,
    ConllFormatError,
    entity_scores,
    label_list,
    make_ner_dataset,
    read_conll,
    tag_ids,
    word_predictions,
    write_conll_predictions,
)
from tests.text._paths import DATA_DIR

DEV = os.path.join(DATA_DIR, "ner", "wnut17_dev.conll")
TYPES = ["corporation", "creative-work", "group", "location", "person", "product"]


def independent_read(path):
    """Sentences as lists of (token, tag), read here with plain string operations."""
    sentences, current = [], []
    with open(path, encoding="utf-8") as file:
        for line in file:
            line = line.rstrip("\n")
            if line in ("", "\ufeff"):
                if current:
                    sentences.append(current)
                current = []
                continue
            token, tag = line.split("\t")
            current.append((token, tag))
    if current:
        sentences.append(current)
    return sentences


@pytest.fixture(scope="module")
def dev():
    return read_conll(DEV)


@pytest.fixture(scope="module")
def labels():
    return ["O"] + [f"{prefix}-{kind}" for kind in TYPES for prefix in "BI"]


def test_reader_keeps_every_word_and_tag(dev):
    expected = independent_read(DEV)
    assert len(dev) == len(expected) == 1009
    assert dev.words == [[token for token, _ in sentence] for sentence in expected]
    assert dev.tags == [[tag for _, tag in sentence] for sentence in expected]
    assert sum(map(len, dev.words)) == 15733
    assert label_list(dev.tags) == ["O"] + [f"{p}-{kind}" for kind in TYPES for p in "BI"]


def encode_all(dev, tokenizer, labels, sequence_length):
    dataset = make_ner_dataset(
        dev, tokenizer, labels, sequence_length, batch_size=len(dev), with_positions=True
    )
    features, piece_labels, positions = next(iter(dataset))
    return (
        {name: value.numpy() for name, value in features.items()},
        piece_labels.numpy(),
        positions.to_list(),
    )


def test_every_word_gets_a_first_piece_and_labels_survive_the_round_trip(
    dev, labels, albert_tokenizer
):
    tokenizer = albert_tokenizer
    features, piece_labels, positions = encode_all(dev, tokenizer, labels, 256)
    unknown_words = empty_words = ties = 0
    for row, words in enumerate(dev.words):
        ids = features["token_ids"][row][features["padding_mask"][row] == 1]
        # Every word has a first piece, in order; its pieces run to the next word's start.
        assert len(positions[row]) == len(words) and min(positions[row]) >= 1
        ends = [*positions[row][1:], len(ids) - 1]
        for word, start, end in zip(words, positions[row], ends, strict=True):
            expected = tokenizer.encode(word) or [tokenizer.unk_id]
            empty_words += not tokenizer.encode(word)
            unknown_words += tokenizer.unk_id in expected
            got = [int(i) for i in ids[start:end]]
            if got != expected:
                # The graph's SentencePiece breaks exact score ties the other way (see
                # text/tokenizer.py): the same pieces, in another order.
                assert sorted(got) == sorted(expected), (row, word)
                ties += 1
        # Gold labels through the pieces and back.
        label_positions = np.flatnonzero(piece_labels[row] != IGNORE_LABEL)
        assert list(label_positions) == positions[row]
        back = [labels[piece_labels[row][position]] for position in positions[row]]
        assert back == dev.tags[row]
    assert unknown_words > 0  # emoji and other characters without a piece are covered
    assert empty_words > 0  # "´" normalizes to nothing: it gets an <unk> piece of its own
    assert ties <= 5
    # And through the prediction path: logits that pick each piece's label.
    logits = np.eye(len(labels))[np.maximum(piece_labels, 0)]
    tags, cut = word_predictions(logits, positions, labels)
    assert tags == dev.tags and cut == 0


def test_words_past_the_sequence_length_are_cut_counted_and_predicted_outside(
    dev, labels, albert_tokenizer
):
    features, piece_labels, positions = encode_all(dev, albert_tokenizer, labels, 16)
    cut_expected = sum(position == -1 for row in positions for position in row)
    assert cut_expected > 0
    for row in positions:  # a cut word is never followed by a kept one
        kept = [p for p in row if p >= 0]
        assert row[: len(kept)] == kept and all(p <= 14 for p in kept)
    logits = np.eye(len(labels))[np.maximum(piece_labels, 0)]
    tags, cut = word_predictions(logits, positions, labels)
    assert cut == cut_expected
    for row, sentence in enumerate(tags):
        for position, tag, gold in zip(positions[row], sentence, dev.tags[row], strict=True):
            assert tag == ("O" if position == -1 else gold)


def corrupted(tags, seed=0):
    """A fixed, deterministic 'prediction': gold with type swaps, boundary and IOB1 errors."""
    rng = np.random.default_rng(seed)
    out = []
    for sentence in tags:
        sentence = list(sentence)
        for i, tag in enumerate(sentence):
            roll = rng.random()
            if roll < 0.05:
                sentence[i] = "O"
            elif roll < 0.08 and tag != "O":
                sentence[i] = f"{tag[0]}-{TYPES[rng.integers(len(TYPES))]}"
            elif roll < 0.10:
                sentence[i] = f"I-{TYPES[rng.integers(len(TYPES))]}"  # an I- without B-
            elif roll < 0.12 and tag.startswith("I-"):
                sentence[i] = "B-" + tag[2:]
        out.append(sentence)
    return out


def assert_equals_seqeval(gold, predicted):
    ours = entity_scores(gold, predicted)
    report = seqeval_metrics.classification_report(
        gold, predicted, output_dict=True, zero_division=0
    )
    for kind in TYPES:
        for key in ("precision", "recall", "f1"):
            assert ours[kind][key] == pytest.approx(
                report[kind]["f1-score" if key == "f1" else key], abs=1e-12
            ), (kind, key)
        assert ours[kind]["support"] == report[kind]["support"]
    assert ours["micro"]["precision"] == pytest.approx(
        seqeval_metrics.precision_score(gold, predicted), abs=1e-12
    )
    assert ours["micro"]["recall"] == pytest.approx(
        seqeval_metrics.recall_score(gold, predicted), abs=1e-12
    )
    assert ours["micro"]["f1"] == pytest.approx(
        seqeval_metrics.f1_score(gold, predicted), abs=1e-12
    )
    return ours


def test_gold_against_gold_is_one(dev):
    scores = assert_equals_seqeval(dev.tags, dev.tags)
    assert scores["micro"]["f1"] == 1.0 and scores["micro"]["support"] == 836


def test_scores_equal_seqeval_on_a_fixed_prediction_file(dev, tmp_path):
    write_conll_predictions(tmp_path / "predictions.conll", dev, corrupted(dev.tags))
    # The file is CoNLL: word, gold, predicted; read back, it gives both tag sequences.
    written = read_conll(tmp_path / "predictions.conll")
    assert written.words == dev.words and written.tags == corrupted(dev.tags)
    gold_back = [
        [line.split("\t")[1] for line in block.splitlines()]
        for block in (tmp_path / "predictions.conll").read_text().strip().split("\n\n")
    ]
    assert gold_back == dev.tags
    scores = assert_equals_seqeval(dev.tags, written.tags)
    assert 0.3 < scores["micro"]["f1"] < 0.95


def test_chunk_rules_on_small_cases():
    gold = [["B-a", "I-a", "O", "I-b", "I-b", "B-b", "I-a"]]
    # chunks: a[0,1], b[3,4], b[5,5], a[6,6]
    scores = entity_scores(gold, [["B-a", "I-a", "O", "B-b", "I-b", "B-b", "O"]])
    assert scores["micro"]["support"] == 4 and scores["micro"]["predicted"] == 3
    assert scores["micro"]["precision"] == 1.0 and scores["micro"]["recall"] == 0.75
    assert scores["a"]["recall"] == 0.5
    assert entity_scores([["O"]], [["O"]])["micro"]["f1"] == 0.0


@pytest.mark.parametrize(
    "content,expected",
    [
        ("word\tO\nother\tX-person\n", "tag 'X-person' is not BIO"),
        ("word\tO\nlonely\n", "expected a token and its tag"),
        ("\n\n", "no sentences"),
    ],
)
def test_bad_files_are_clear_errors(tmp_path, content, expected):
    (tmp_path / "bad.conll").write_text(content)
    with pytest.raises(ConllFormatError, match=expected):
        read_conll(tmp_path / "bad.conll")


def test_docstart_spaces_and_unknown_tags(tmp_path):
    (tmp_path / "a.conll").write_text(
        "-DOCSTART- -X- -X- O\n\nEU NNP B-NP B-org\nrejects VBZ B-VP O\n\nGerman JJ B-NP B-misc\n"
    )
    sentences = read_conll(tmp_path / "a.conll")
    assert sentences.words == [["EU", "rejects"], ["German"]]
    assert sentences.tags == [["B-org", "O"], ["B-misc"]]
    assert sentences.line_numbers == [3, 6]
    with pytest.raises(ConllFormatError, match=r"a.conll:6: tag 'B-misc' is not in the label"):
        tag_ids(sentences, ["O", "B-org", "I-org"])


def test_an_input_context_reads_one_shard_with_the_per_replica_batch(dev, labels, albert_tokenizer):
    import tensorflow as tf

    context = tf.distribute.InputContext(
        num_input_pipelines=2, input_pipeline_id=1, num_replicas_in_sync=2
    )
    dataset = make_ner_dataset(
        dev, albert_tokenizer, labels, 64, batch_size=64, input_context=context
    )
    sizes = [int(features["token_ids"].shape[0]) for features, _ in dataset]
    assert sizes[0] == 32 and sum(sizes) == len(dev) // 2


def test_a_directory_given_as_a_conll_file_is_refused_by_name(tmp_path):
    with pytest.raises(ValueError) as error:
        read_conll(tmp_path, name="train_data")
    assert str(error.value) == (
        f"`train_data` must be a file, not a directory. Received: train_data='{tmp_path}'"
    )
