"""AlbertTokenizer with a WordPiece vocabulary (the Chinese ALBERT release's vocab_chinese.txt):
parity with Hugging Face's BertTokenizer, the graph path against the Python path, packing,
whole-word starts, telling a vocabulary from a SentencePiece model, and a SavedModel."""

import csv
import unicodedata

import pytest
import tensorflow as tf
from transformers import BertTokenizer

from keras_albert.text.tokenizer import AlbertTokenizer
from keras_albert.text.wordpiece import MAX_CHARACTERS_PER_WORD, parse_vocabulary
from keras_albert.text.wordpiece_graph import Wordpiece
from tests.text.text_data import ALBERT_MODEL, DATA

VOCABULARY = DATA / "zh" / "vocab_chinese.txt"

HARD_STRINGS = [
    "ＡＢＣ１２３，ｈｅｌｌｏ！ｶﾀｶﾅ　全角空格",
    "北京欢迎你 Beijing 2008年 welcome! 東京は日本の首都です。",
    "한국어 텍스트, 서울특별시",
    "が ぎ ぐ げ ご ぱ ぴ で か\u3099 ハ\u309a パ",
    "I ❤️ 🍕 👩‍👩‍👧 🇫🇷 😀😃 ✌🏽",
    "bell\x07 esc\x1b[32m colour\x1b[m nul\x00 del\x7f \x1c\x1d\x1e\x1f \x85 next",
    "replacement\ufffdcharacter \ufffd\ufffd zero\u200bwidth joiner\u200d bom\ufeffx",
    "line\u2028sep\u2029para non\u00a0breaking\u2009thin\u3000ideographic\u202fnarrow\tt\r\n",
    "x" * MAX_CHARACTERS_PER_WORD + " " + "y" * (MAX_CHARACTERS_PER_WORD + 1) + " ok",
    "中" + "a" * 150 + " " + "abc" * 70,
    "Crème Brûlée, Café naïve façade résumé Ångström Dvořák Łódź İstanbul",
    "省略号…… 破折号—— 引号“好”「好」『好』 书名号《红楼梦》 间隔号·",
    "~!@#$%^&*()_+`-=[]{}|;':\",./<>? \\ ¿¡ § ¶ • ° ±",
    "mixed中文English混合123数字abc",
    "\uf900\uf901 \U0002f800 \u4e00\u9fff \u3400 \U00020000 \U0002a700 兀",
    "ﬁnancial ﬂow Æsop œuvre ß STRASSE ǅemal",
    "हिन्दी भाषा ภาษาไทย مرحبا بالعالم שָׁלוֹם",
    "e\u0301 a\u0308\u0304 Z̤͈̥͓̞a̸͙͈l̵g̴o̶ ¨ ´ ¸ ˜",
    "[CLS] [SEP] [MASK] [UNK] [PAD] ##ing ## #",
    "",
    "   ",
    "\n\t\r",
]


def load_reviews() -> list[str]:
    with open(DATA / "zh" / "chnsenticorp_htl_first300.csv", encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["label", "review"]
    return [review for _, review in rows[1:]]


def load_poems() -> list[str]:
    text = (DATA / "zh" / "tang_poems_verses.txt").read_text(encoding="utf-8")
    return [poem for poem in text.split("\n\n") if poem.strip()]


def hugging_face_wordpiece() -> BertTokenizer:
    """HF's BERT tokenizer (fast: `tokenizers`) on the Chinese vocabulary, lower-casing as the
    Chinese releases do."""
    reference = BertTokenizer(str(VOCABULARY), do_lower_case=True)
    # Hugging Face's WordPiece gives [UNK] for words over 100 characters; the original
    # (google-research/albert and BERT `WordpieceTokenizer`) over 200.
    reference.backend_tokenizer.model.max_input_chars_per_word = MAX_CHARACTERS_PER_WORD
    return reference


@pytest.fixture(scope="module")
def tokenizer():
    return AlbertTokenizer(VOCABULARY)


@pytest.fixture(scope="module")
def bert_reference():
    return hugging_face_wordpiece()


def reference_ids(reference, texts) -> list[list[int]]:
    # The original has no added tokens: "[CLS]" in the text is "[", "cl", "##s", "]".
    return reference(list(texts), add_special_tokens=False, split_special_tokens=True)["input_ids"]


def graph_ids(tokenizer, texts) -> list[list[int]]:
    return tokenizer(tf.constant(texts)).to_list()


# ---------------------------------------------------------------------------------------------
# The vocabulary.


def test_vocabulary_facts_match_hugging_face(tokenizer, bert_reference):
    assert tokenizer.wordpiece
    assert tokenizer.vocabulary_size == bert_reference.vocab_size == 21128
    assert tokenizer.pad_id == bert_reference.pad_token_id
    assert tokenizer.unk_id == bert_reference.unk_token_id
    assert tokenizer.cls_id == bert_reference.cls_token_id
    assert tokenizer.sep_id == bert_reference.sep_token_id
    assert tokenizer.mask_id == bert_reference.mask_token_id
    assert tokenizer.special_ids == {
        tokenizer.pad_id,
        tokenizer.cls_id,
        tokenizer.sep_id,
        tokenizer.mask_id,
    }
    # Line 343 is U+2028: the original's `load_vocab` makes a blank line " ", Hugging Face's
    # "" (neither can be a word); every other token is the same ("##" + U+2028 is "##").
    tokens = [tokenizer.id_to_piece(i) for i in range(tokenizer.vocabulary_size)]
    hugging_face = bert_reference.convert_ids_to_tokens(list(range(tokenizer.vocabulary_size)))
    differing = [i for i, (a, b) in enumerate(zip(tokens, hugging_face, strict=True)) if a != b]
    assert differing == [343]
    assert (tokens[343], tokens[13502]) == (" ", "##")
    for token_id in (0, 100, 101, 102, 103, 704, 8024, 21127):
        assert tokenizer.piece_to_id(tokens[token_id]) == token_id
    assert tokenizer.piece_to_id("no-such-token") == tokenizer.unk_id


def test_parse_vocabulary_as_the_original_load_vocab():
    # First word of a line, " " for a blank one, a repeated token takes no id, CRLF stripped.
    data = b"[PAD]\r\n\nfoo bar\n##x\nfoo\n  \nlast"
    assert parse_vocabulary(data) == ["[PAD]", " ", "foo", "##x", "last"]
    assert parse_vocabulary(b"a\nb\n") == ["a", "b"]


def test_word_starts_from_the_vocabulary(tokenizer, bert_reference):
    table = tokenizer.word_start_table
    tokens = bert_reference.convert_ids_to_tokens(list(range(tokenizer.vocabulary_size)))
    assert table.tolist() == [not token.startswith("##") for token in tokens]
    ids = tokenizer.encode("unbelievable北京 résumé")
    assert [tokenizer.is_word_start(i) for i in ids] == [
        not tokenizer.id_to_piece(i).startswith("##") for i in ids
    ]
    assert not all(tokenizer.is_word_start(i) for i in ids)


# ---------------------------------------------------------------------------------------------
# Parity with Hugging Face's BertTokenizer, both paths.


def test_reviews_parity_both_paths(tokenizer, bert_reference):
    reviews = load_reviews()
    assert len(reviews) == 300
    expected = reference_ids(bert_reference, reviews)
    python = [tokenizer.encode(review) for review in reviews]
    assert python == expected
    assert graph_ids(tokenizer, reviews) == python
    assert sum(tokenizer.unk_id in ids for ids in python) > 0  # unknown characters occur


def test_poems_parity_both_paths(tokenizer, bert_reference):
    poems = load_poems()
    assert len(poems) >= 300
    # Verses only (the ANSI colour escapes real text carries are among HARD_STRINGS).
    assert all("，" in poem and "。" in poem for poem in poems)
    expected = reference_ids(bert_reference, poems)
    python = [tokenizer.encode(poem) for poem in poems]
    assert python == expected
    assert graph_ids(tokenizer, poems) == python


def test_hard_strings_parity_both_paths(tokenizer, bert_reference):
    expected = reference_ids(bert_reference, HARD_STRINGS)
    for text, ids in zip(HARD_STRINGS, expected, strict=True):
        assert tokenizer.encode(text) == ids, repr(text)
    assert graph_ids(tokenizer, HARD_STRINGS) == expected
    # Invalid UTF-8 is dropped, as the original's decode(errors="ignore") does.
    invalid = [b"ab\xffcd \xe2\x82 \xed\xa0\x80x", b"\x80\x80 \xe4\xb8\xad"]
    expected = [
        bert_reference.encode(text.decode("utf-8", "ignore"), add_special_tokens=False)
        for text in invalid
    ]
    assert [tokenizer.encode(text) for text in invalid] == expected
    assert graph_ids(tokenizer, invalid) == expected


def test_normalize_both_paths_and_encoding_it_again(tokenizer):
    # `normalize` is the words of the basic tokenization joined by spaces; encoding it again
    # gives the same ids (the multiple-choice data fills blanks in normalized text).
    texts = HARD_STRINGS + load_reviews()[:50]
    python = [tokenizer.normalize(text) for text in texts]
    graph = tokenizer.normalize_graph(tf.constant(texts)).numpy()
    assert [text.decode() for text in graph] == python
    assert [tokenizer.encode(text) for text in python] == [tokenizer.encode(t) for t in texts]
    assert tokenizer.normalize("ＡＢＣ，北京Crème") == "ａｂｃ ， 北 京 creme"


def test_word_length_limit_is_the_originals(tokenizer):
    limit = "x" * MAX_CHARACTERS_PER_WORD
    assert tokenizer.encode(limit + "x") == [tokenizer.unk_id]
    pieces = tokenizer.encode_pieces(limit)
    assert tokenizer.unk_id not in tokenizer.encode(limit)
    assert "".join(piece.removeprefix("##") for piece in pieces) == limit
    assert graph_ids(tokenizer, [limit, limit + "x"]) == [
        tokenizer.encode(limit),
        [tokenizer.unk_id],
    ]


def test_greek_final_sigma_as_python_lowercases(tokenizer, bert_reference):
    # The original lowercases with `str.lower`, which writes a word-final sigma as "ς";
    # Hugging Face's Rust normalizer lowercases character by character ("σ"). On text that is
    # already lowercase they agree.
    text = "ΟΔΥΣΣΕΥΣ ΚΑΙ ΠΗΝΕΛΟΠΗΣ. ΑΣ.Β"
    expected = bert_reference.encode(text.lower(), add_special_tokens=False)
    assert tokenizer.encode(text) == expected
    assert graph_ids(tokenizer, [text]) == [expected]
    assert "##ς" in tokenizer.encode_pieces(text)


@pytest.mark.slow  # 1.1M characters through both paths: ≈ 12 s (CI runs it)
def test_every_character_both_paths_equal(tokenizer):
    # Each character between two letters, the groups joined by spaces into chunks: the graph
    # path gives the Python path's ids for every one. (The words before WordPiece differ on
    # 60 characters unknown to the vocabulary: 40 whose lowercase mapping Unicode 14 added,
    # 20 that Python 3.11's database does not know; see keras_albert.text.wordpiece.)
    characters = [chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    size = 2000
    chunks = [
        " ".join(f"a{c}b" for c in characters[start : start + size])
        for start in range(0, len(characters), size)
    ]
    graph = graph_ids(tokenizer, chunks)
    mismatches = [
        index for index, chunk in enumerate(chunks) if tokenizer.encode(chunk) != graph[index]
    ]
    assert mismatches == []


@pytest.mark.slow
def test_graph_words_differ_only_on_characters_python_does_not_lowercase(tokenizer):
    wordpiece = tokenizer._wordpiece
    characters = [chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    texts = [f"a{c}b" for c in characters]
    graph = wordpiece.words_graph(tf.constant(texts)).to_list()
    differing = [
        c
        for c, text, words in zip(characters, texts, graph, strict=True)
        if [word.decode() for word in words] != wordpiece.words(text)
    ]
    categories = sorted(unicodedata.category(c) for c in differing)
    assert categories == ["Cn"] * 20 + ["Lu"] * 40, [hex(ord(c)) for c in differing]


# ---------------------------------------------------------------------------------------------
# Packing, tf.data, SavedModel.


def test_packs_a_pair_with_the_vocabulary_ids(tokenizer, bert_reference):
    first, second = "这家酒店很好！", "服务一般, price OK"
    packed = tokenizer.packer(24)(
        (tokenizer(tf.constant([first])), tokenizer(tf.constant([second])))
    )
    expected = bert_reference(first, second, padding="max_length", max_length=24)
    assert packed["token_ids"].numpy().tolist() == [expected["input_ids"]]
    assert packed["segment_ids"].numpy().tolist() == [expected["token_type_ids"]]
    assert packed["padding_mask"].numpy().astype(int).tolist() == [expected["attention_mask"]]
    assert expected["input_ids"][0] == tokenizer.cls_id == 101
    assert expected["input_ids"].count(tokenizer.sep_id) == 2


def test_graph_path_in_tf_data_and_a_saved_model(tokenizer, tmp_path):
    reviews = load_reviews()[:40]
    dataset = tf.data.Dataset.from_tensor_slices(reviews).batch(16).map(tokenizer)
    result = [row for batch in dataset for row in batch.to_list()]
    expected = [tokenizer.encode(review) for review in reviews]
    assert result == expected

    module = tf.Module()
    module.tokenizer = tokenizer
    module.tokenize = tf.function(
        lambda text: tokenizer(text).to_tensor(default_value=-1),
        input_signature=[tf.TensorSpec([None], tf.string)],
    )
    tf.saved_model.save(module, str(tmp_path))
    loaded = tf.saved_model.load(str(tmp_path))
    padded = loaded.tokenize(tf.constant(reviews)).numpy().tolist()
    assert [[i for i in row if i != -1] for row in padded] == expected


def test_decode_drops_control_tokens_and_joins_continuations(tokenizer):
    ids = [tokenizer.cls_id, *tokenizer.encode("unbelievable 北京"), tokenizer.sep_id, 0]
    assert tokenizer.decode(ids) == "unbelievable 北 京"


# ---------------------------------------------------------------------------------------------
# Telling a vocabulary from a SentencePiece model.


def test_vocabulary_told_apart_from_a_sentencepiece_model():
    data = VOCABULARY.read_bytes()
    assert AlbertTokenizer(data).wordpiece
    assert AlbertTokenizer(str(VOCABULARY), wordpiece=True).encode("北京") == (
        AlbertTokenizer(data).encode("北京")
    )
    sentencepiece = AlbertTokenizer(ALBERT_MODEL)
    assert not sentencepiece.wordpiece and sentencepiece.vocabulary_size == 30000
    with pytest.raises(ValueError, match="Could not load a SentencePiece model"):
        AlbertTokenizer(data, wordpiece=False)
    with pytest.raises(ValueError, match="Could not read a WordPiece vocabulary"):
        AlbertTokenizer(ALBERT_MODEL, wordpiece=True)
    # Text without the special tokens is no vocabulary; the error says which ones it lacks.
    with pytest.raises(ValueError, match=r"a WordPiece vocabulary without \[MASK\]$"):
        AlbertTokenizer(b"[PAD]\n[UNK]\n[CLS]\n[SEP]\nfoo\n")
    with pytest.raises(ValueError, match=r"lacks the special tokens \['\[MASK\]'\]"):
        AlbertTokenizer(b"[PAD]\n[UNK]\n[CLS]\n[SEP]\nfoo\n", wordpiece=True)
    with pytest.raises(ValueError, match="`normalize_quotes` must be False"):
        AlbertTokenizer(data, normalize_quotes=True)
    with pytest.raises(TypeError, match="`wordpiece` must be a bool or None"):
        AlbertTokenizer(data, wordpiece="yes")


def test_a_vocabulary_without_mask_names_what_it_lacks(tmp_path):
    path = tmp_path / "vocab.txt"
    lines = VOCABULARY.read_text(encoding="utf-8").split("\n")
    path.write_text("\n".join(line for line in lines if line != "[MASK]"), encoding="utf-8")
    with pytest.raises(ValueError) as error:
        AlbertTokenizer(path)
    assert str(error.value) == (
        "`vocabulary` must be a SentencePiece model (a binary .model file) or a WordPiece "
        "vocabulary (UTF-8 text, one token per line, with [PAD], [UNK], [CLS], [SEP] and "
        f"[MASK]). Received: vocabulary='{path}', a WordPiece vocabulary without [MASK]"
    )


def test_cased_vocabulary_options_match_hugging_face():
    # `lowercase=False, strip_accents=False` is the original's do_lower_case=False.
    tokenizer = AlbertTokenizer(VOCABULARY, lowercase=False, strip_accents=False)
    reference = BertTokenizer(str(VOCABULARY), do_lower_case=False)
    texts = ["Crème Brûlée in Paris", "ÅNGSTRÖM Ｔｏｋｙｏ", "北京 Beijing"]
    expected = reference_ids(reference, texts)
    assert [tokenizer.encode(text) for text in texts] == expected
    assert graph_ids(tokenizer, texts) == expected
    assert expected != reference_ids(BertTokenizer(str(VOCABULARY)), texts)


def test_wordpiece_requires_the_special_tokens_once():
    with pytest.raises(ValueError, match="lacks the special tokens"):
        Wordpiece(["[PAD]", "[UNK]", "[CLS]", "a"])
    with pytest.raises(ValueError, match=r"repeating \['a'\]"):
        Wordpiece(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "a"])
