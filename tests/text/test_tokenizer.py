"""AlbertTokenizer: fixture ids, parity with Hugging Face's sentencepiece recipe, bad input."""

import unicodedata

import numpy as np
import pytest
import sentencepiece as spm
import tensorflow as tf
from sentencepiece import sentencepiece_model_pb2

from keras_albert.text.tokenizer import AlbertTokenizer
from tests.text.text_data import (
    ALBERT_MODEL,
    DATA,
    HuggingFaceReference,
    assert_same_or_tied,
    load_austen_paragraphs,
    load_expected_tokenization,
    load_sst2_dev,
    lowercase_gap,
)

EXPECTED = load_expected_tokenization()

# Strings that stress each normalization step; none uses a character newer than Python's
# Unicode database (see test_graph_lowercase_gap_is_only_new_characters).
HARD_STRINGS = [
    "Café naïve façade résumé Ångström Crème brûlée Dvořák Łódź",
    "ﬁnancial ﬂow ﬀ ﬃ ﬄ Æsop œuvre Ĳssel",
    "ＡＢＣ１２３，ｈｅｌｌｏ！ Ｔｏｋｙｏ　２０２０ ｶﾀｶﾅ",
    "I ❤️ 🍕 👩‍👩‍👧 🇫🇷 😀😃 ✌🏽",
    "東京は日本の首都です。 北京欢迎你 한국어 텍스트",
    "مرحبا بالعالم ١٢٣, שלום עולם abc \u202eRTL override\u202c def",
    "zero\u200bwidth\u200cnon\u200djoiner\ufeffbom\u2060word",
    "bell\x07 esc\x1b nul\x00 del\x7f \x1c\x1d\x1e\x1f separators \x85 next",
    "line\u2028sep\u2029para non\u00a0breaking\u2009thin\u3000ideographic\u202fnarrow",
    "I was born in 92000, and this is falsé.",
    "1,000,000, 2, 3, a1, b22, c333, ٣, ٤٥, ², ①, ½, price $1,234.56, 1999,2000,",
    "𝐇𝐞𝐥𝐥𝐨 𝟏𝟐𝟑, ℌ ℍ ℃ ㎏ ㍿ ﷺ",
    "tab\tseparated\twords\nnew line\r\nwindows\n\n\n  leading and trailing  \t",
    "a" * 3000,
    "supercalifragilistic" * 150,
    "1234567890," * 80,
    "ΟΔΥΣΣΕΥΣ ΚΑΙ ΠΗΝΕΛΟΠΗ σοφός. İstanbul STRASSE Straße ǅemal ﬅ",
    "हिन्दी भाषा हिंदू ภาษาไทย ที่ ئۇيغۇرچە ትግርኛ co\u034fop x\u0e31y",
    "e\u0301 a\u0308\u0304 Z̤͈̥͓̞a̸͙͈l̵g̴o̶ ¨ ´ ¸ ˜",
    "``quoted'' text, don't '' `single` ''' ````",
    "<unk> [CLS] [SEP] [MASK] <pad> ▁▁ ▁x ⁇",
    "",
    "   ",
    "\n\t\r",
]


def graph_ids(tokenizer, texts):
    return tokenizer(tf.constant(texts)).to_list()


# ---------------------------------------------------------------------------------------------
# The fixture file: ids from transformers' and keras-hub's own test suites.


def _fixture_tokenizer(case):
    path = DATA / case["model"].replace("spiece.model", "30k-clean.model")
    if "keep_accents=True" in case["preprocessing"]:
        return AlbertTokenizer(path, strip_accents=False)
    if "no lowercasing" in case["preprocessing"]:
        return AlbertTokenizer(path, lowercase=False)
    return AlbertTokenizer(path)


@pytest.mark.parametrize("case", EXPECTED["cases"], ids=lambda case: case["input"][:30])
def test_fixture_cases_both_paths(case):
    tokenizer = _fixture_tokenizer(case)
    assert tokenizer.encode(case["input"]) == case["expected_ids"]
    assert graph_ids(tokenizer, [case["input"]]) == [case["expected_ids"]]
    if "expected_pieces" in case:
        assert tokenizer.encode_pieces(case["input"]) == case["expected_pieces"]


def test_fixture_transformers_integration_encoding_from_raw_text(albert_tokenizer):
    # The three raw (cased) sentences, packed and padded like transformers' integration test.
    expected = EXPECTED["transformers_integration_full_expected_encoding"]
    raw = [
        case["note"].split("raw input: ", 1)[1]
        for case in EXPECTED["cases"]
        if "test_tokenizer_integration" in case["source"]
    ]
    assert len(raw) == 3
    sequence_length = len(expected["input_ids"][0])
    packer = albert_tokenizer.packer(sequence_length)
    python_ids = [
        [albert_tokenizer.cls_id] + albert_tokenizer.encode(text) + [albert_tokenizer.sep_id]
        for text in raw
    ]
    for row, ids in zip(expected["input_ids"], python_ids, strict=True):
        assert row[: len(ids)] == ids
    packed = packer(albert_tokenizer(tf.constant(raw)))
    assert packed["token_ids"].numpy().tolist() == expected["input_ids"]
    assert packed["segment_ids"].numpy().tolist() == expected["token_type_ids"]
    assert packed["padding_mask"].numpy().astype(int).tolist() == expected["attention_mask"]


def test_fixture_keras_hub_classifier_preprocessor():
    [(description, expected)] = [
        item
        for item in EXPECTED["keras_hub_preprocessor_expectations"].items()
        if item[0].startswith("AlbertTextClassifierPreprocessor")
    ]
    tokenizer = AlbertTokenizer(DATA / "albert_test_vocab.spm")
    packed = tokenizer.packer(8)(tokenizer(tf.constant(["the quick brown fox"])))
    assert packed["token_ids"].numpy().tolist() == expected["token_ids"], description
    assert packed["segment_ids"].numpy().tolist() == expected["segment_ids"]
    assert packed["padding_mask"].numpy().astype(int).tolist() == expected["padding_mask"]


def test_model_facts_match_fixture(albert_tokenizer):
    facts = EXPECTED["models"]["spiece.model"]
    assert albert_tokenizer.vocabulary_size == facts["pieces"]
    special = facts["special"]
    assert (
        albert_tokenizer.pad_id,
        albert_tokenizer.unk_id,
        albert_tokenizer.cls_id,
        albert_tokenizer.sep_id,
        albert_tokenizer.mask_id,
    ) == (special["<pad>"], special["<unk>"], special["[CLS]"], special["[SEP]"], special["[MASK]"])
    assert albert_tokenizer.id_to_piece(facts["pieces"] - 1) == facts["last_piece"]


# ---------------------------------------------------------------------------------------------
# Parity with Hugging Face's sentencepiece-based recipe on real text.


def test_sst2_dev_parity_with_hugging_face(albert_tokenizer_hf_quotes, hf_reference):
    sentences = load_sst2_dev()
    assert len(sentences) == 872
    expected = [hf_reference.encode(text) for text in sentences]
    assert [albert_tokenizer_hf_quotes.encode(text) for text in sentences] == expected
    assert graph_ids(albert_tokenizer_hf_quotes, sentences) == expected


def test_sst2_dev_original_recipe_differs_from_hugging_face_only_on_quotes(
    albert_tokenizer, hf_reference
):
    # The original ALBERT recipe keeps "``" and "''" (they become <unk> pieces); Hugging Face
    # turns them into '"'. Every other sentence must tokenize identically.
    sentences = load_sst2_dev()
    python_ids = [albert_tokenizer.encode(text) for text in sentences]
    assert graph_ids(albert_tokenizer, sentences) == python_ids
    differing = {
        text
        for text, ids in zip(sentences, python_ids, strict=True)
        if ids != hf_reference.encode(text)
    }
    with_quotes = {text for text in sentences if "``" in text or "''" in text}
    assert differing == with_quotes
    assert len(with_quotes) == 15


def test_austen_paragraphs_parity_with_hugging_face(albert_tokenizer, hf_reference):
    paragraphs = load_austen_paragraphs()
    assert len(paragraphs) == 413
    assert sum("\n" in paragraph for paragraph in paragraphs) > 300  # line wraps are kept
    expected = [hf_reference.encode(text) for text in paragraphs]
    assert [albert_tokenizer.encode(text) for text in paragraphs] == expected
    assert graph_ids(albert_tokenizer, paragraphs) == expected


def test_hard_strings_parity_with_hugging_face(albert_tokenizer_hf_quotes, hf_reference):
    expected = [hf_reference.encode(text) for text in HARD_STRINGS]
    for text, ids in zip(HARD_STRINGS, expected, strict=True):
        assert albert_tokenizer_hf_quotes.encode(text) == ids, repr(text)
    assert graph_ids(albert_tokenizer_hf_quotes, HARD_STRINGS) == expected


def test_hard_strings_both_paths_equal_without_lowercasing_or_accent_stripping():
    for options in ({"lowercase": False}, {"strip_accents": False}):
        tokenizer = AlbertTokenizer(ALBERT_MODEL, **options)
        reference = HuggingFaceReference(
            ALBERT_MODEL,
            lowercase=options.get("lowercase", True),
            keep_accents=not options.get("strip_accents", True),
        )
        quote_free = [text for text in HARD_STRINGS if "``" not in text and "''" not in text]
        expected = [reference.encode(text) for text in quote_free]
        assert [tokenizer.encode(text) for text in quote_free] == expected, options
        assert graph_ids(tokenizer, quote_free) == expected, options


def test_digit_comma_resplit_examples(albert_tokenizer):
    # Pieces ending in "<digit>," are re-encoded without the comma; checked against a second
    # SentencePiece run by hand for one case, and the rule holds for every output piece.
    pieces = albert_tokenizer.encode_pieces("in 92000, 1999,2000, x")
    assert pieces[:4] == ["▁in", "▁9", "2000", ","]
    for piece in albert_tokenizer.encode_pieces(HARD_STRINGS[10] + " " + HARD_STRINGS[15]):
        assert not (len(piece) > 1 and piece[-1] == "," and piece[-2].isdigit()), piece


def test_graph_path_keeps_shape_of_input(albert_tokenizer):
    texts = [["Hello there.", "92000, ok"], ["", "Café"]]
    expected = [[albert_tokenizer.encode(text) for text in row] for row in texts]
    assert albert_tokenizer(tf.constant(texts)).to_list() == expected
    ragged = tf.ragged.constant([["Hello there."], ["92000, ok", "", "Café"]])
    result = albert_tokenizer(ragged)
    assert result.to_list() == [[expected[0][0]], [expected[0][1], [], expected[1][1]]]
    cube = albert_tokenizer(tf.constant([texts, texts]))  # (2, 2, 2) -> (2, 2, 2, None)
    assert cube.to_list() == [expected, expected]
    scalar = albert_tokenizer(tf.constant("Hello there."))
    assert scalar.dtype == tf.int32 and scalar.numpy().tolist() == expected[0][0]


def test_graph_path_in_tf_data_and_tf_function(albert_tokenizer):
    sentences = load_sst2_dev()[:64]
    dataset = tf.data.Dataset.from_tensor_slices(sentences).batch(16).map(albert_tokenizer)
    result = [row for batch in dataset for row in batch.to_list()]
    assert result == [albert_tokenizer.encode(text) for text in sentences]
    function = tf.function(albert_tokenizer.__call__)
    assert function(tf.constant(sentences[:3])).to_list() == result[:3]


def test_graph_lowercase_gap_is_only_new_characters():
    # tf.strings.lower lacks the lowercase mappings Unicode 14 added (Python 3.11 has them):
    # the one known difference between the paths. It must stay that small.
    gap = lowercase_gap()
    assert len(gap) <= 40
    assert all(0x2C00 <= ord(c) <= 0x2C5F or ord(c) >= 0xA700 for c in gap)


def test_normalization_of_every_character_matches_python(albert_tokenizer, hf_reference):
    # Each assigned character between two letters, through the graph normalization, the Python
    # one and Hugging Face's: catches any character class or op that differs (e.g. dropping
    # the `Mn` category instead of combining characters would differ on 1,000+ characters).
    gap = lowercase_gap()
    characters = [
        chr(c)
        for c in range(0x110000)
        if unicodedata.category(chr(c)) not in ("Cn", "Cs") and chr(c) not in gap
    ]
    texts = [f"A{c}b" for c in characters]
    graph = albert_tokenizer.normalize_graph(tf.constant(texts)).numpy()
    python = [albert_tokenizer.normalize(text) for text in texts]
    hugging_face = [hf_reference.tokenizer.preprocess_text(text) for text in texts]
    assert python == hugging_face
    mismatches = [text for text, g, p in zip(texts, graph, python, strict=True) if g.decode() != p]
    assert mismatches == []


# ---------------------------------------------------------------------------------------------
# Vocabulary API.


def test_vocabulary_api(albert_tokenizer):
    tokenizer = albert_tokenizer
    processor = spm.SentencePieceProcessor(model_file=str(ALBERT_MODEL))
    assert tokenizer.vocabulary_size == processor.get_piece_size() == 30000
    for token_id in (0, 1, 2, 3, 4, 5, 13, 561, 29999):
        piece = processor.id_to_piece(token_id)
        assert tokenizer.id_to_piece(token_id) == piece
        assert tokenizer.piece_to_id(piece) == token_id
    assert tokenizer.piece_to_id("no-such-piece") == tokenizer.unk_id
    assert tokenizer.special_ids == {0, 2, 3, 4}
    assert tokenizer.unk_id not in tokenizer.special_ids
    text = "the quick brown fox jumps over the lazy dog, 92000, times."
    assert tokenizer.decode(tokenizer.encode(text)) == text
    assert tokenizer.decode([2, 14, 2231, 3, 0, 0]) == "the quick"
    with pytest.raises(ValueError, match="30000"):
        tokenizer.id_to_piece(30000)
    with pytest.raises(ValueError, match="-1"):
        tokenizer.decode([5, -1])


def test_is_word_start(albert_tokenizer):
    tokenizer = albert_tokenizer
    ids = tokenizer.encode("unbelievable, (really) 92000, things")
    pieces = [tokenizer.id_to_piece(i) for i in ids]
    starts = [tokenizer.is_word_start(i) for i in ids]
    # "▁"-pieces start words, continuation pieces do not, single punctuation pieces do.
    for piece, start in zip(pieces, starts, strict=True):
        expected = piece.startswith("▁") or piece in {",", "(", ")", "."}
        assert start == expected, piece
    assert any(not start for start in starts)
    assert tokenizer.is_word_start(tokenizer.pad_id) and tokenizer.is_word_start(tokenizer.unk_id)
    assert not tokenizer.is_word_start(tokenizer.cls_id)
    table = tokenizer.word_start_table
    assert table.shape == (30000,) and table.dtype == bool
    assert [bool(table[i]) for i in ids] == starts


# ---------------------------------------------------------------------------------------------
# Bad input and bad model files.

INVALID_UTF8 = [
    b"ab\xffcd",
    b"truncated \xe2\x82",
    b"surrogate x\xed\xa0\x80y",
    b"overlong \xc0\xaf z",
    b"\x80\x80\x80 continuation bytes, 92000,",
    b"Caf\xe9 latin-1",
]


def test_invalid_utf8_is_replaced_identically_in_both_paths(albert_tokenizer):
    # Defined behaviour: every maximal invalid subsequence becomes U+FFFD, then the recipe runs.
    for data in INVALID_UTF8:
        assert "\ufffd" in albert_tokenizer.normalize(data)
        assert albert_tokenizer.encode(data) == albert_tokenizer.encode(
            data.decode("utf-8", errors="replace")
        )
    python_ids = [albert_tokenizer.encode(data) for data in INVALID_UTF8]
    assert graph_ids(albert_tokenizer, INVALID_UTF8) == python_ids
    # A lone surrogate in a str is the same as its three UTF-8-like bytes.
    assert albert_tokenizer.encode("x\ud800y") == albert_tokenizer.encode(b"x\xed\xa0\x80y")


def test_wrong_input_types(albert_tokenizer):
    with pytest.raises(TypeError, match="int"):
        albert_tokenizer.encode(123)
    with pytest.raises(TypeError, match="int32"):
        albert_tokenizer(tf.constant([1, 2]))


def test_missing_model_file(tmp_path):
    path = tmp_path / "nowhere.model"
    with pytest.raises(FileNotFoundError, match="nowhere.model"):
        AlbertTokenizer(path)
    with pytest.raises(TypeError, match="proto"):
        AlbertTokenizer(42)


EXPECTED_VOCABULARY = (
    "`vocabulary` must be a SentencePiece model (a binary .model file) or a WordPiece "
    "vocabulary (UTF-8 text, one token per line, with [PAD], [UNK], [CLS], [SEP] and [MASK]). "
)


@pytest.mark.parametrize(
    "content, why",
    [
        (b"", "an empty file"),
        (b"not a sentencepiece model", "text with none of the special tokens of a WordPiece"),
        (ALBERT_MODEL.read_bytes()[:5000], "a binary file that SentencePiece cannot read"),
    ],
)
def test_corrupt_model_file(tmp_path, content, why):
    path = tmp_path / "corrupt.model"
    path.write_bytes(content)
    with pytest.raises(ValueError) as error:
        AlbertTokenizer(path)
    assert str(error.value).startswith(f"{EXPECTED_VOCABULARY}Received: vocabulary='{path}', {why}")
    with pytest.raises(ValueError, match=f"Received: vocabulary='<{len(content)} bytes>', {why}"):
        AlbertTokenizer(content)
    with pytest.raises(ValueError, match="Could not load a SentencePiece model"):
        AlbertTokenizer(path, wordpiece=False)  # asked for SentencePiece: its own error


def text_vocabulary(path) -> None:
    """SentencePiece's `.vocab` of the 30k model: a piece and its score per line."""
    processor = spm.SentencePieceProcessor(model_file=str(ALBERT_MODEL))
    lines = [
        f"{processor.id_to_piece(i)}\t{processor.get_score(i):g}"
        for i in range(processor.get_piece_size())
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_a_sentencepiece_text_vocabulary_names_the_model_beside_it(tmp_path):
    text_vocabulary(tmp_path / "30k-clean.vocab")
    with pytest.raises(ValueError) as error:
        AlbertTokenizer(tmp_path / "30k-clean.vocab")
    assert str(error.value) == (
        f"{EXPECTED_VOCABULARY}Received: vocabulary='{tmp_path / '30k-clean.vocab'}', "
        "SentencePiece's text vocabulary (a piece and its score per line), not its model: give "
        "the .model file SentencePiece wrote with it"
    )
    (tmp_path / "30k-clean.model").write_bytes(ALBERT_MODEL.read_bytes())
    with pytest.raises(ValueError) as error:
        AlbertTokenizer(tmp_path / "30k-clean.vocab")
    assert str(error.value).endswith(
        f"not its model: did you mean the .model beside it, '{tmp_path / '30k-clean.model'}'?"
    )


def test_a_text_file_or_a_directory_is_no_vocabulary(tmp_path):
    vocabulary = tmp_path / "notes.txt"
    vocabulary.write_text("the\nquick brown fox\n")
    with pytest.raises(ValueError) as error:
        AlbertTokenizer(vocabulary)
    assert str(error.value) == (
        f"{EXPECTED_VOCABULARY}Received: vocabulary='{vocabulary}', text with none of the "
        "special tokens of a WordPiece vocabulary"
    )
    with pytest.raises(ValueError) as error:
        AlbertTokenizer(tmp_path)
    assert str(error.value) == (
        "`proto` (the SentencePiece model or WordPiece vocabulary) must be a file, not a "
        f"directory. Received: proto='{tmp_path}'"
    )


@pytest.mark.parametrize("missing", ["[CLS]", "[SEP]", "[MASK]", "<pad>"])
def test_model_without_special_piece(missing):
    proto = sentencepiece_model_pb2.ModelProto()
    proto.ParseFromString(ALBERT_MODEL.read_bytes())
    for piece in proto.pieces:
        if piece.piece == missing:
            piece.piece = "[RENAMED]"
    if missing == "<pad>":
        proto.trainer_spec.pad_piece = "[RENAMED]"
    with pytest.raises(
        ValueError, match=f"lacks the special piece '{missing}'".replace("[", r"\[")
    ):
        AlbertTokenizer(proto.SerializeToString())


def test_constructor_validation():
    with pytest.raises(TypeError, match="lowercase"):
        AlbertTokenizer(ALBERT_MODEL, lowercase="yes")


def test_model_without_comma_piece_both_paths_agree():
    # keras-hub's 12-piece model knows neither digits nor ",": "9," is one <unk> piece that
    # the re-split turns into two; both paths must do it the same way.
    tokenizer = AlbertTokenizer(DATA / "albert_test_vocab.spm")
    reference = HuggingFaceReference(DATA / "albert_test_vocab.spm")
    texts = ["the quick 9, fox", "92000, the earth, is round 1,2,", "Ünïcode 3,"]
    expected = [reference.encode(text) for text in texts]
    assert [tokenizer.encode(text) for text in texts] == expected
    assert graph_ids(tokenizer, texts) == expected
    assert expected[0] == [5, 10, 1, 1, 8]


def test_resplit_table_equals_resplit_on_piece_text():
    # The graph re-splits "<digit>," pieces by a per-id table when the model has a "," piece,
    # and on piece text otherwise; force the piece-text way on the real model and compare.
    import tensorflow_text as tf_text

    by_table = AlbertTokenizer(ALBERT_MODEL)
    by_text = AlbertTokenizer(ALBERT_MODEL)
    assert by_table._resplit_table is not None
    by_text._resplit_table = None
    by_text._sentencepiece = tf_text.SentencepieceTokenizer(
        model=by_text.serialized_model, out_type=tf.string
    )
    numbers = ["1,2, 33,444, 92000, ▁5, x7, 8,,9, ٣, ²,", "1999,2000, and 12,"]
    texts = load_sst2_dev()[:200] + HARD_STRINGS + numbers
    expected = [by_table.encode(text) for text in texts]
    assert graph_ids(by_text, texts) == expected
    assert_same_or_tied(by_table, texts, graph_ids(by_table, texts), expected)
    resplit_rows = np.diff(by_table._resplit_table[1]) > 1
    assert resplit_rows.sum() > 100  # pieces like "0," and "▁1," exist in the real vocabulary
