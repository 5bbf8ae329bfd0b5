"""with_albert_normalization: a SentencePiece model that lowercases and strips accents itself.

A tokenizer that runs SentencePiece alone (TF Text's, inside keras-hub's `AlbertTokenizer`) on
the rewritten model must give the pieces of `AlbertTokenizer` before its digit-comma re-split:
every character between two letters, sequences the model composes, and hard strings.
"""

import functools

import pytest
import sentencepiece as spm
import tensorflow as tf
import tensorflow_text as tf_text
from sentencepiece import sentencepiece_model_pb2

from keras_albert.text.normalization import normalize_text
from keras_albert.text.sentencepiece_model import with_albert_normalization
from keras_albert.text.tokenizer import AlbertTokenizer
from tests.text.test_tokenizer import HARD_STRINGS
from tests.text.text_data import ALBERT_MODEL, load_sst2_dev

NORMALIZATIONS = [(True, True), (True, False), (False, True), (False, False)]
# Capitals and accents: letters with combining marks (which the model's own map composes; "ǰ"
# and "ẗ" have no capital that composes), letters whose lowercase or decomposition is more than
# one character.
CASED_AND_ACCENTED = [
    "E\u0301cole",
    "J\u030cARO T\u0308",
    "A\u030a\u0301 Ä\u0323",
    "İstanbul ǅ\u0308 Ǆ ß ẞ",
    "A Charming Journey.",
]
# ... and Hangul jamo, which the model's own map composes too.
SEQUENCES = CASED_AND_ACCENTED + ["\u1100\u1161\u11a8 \u1100\u1161"]


@functools.cache
def rewritten(lowercase: bool, strip_accents: bool) -> bytes:
    return with_albert_normalization(ALBERT_MODEL.read_bytes(), lowercase, strip_accents)


def sentencepiece_alone(model: bytes, texts: list[str]) -> list[list[str]]:
    """Pieces as TF Text's SentencePiece gives them (what keras-hub's tokenizer runs)."""
    tokenizer = tf_text.SentencepieceTokenizer(model=model, out_type=tf.string)
    return [[piece.decode() for piece in row] for row in tokenizer.tokenize(texts).to_list()]


def ours_before_the_resplit(tokenizer: AlbertTokenizer, texts: list[str]) -> list[list[str]]:
    return [tokenizer._processor.encode(tokenizer.normalize(text), out_type=str) for text in texts]


def test_every_character_between_two_letters_normalizes_as_ours():
    released = spm.SentencePieceNormalizer(model_file=str(ALBERT_MODEL))
    model = spm.SentencePieceNormalizer(model_proto=rewritten(True, True))
    differ = [
        hex(code_point)
        for code_point in range(1, 0x110000)
        if not 0xD800 <= code_point <= 0xDFFF
        and model.Normalize(f"a{chr(code_point)}B")
        != released.Normalize(normalize_text(f"a{chr(code_point)}B"))
    ]
    assert differ == []


@pytest.mark.parametrize("lowercase, strip_accents", NORMALIZATIONS)
def test_sentencepiece_alone_gives_our_pieces(lowercase, strip_accents):
    # A capital sigma lowercases by its neighbours: test_what_the_map_cannot_say.
    texts = [text for text in HARD_STRINGS if "Σ" not in text] + SEQUENCES + load_sst2_dev()
    tokenizer = AlbertTokenizer(ALBERT_MODEL, lowercase=lowercase, strip_accents=strip_accents)
    theirs = sentencepiece_alone(rewritten(lowercase, strip_accents), texts)
    ours = ours_before_the_resplit(tokenizer, texts)
    assert [t for t, a, b in zip(texts, theirs, ours, strict=True) if a != b] == []


def test_the_released_model_alone_does_not():
    tokenizer = AlbertTokenizer(ALBERT_MODEL)
    theirs = sentencepiece_alone(ALBERT_MODEL.read_bytes(), CASED_AND_ACCENTED)
    ours = ours_before_the_resplit(tokenizer, CASED_AND_ACCENTED)
    assert all(a != b for a, b in zip(theirs, ours, strict=True))


def test_what_the_map_cannot_say():
    # The digit-comma re-split follows SentencePiece; `str.lower` gives a final sigma.
    tokenizer = AlbertTokenizer(ALBERT_MODEL)
    model = rewritten(True, True)
    assert sentencepiece_alone(model, ["In 1999, the"]) == [["▁in", "▁1999,", "▁the"]]
    assert tokenizer.encode_pieces("In 1999, the") == ["▁in", "▁1999", ",", "▁the"]
    # (Whether the normalizer alone adds the dummy-prefix "▁" differs between sentencepiece
    # 0.2.2 and 0.2.3: compared without it.)
    released = spm.SentencePieceNormalizer(model_file=str(ALBERT_MODEL))
    assert released.Normalize(normalize_text("ΟΔΟΣ")).lstrip("▁") == "οδος"
    assert spm.SentencePieceNormalizer(model_proto=model).Normalize("ΟΔΟΣ").lstrip("▁") == "οδοσ"


def test_the_rest_of_the_model_is_unchanged():
    before = sentencepiece_model_pb2.ModelProto()
    before.ParseFromString(ALBERT_MODEL.read_bytes())
    after = sentencepiece_model_pb2.ModelProto()
    after.ParseFromString(rewritten(True, False))
    assert after.normalizer_spec.name == "nmt_nfkc+albert+lowercase"
    assert after.normalizer_spec.precompiled_charsmap != before.normalizer_spec.precompiled_charsmap
    for proto in (before, after):
        proto.normalizer_spec.ClearField("name")
        proto.normalizer_spec.ClearField("precompiled_charsmap")
    assert after == before
