"""Masked texts → token ids and filled texts: the graph equals Python, and Python equals Hugging
Face's `AlbertTokenizer` but for the one documented departure (a part glued to a mask)."""

import random

import numpy as np
import pytest
import tensorflow as tf
from sentencepiece import sentencepiece_model_pb2
from transformers import AlbertTokenizer as HuggingFaceAlbertTokenizer

from keras_albert.tasks.fill_mask.features import (
    MaskedTextEncoder,
    mask_positions_graph,
    pack,
    pack_graph,
)
from keras_albert.text.normalization import to_text
from keras_albert.text.tokenizer import AlbertTokenizer
from tests.text.text_data import ALBERT_MODEL, DATA, load_sst2_dev

MASK = "[MASK]"
# Odd placements: at the ends, glued to words, numbers and quotes, repeated, lowercase (not a
# mask), odd whitespace, invalid UTF-8, no mask at all.
ODD = [
    "The sky is [MASK].",
    "The sky is[MASK].",
    "[MASK] is blue",
    "Paris is the [MASK] of France.",
    "a [MASK] [MASK] b",
    "I paid 1,000[MASK]1,000, ok",
    "the [MASK]s are",
    "[mask] x",
    "[MASK][MASK]",
    "",
    "no mask",
    "  [MASK]\u3000x  ",
    "born in 92000, [MASK] falsé",
    "``[MASK]''",
    "[MASK]\u0301 café",
    "[[MASK]] [MASK",
    b"ab\xff[MASK]\xfe cd",
]
# The texts Hugging Face tokenizes differently, ours first: the part after the mask continues
# the masked word, where Hugging Face starts a new one (its dummy "▁").
CONTINUED = {
    "The sky is [MASK].": (["▁the", "▁sky", "▁is", MASK, "."], ["▁", "."]),
    "The sky is[MASK].": (["▁the", "▁sky", "▁is", MASK, "."], ["▁", "."]),
    "I paid 1,000[MASK]1,000, ok": (
        ["▁i", "▁paid", "▁1,000", MASK, "1,000", ",", "▁ok"],
        ["▁1,000", ","],
    ),
    "the [MASK]s are": (["▁the", MASK, "s", "▁are"], ["▁", "s"]),
    "``[MASK]''": (["▁", '"', MASK, '"'], ["▁", '"']),
    "[[MASK]] [MASK": (["▁[", MASK, "]", "▁[", "mask"], ["▁", "]"]),
}


def masked_sentences(count=300, seed=0):
    """SST-2 dev sentences with one word (or two) replaced by the mask token."""
    rng = random.Random(seed)
    texts = []
    for sentence in load_sst2_dev()[:count]:
        words = sentence.split()
        for index in rng.sample(range(len(words)), min(len(words), 1 + len(texts) % 2)):
            words[index] = MASK
        texts.append(" ".join(words))
    return texts


@pytest.fixture(scope="module")
def encoder():
    # Hugging Face's quote normalization, for the comparison with it.
    return MaskedTextEncoder(AlbertTokenizer(ALBERT_MODEL, normalize_quotes=True))


@pytest.fixture(scope="module")
def hugging_face():
    model = sentencepiece_model_pb2.ModelProto()
    model.ParseFromString(ALBERT_MODEL.read_bytes())
    return HuggingFaceAlbertTokenizer(vocab=[(piece.piece, piece.score) for piece in model.pieces])


def each_part_alone(tokenizer, text):
    """Every part between masks tokenized as a text of its own, joined by the mask id."""
    ids = []
    for index, part in enumerate(to_text(text).split(MASK)):
        ids += [tokenizer.mask_id] * (index > 0) + tokenizer.encode(part)
    return ids


def test_graph_equals_python(encoder):
    texts = ODD + masked_sentences()
    graph = encoder.encode_graph(tf.constant(texts)).to_list()
    assert graph == [encoder.encode(text) for text in texts]


def test_python_equals_hugging_face_but_for_a_part_glued_to_a_mask(encoder, hugging_face):
    tokenizer = encoder.tokenizer
    pieces = {}
    for text in [t for t in ODD if isinstance(t, str)] + masked_sentences():
        theirs = hugging_face(text, add_special_tokens=False)["input_ids"]
        # Hugging Face tokenizes each part on its own (so would we, without the rule) ...
        assert theirs == each_part_alone(tokenizer, text), text
        ours = encoder.encode(text)
        if ours != theirs:
            pieces[text] = [tokenizer.id_to_piece(i) for i in ours], theirs
    # ... and the rule changes exactly the texts where a part is glued to a mask.
    assert list(pieces) == list(CONTINUED)
    for text, (ours, theirs) in pieces.items():
        expected_ours, theirs_after_mask = CONTINUED[text]
        assert ours == expected_ours
        after = theirs[theirs.index(tokenizer.mask_id) + 1 :]
        assert [tokenizer.id_to_piece(i) for i in after[:2]] == theirs_after_mask


def test_the_lowercase_and_broken_mask_are_text(encoder):
    mask_id = encoder.mask_id
    assert mask_id not in encoder.encode("[mask] x")
    assert encoder.encode("[[MASK]] [MASK").count(mask_id) == 1
    assert encoder.encode("[MASK][MASK]") == [mask_id, mask_id]


def test_filled_texts_graph_equals_python(encoder):
    texts = ODD + masked_sentences(40)
    tokenizer = encoder.tokenizer
    rng = np.random.default_rng(0)
    max_masks = max(to_text(t).count(MASK) for t in texts)
    ids = rng.integers(0, tokenizer.vocabulary_size, size=(len(texts), max_masks, 3))
    ids[:, :, 0] = tokenizer.piece_to_id("▁blue")
    ids[:, :, 1] = tokenizer.piece_to_id("s")
    pieces = np.vectorize(tokenizer.id_to_piece, otypes=[object])(ids)
    encoded = np.vectorize(str.encode, otypes=[object])(pieces)
    graph = encoder.filled_texts_graph(tf.constant(texts), tf.constant(encoded))
    for row, text in enumerate(texts):
        for mask in range(to_text(text).count(MASK)):
            for k in range(3):
                expected = encoder.filled_text(text, mask, pieces[row, mask, k])
                assert graph[row, mask, k].numpy().decode() == expected
    assert encoder.filled_text("The sky is [MASK].", 0, "▁blue") == "The sky is blue."
    assert encoder.filled_text("The sky is [MASK].", 0, "s") == "The sky is s."
    assert encoder.filled_text("[MASK] is blue", 0, "▁the") == "the is blue"
    assert encoder.filled_text("a[MASK] [MASK] b", 0, "▁x") == "a x [MASK] b"
    assert encoder.filled_text("a[MASK] [MASK] b", 1, "▁x") == "a[MASK] x b"


def test_packing_graph_equals_python(encoder):
    texts = [t for t in ODD if MASK.encode() in (t if isinstance(t, bytes) else t.encode())]
    rows = [encoder.encode(text) for text in texts]
    expected = pack(rows, encoder.tokenizer)
    packed = pack_graph(encoder.encode_graph(tf.constant(texts)), encoder.tokenizer)
    for name, value in packed.items():
        np.testing.assert_array_equal(value.numpy(), expected[name], err_msg=name)
    positions, num_masks = mask_positions_graph(
        packed["token_ids"], packed["padding_mask"], encoder.mask_id
    )
    np.testing.assert_array_equal(positions.numpy(), expected["mask_positions"])
    np.testing.assert_array_equal(num_masks.numpy(), [row.count(encoder.mask_id) for row in rows])


def test_wordpiece_graph_equals_python():
    encoder = MaskedTextEncoder(AlbertTokenizer(DATA / "zh" / "vocab_chinese.txt"))
    verses = (DATA / "zh" / "tang_poems_verses.txt").read_text(encoding="utf-8").split("\n\n")
    rng = random.Random(0)
    texts = []
    for verse in verses[:60]:
        characters = list(verse.strip())
        for index in rng.sample(range(len(characters)), 2):
            characters[index] = MASK
        texts.append("".join(characters))
    texts += ["北[MASK]欢迎你", "[MASK]s are", "café[MASK]2,000"]
    graph = encoder.encode_graph(tf.constant(texts)).to_list()
    assert graph == [encoder.encode(text) for text in texts]
    assert encoder.encode("北[MASK]欢迎你").count(encoder.mask_id) == 1
    assert encoder.filled_text("北[MASK]欢迎你", 0, "京") == "北京欢迎你"
    assert encoder.filled_text("[MASK]s are", 0, "##blue") == "blues are"
