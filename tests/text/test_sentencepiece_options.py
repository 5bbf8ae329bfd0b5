"""SentencePiece normalization options, `lowercase` and `strip_accents` (Hugging Face's
`do_lower_case` and `keep_accents=not strip_accents`): both paths agree with Hugging Face's
`AlbertTokenizer` on scripts where accents and case carry meaning."""

import pytest
import tensorflow as tf
from sentencepiece import sentencepiece_model_pb2
from transformers import AlbertTokenizer as HuggingFaceAlbertTokenizer

from keras_albert.text.tokenizer import AlbertTokenizer
from tests.text.text_data import ALBERT_MODEL

TEXTS = {
    "devanagari": "हिन्दी भाषा हिंदू क़िला, क़िला",
    "vietnamese": "Tiếng Việt có dấu: Phở Hà Nội, Nguyễn Trãi",
    "hebrew_niqqud": "שָׁלוֹם עוֹלָם בְּרֵאשִׁית",
    "japanese_dakuten": "でで デパート がぎぐげご ぱ て\u3099",
    "cased_english": "The Quick BROWN Fox, Mr. McDonald's iPhone; born in 92000, falsé.",
}
OPTIONS = [(lowercase, keep) for lowercase in (True, False) for keep in (False, True)]


@pytest.fixture(scope="module")
def vocabulary():
    model = sentencepiece_model_pb2.ModelProto()
    model.ParseFromString(ALBERT_MODEL.read_bytes())
    return [(piece.piece, piece.score) for piece in model.pieces]


def encode_all(lowercase, keep_accents, vocabulary):
    tokenizer = AlbertTokenizer(ALBERT_MODEL, lowercase=lowercase, strip_accents=not keep_accents)
    reference = HuggingFaceAlbertTokenizer(
        vocab=vocabulary, do_lower_case=lowercase, keep_accents=keep_accents
    )
    texts = list(TEXTS.values())
    expected = reference(texts, add_special_tokens=False)["input_ids"]
    python = [tokenizer.encode(text) for text in texts]
    graph = tokenizer(tf.constant(texts)).to_list()
    return expected, python, graph


def normalize_both(lowercase, keep_accents):
    tokenizer = AlbertTokenizer(ALBERT_MODEL, lowercase=lowercase, strip_accents=not keep_accents)
    texts = list(TEXTS.values())
    graph = [text.decode() for text in tokenizer.normalize_graph(tf.constant(texts)).numpy()]
    return [tokenizer.normalize(text) for text in texts], graph


@pytest.mark.parametrize(("lowercase", "keep_accents"), OPTIONS)
def test_both_paths_match_hugging_face(lowercase, keep_accents, vocabulary):
    expected, python, graph = encode_all(lowercase, keep_accents, vocabulary)
    assert python == expected
    assert graph == python
    python_text, graph_text = normalize_both(lowercase, keep_accents)
    assert graph_text == python_text


def test_each_option_changes_what_it_should(vocabulary):
    ids = {options: encode_all(*options, vocabulary)[1] for options in OPTIONS}
    names = list(TEXTS)
    english = names.index("cased_english")
    vietnamese = names.index("vietnamese")
    hebrew = names.index("hebrew_niqqud")
    texts = {options: normalize_both(*options)[0] for options in OPTIONS}
    # Lowercasing changes cased English, not Hebrew; stripping accents changes Vietnamese and
    # drops the niqqud (Hebrew is <unk> to this model, so only the text shows it).
    for keep in (False, True):
        assert ids[(True, keep)][english] != ids[(False, keep)][english]
        assert texts[(True, keep)][hebrew] == texts[(False, keep)][hebrew]
    for lowercase in (True, False):
        assert ids[(lowercase, False)][vietnamese] != ids[(lowercase, True)][vietnamese]
        assert texts[(lowercase, False)][hebrew] == "שלום עולם בראשית"
        assert texts[(lowercase, True)][hebrew] == TEXTS["hebrew_niqqud"]
    # The defaults are the original's: lowercase, accents stripped.
    default = AlbertTokenizer(ALBERT_MODEL)
    assert [default.encode(text) for text in TEXTS.values()] == ids[(True, False)]
