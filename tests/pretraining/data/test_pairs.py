"""Short targets: drawn once per document and pass, as the original's
`create_instances_from_document` (its `target_seq_length` is set before the chunk loop)."""

import random

import numpy as np
import pytest

from keras_albert.pretraining.data import PretrainingDataConfig
from keras_albert.pretraining.data.pairs import create_examples_from_document
from keras_albert.pretraining.data.vocabulary import TokenTables
from keras_albert.text.tokenizer import AlbertTokenizer
from tests.text._paths import ALBERT_SPM

SEQUENCE_LENGTH = 128
MAX_NUM_TOKENS = SEQUENCE_LENGTH - 3  # [CLS] A [SEP] B [SEP]
SENTENCE_TOKENS = 3


@pytest.fixture(scope="module")
def tables():
    return TokenTables(AlbertTokenizer(ALBERT_SPM))


@pytest.fixture(scope="module")
def sentences(tables):
    """100 sentences of 3 one-piece words: a chunk of target t closes at 3 * ceil(t / 3)."""
    words = [
        i for i in range(len(tables.special)) if tables.word_start[i] and not tables.special[i]
    ]
    return [words[k : k + SENTENCE_TOKENS] for k in range(0, 100 * SENTENCE_TOKENS, 3)]


def pair_lengths(sentences, tables, seed, **overrides):
    config = PretrainingDataConfig(sequence_length=SEQUENCE_LENGTH, masked_lm_prob=0.0, **overrides)
    examples = create_examples_from_document(sentences, random.Random(seed), tables, config)
    return [len(e.token_ids) - 3 for e in examples]


def expected_length(target):
    """What one target gives with 3-token sentences: the chunk reaching it, then truncated."""
    return min(SENTENCE_TOKENS * -(-target // SENTENCE_TOKENS), MAX_NUM_TOKENS)


def test_every_chunk_of_a_pass_aims_at_one_short_target(sentences, tables):
    firsts = set()
    for seed in range(40):
        lengths = pair_lengths(sentences, tables, seed, short_seq_prob=1.0)
        # All chunks but the last (the document's rest) have the one target's length.
        assert len(set(lengths[:-1])) == 1, (seed, lengths)
        assert lengths[-1] <= lengths[0]
        assert lengths[0] in {expected_length(t) for t in range(2, MAX_NUM_TOKENS + 1)}
        firsts.add(lengths[0])
    # The target is drawn: 40 draws from [2, 125] give many lengths.
    assert len(firsts) > 10


def test_per_chunk_draw_is_kept_as_an_option(sentences, tables):
    passes = [
        pair_lengths(sentences, tables, seed, short_seq_prob=1.0, short_seq_draw="chunk")
        for seed in range(10)
    ]
    assert all(len(set(lengths[:-1])) > 1 for lengths in passes)


def test_share_of_short_passes_is_short_seq_prob(sentences, tables):
    """A pass is short with probability short_seq_prob, and then shorter than the full length
    unless its target t is 124 or 125 (3 * ceil(t / 3) >= 125): p = 0.5 * 122 / 124."""
    num_passes = 400
    short = [
        pair_lengths(sentences, tables, seed, short_seq_prob=0.5)[0] < MAX_NUM_TOKENS
        for seed in range(num_passes)
    ]
    expected = 0.5 * 122 / 124
    # 4 standard deviations of a binomial share over 400 passes.
    assert abs(np.mean(short) - expected) < 4 * np.sqrt(expected * (1 - expected) / num_passes)
