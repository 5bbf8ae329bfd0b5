"""WordPiece character offsets (keras_albert.text.wordpiece_offsets), Python and graph, against
Hugging Face's `BertTokenizerFast(return_offsets_mapping=True)` over the same vocabulary.

Hugging Face's offsets are Python `str` indices (code points) of the original text, as ours.
They differ from ours in one documented way: a token followed by the nonspacing marks of a
decomposed accent (which the accent stripping drops) ends before them in Hugging Face's spans
and after them in ours, so that an answer ending in a decomposed "é" keeps its accent (the
SentencePiece offsets keep a dropped mark with the token before it too). Hugging Face's ids
differ from the original's on word-final sigma (tests/text/test_wordpiece.py) and on private-use
characters (which it removes, the original keeps as [UNK]); those texts are counted, not
compared.
"""

import unicodedata

import pytest
import tensorflow as tf
from transformers import BertTokenizerFast

from keras_albert.text.offsets import (
    offsets_supported,
    tokenize_with_offsets,
    tokenize_with_offsets_graph,
    words_with_offsets,
    words_with_offsets_graph,
)
from keras_albert.text.tokenizer import AlbertTokenizer
from keras_albert.text.wordpiece import MAX_CHARACTERS_PER_WORD
from tests.text.test_wordpiece import (
    HARD_STRINGS,
    VOCABULARY,
    hugging_face_wordpiece,
    load_poems,
    load_reviews,
)
from tests.text.text_data import ALBERT_MODEL

CASES = [
    "Crème Brûlée, Café naïve façade résumé Ångström über Müller",
    "cafe\u0301 u\u0308ber e\u0301\u0301x",  # decomposed accents: the marks follow the letter
    "ＡＢＣ１２３，ｈｅｌｌｏ！全角　空格",
    "unbelievable tokenization 北京欢迎你 2008年 welcome!",
    "qqxzzzqj 😀😀 I ❤️ 🍕 ✌🏽 ok",  # [UNK] words
    "x" * (MAX_CHARACTERS_PER_WORD + 1) + " 中",  # a word over the limit is one [UNK]
    "bell\x07 esc\x1b[32m colour\x1b[m nul\x00x del\x7f zero\u200bwidth bom\ufeffx",
    "multiple    spaces\t\ttabs\n\nnewlines\u3000\u3000ideographic  end  ",
    "İstanbul ΟΔΥΣΣΕΥΣ ΚΑΙ ΠΗΝΕΛΟΠΗΣ. ΑΣ.Β",  # İ lowercases to two characters; final sigma
    "\uf900\uf901 \U0002f800 兀 mixed中文English混合123数字abc",
    "",
    "   ",
]


@pytest.fixture(scope="module")
def tokenizer():
    return AlbertTokenizer(VOCABULARY)


@pytest.fixture(scope="module")
def reference():
    return hugging_face_wordpiece()


def hugging_face(reference, texts):
    encoded = reference(
        list(texts),
        add_special_tokens=False,
        split_special_tokens=True,
        return_offsets_mapping=True,
    )
    spans = [[tuple(span) for span in row] for row in encoded["offset_mapping"]]
    return encoded["input_ids"], spans


def graph_offsets(tokenizer, texts):
    tokens = tokenize_with_offsets_graph(tokenizer, None, tf.constant(texts))
    return [
        [tuple(token) for token in zip(*row, strict=True)]
        for row in zip(
            tokens["ids"].to_list(),
            tokens["starts"].to_list(),
            tokens["ends"].to_list(),
            strict=True,
        )
    ]


def python_offsets(tokenizer, texts):
    rows = []
    for text in texts:
        tokens = tokenize_with_offsets(tokenizer, text)
        rows.append(list(zip(tokens.ids, tokens.starts, tokens.ends, strict=True)))
    return rows


def compare(tokenizer, reference, texts) -> dict:
    """Ours (both paths) against Hugging Face; counts of texts, tokens and differences."""
    python = python_offsets(tokenizer, texts)
    assert graph_offsets(tokenizer, texts) == python
    ids, spans = hugging_face(reference, texts)
    counts = {"texts": len(texts), "tokens": 0, "ids": 0, "equal": 0, "marks_after": 0}
    for text, ours, their_ids, their_spans in zip(texts, python, ids, spans, strict=True):
        assert [token_id for token_id, _, _ in ours] == tokenizer.encode(text)
        counts["tokens"] += len(ours)
        if [token_id for token_id, _, _ in ours] != their_ids:
            counts["ids"] += 1
            continue
        for (_, start, end), (their_start, their_end) in zip(ours, their_spans, strict=True):
            if (start, end) == (their_start, their_end):
                counts["equal"] += 1
                continue
            # The one documented difference: ours also covers the marks after the token.
            assert start == their_start and their_end < end, (text, start, end, their_end)
            decomposed = unicodedata.normalize("NFD", text[their_end:end])
            assert {unicodedata.category(char) for char in decomposed} == {"Mn"}, text
            counts["marks_after"] += 1
    return counts


# ---------------------------------------------------------------------------------------------
# Parity with Hugging Face.


def test_real_chinese_text_offsets_equal_hugging_face(tokenizer, reference):
    reviews, poems = load_reviews(), load_poems()
    counts = compare(tokenizer, reference, reviews + poems)
    # 300 reviews (full-width punctuation, Latin, digits, emoji) and the 300+ poems: every id
    # and every span equals Hugging Face's.
    assert counts["texts"] == len(reviews) + len(poems) >= 600
    assert counts["ids"] == 0 and counts["marks_after"] == 0
    assert counts["equal"] == counts["tokens"] > 50_000


def test_hard_cases_offsets_equal_hugging_face_but_after_marks(tokenizer, reference):
    counts = compare(tokenizer, reference, CASES + HARD_STRINGS)
    assert counts["ids"] == 1  # word-final sigma (CASES[8])
    assert counts["marks_after"] > 0
    assert counts["equal"] > 500


def test_hugging_face_offsets_count_code_points_as_ours(tokenizer, reference):
    # After an emoji (one code point, two UTF-16 units, four UTF-8 bytes) and two ideographs
    # (three UTF-8 bytes each), "abc" starts at code point 4 in both.
    text = "😀 北京abc"
    ids, spans = hugging_face(reference, [text])
    tokens = tokenize_with_offsets(tokenizer, text)
    assert ids[0] == tokens.ids and spans[0][-1] == (4, 7) == (tokens.starts[-1], tokens.ends[-1])
    assert text[4:7] == "abc"


def test_private_use_characters_are_unknown_as_in_the_original(tokenizer, reference):
    # The original's `_is_control` removes Cc and Cf only; Hugging Face's Rust normalizer also
    # removes private-use (Co) and unassigned (Cn) characters. A private-use character from the
    # Chinese prose of ../shared/data/zh (fortunes_chinese.txt) is a word of its own, [UNK].
    text = "多情白\ue1e5春无奈"
    assert unicodedata.category("\ue1e5") == "Co"
    tokens = tokenize_with_offsets(tokenizer, text)
    assert tokens.ids[3] == tokenizer.unk_id and (tokens.starts[3], tokens.ends[3]) == (3, 4)
    ids, spans = hugging_face(reference, [text])
    assert ids[0] == tokens.ids[:3] + tokens.ids[4:]
    assert spans[0] == [(0, 1), (1, 2), (2, 3), (4, 5), (5, 6), (6, 7)]
    assert (
        list(zip(tokens.starts, tokens.ends, strict=True)) == spans[0][:3] + [(3, 4)] + spans[0][3:]
    )


def test_spans_on_examples(tokenizer):
    def spans(text):
        tokens = tokenize_with_offsets(tokenizer, text)
        return [
            (tokenizer.id_to_piece(token_id), text[start:end])
            for token_id, start, end in zip(tokens.ids, tokens.starts, tokens.ends, strict=True)
        ]

    # Lowercase and accents stripped in the ids; the spans keep the caller's text.
    assert spans("Café, über") == [("cafe", "Café"), (",", ","), ("uber", "über")]
    # A decomposed accent stays with its letter (Hugging Face's span would end before it).
    assert spans("cafe\u0301!") == [("cafe", "cafe\u0301"), ("!", "!")]
    # Every ideograph is a word; full-width letters are kept (no NFKC) and split into pieces.
    assert spans("北京ＡＢＣ")[:2] == [("北", "北"), ("京", "京")]
    assert "".join(piece for _, piece in spans("北京ＡＢＣ")[2:]) == "ＡＢＣ"
    # [UNK] spans its whole word; a removed character inside a token stays in its span, one
    # after it does not (an ANSI escape, a zero-width space).
    assert spans("ab\x00cd 😀x") == [("abc", "ab\x00c"), ("##d", "d"), ("[UNK]", "😀x")]
    assert spans("北\x1b[1m京")[0] == ("北", "北")
    assert spans("北京\u200b\x1b") == [("北", "北"), ("京", "京")]
    assert spans("  a   b  ") == [("a", "a"), ("b", "b")]
    assert spans("x" * 201) == [("[UNK]", "x" * 201)]
    assert spans("İx") == [("i", "İ"), ("##x", "x")]
    assert spans("") == []


def test_graph_offsets_in_a_batch_with_invalid_utf8(tokenizer):
    # Invalid UTF-8 becomes U+FFFD (one per maximal invalid subsequence), which the
    # tokenizer drops; offsets index that decoded text in both paths.
    raw = [b"ab\xffcd \xe2\x82 \xe4\xb8\xadx", b"", b"\x80\x80 \xe4\xb8\xad"]
    decoded = [text.decode("utf-8", "replace") for text in raw]
    tokens = tokenize_with_offsets_graph(tokenizer, None, tf.constant(raw))
    assert tokens["ids"].to_list() == [tokenizer.encode(text) for text in raw]
    expected = python_offsets(tokenizer, decoded)
    assert graph_offsets(tokenizer, raw) == expected
    assert [tokens["text"][i].numpy().decode() for i in range(3)] == decoded


@pytest.mark.slow  # 1.1M characters through both paths: ≈ 30 s (CI runs it)
def test_every_character_both_paths_equal(tokenizer):
    # Every Unicode scalar value between two letters: the graph's normalized characters line
    # up with the text's (the lengths of the whole-text and per-character normalizations agree
    # in TensorFlow's ICU as in Python), and ids and spans equal the Python path's.
    characters = [chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    size = 4000
    chunks = [
        " ".join(f"a{c}b" for c in characters[start : start + size])
        for start in range(0, len(characters), size)
    ]
    graph = graph_offsets(tokenizer, chunks)
    python = python_offsets(tokenizer, chunks)
    # The 60 characters whose words differ between the paths (tests/text/test_wordpiece.py)
    # are all [UNK] in this vocabulary either way.
    assert [i for i in range(len(chunks)) if graph[i] != python[i]] == []


def test_offsets_supported_for_wordpiece(tokenizer):
    assert offsets_supported(tokenizer)
    assert offsets_supported(AlbertTokenizer(VOCABULARY, lowercase=False, strip_accents=False))
    with pytest.raises(TypeError, match="`text` must be a str .*Received: text of type bytes"):
        tokenize_with_offsets(tokenizer, "北京".encode())


def test_cased_vocabulary_offsets_equal_hugging_face():
    tokenizer = AlbertTokenizer(VOCABULARY, lowercase=False, strip_accents=False)
    reference = BertTokenizerFast(str(VOCABULARY), do_lower_case=False)
    texts = ["Crème Brûlée in Paris", "ÅNGSTRÖM Ｔｏｋｙｏ 北京 Beijing", "cafe\u0301 x"]
    counts = compare(tokenizer, reference, texts)
    # Without accent stripping nothing is dropped after a letter.
    assert counts["ids"] == 0 and counts["equal"] == counts["tokens"] > 10


# ---------------------------------------------------------------------------------------------
# Words (what the NER export tags): BERT's basic-tokenization words as spans of the text.

WORD_CASES = [
    "北京欢迎你",
    "我是10月20日入住的，房间很好！Crème brûlée😀😀，cafe\u0301。",
    "ＡＢＣ１２３，ｈｅｌｌｏ！全角　空格「引号」",
    "  北京\t\t欢迎\n你  ",
    "emoji👩\u200d👩\u200d👧北🇫🇷京✌🏽 ok",
    "a≠b x\u1fefy ab\x00cd 北\x1b[1m京\u200b",
    "\u200b\x1b",
]


def graph_words(tokenizer, texts):
    words = words_with_offsets_graph(tokenizer, tf.constant(texts))
    return [
        (row_words, row_starts, row_ends)
        for row_words, row_starts, row_ends in zip(
            [[word.decode() for word in row] for row in words["words"].to_list()],
            words["starts"].to_list(),
            words["ends"].to_list(),
            strict=True,
        )
    ]


def python_words(tokenizer, texts):
    return [
        (split.words, split.starts, split.ends)
        for split in (words_with_offsets(tokenizer, text) for text in texts)
    ]


def test_words_both_paths_equal_and_tokenize_as_the_text(tokenizer):
    texts = load_reviews() + load_poems() + CASES + HARD_STRINGS + WORD_CASES
    python = python_words(tokenizer, texts)
    assert graph_words(tokenizer, texts) == python
    context_dependent = []
    for text, (words, starts, ends) in zip(texts, python, strict=True):
        assert [text[start:end] for start, end in zip(starts, ends, strict=True)] == words
        # Each word, tokenized on its own (as the NER alignment does), is one word of the
        # basic tokenization, and together they are the text's words, hence its tokens.
        normalized = [tokenizer._wordpiece.words(word) for word in words]
        assert all(len(row) == 1 for row in normalized), text
        if [row[0] for row in normalized] != tokenizer._wordpiece.words(text):
            context_dependent.append(text)
        else:
            assert [i for word in words for i in tokenizer.encode(word)] == tokenizer.encode(text)
    # But one: "ΑΣ" alone lowercases to "ας" (final sigma), in "ΑΣ.Β" to "ασ".
    assert context_dependent == [CASES[8]]
    assert sum(len(words) for words, _, _ in python) > 30000


def test_words_on_examples(tokenizer):
    def words(text):
        return words_with_offsets(tokenizer, text).words

    assert words("北京欢迎你") == words("北 京 欢 迎 你") == ["北", "京", "欢", "迎", "你"]
    assert words_with_offsets(tokenizer, "北 京").starts == [0, 2]
    # Latin words and numbers stay whole, punctuation is a word; the words are the caller's
    # text (case, accents, full-width forms), control characters inside a word kept.
    assert words("我是10月20日，Café！") == ["我", "是", "10", "月", "20", "日", "，", "Café", "！"]
    assert words("ＡＢＣ，cafe\u0301.x") == ["ＡＢＣ", "，", "cafe\u0301", ".", "x"]
    assert words("ab\x00cd 😀x 北\x1b京") == ["ab\x00cd", "😀x", "北", "京"]
    assert words("\u200b\x1b ") == words("") == []


def test_words_in_a_batch_with_invalid_utf8(tokenizer):
    raw = [b"ab\xffcd \xe2\x82 \xe4\xb8\xadx", b"", b"\x80\x80 \xe4\xb8\xad\xe6\x96\x87"]
    decoded = [text.decode("utf-8", "replace") for text in raw]
    assert graph_words(tokenizer, raw) == python_words(tokenizer, decoded)
    assert python_words(tokenizer, decoded)[2][0] == ["中", "文"]  # U+FFFD is dropped


def test_sentencepiece_words_stay_the_whitespace_split():
    tokenizer = AlbertTokenizer(ALBERT_MODEL)
    texts = ["北京欢迎你", " Jane  Austen,\tBath\u3000ok\u2028x ", "", "\u200b a"]
    python = python_words(tokenizer, texts)
    assert graph_words(tokenizer, texts) == python
    assert [words for words, _, _ in python] == [text.split() for text in texts]
    with pytest.raises(TypeError, match="`text` must be a str .*Received: text of type bytes"):
        words_with_offsets(tokenizer, b"x")
