"""Character offsets of WordPiece tokens in the original text, in Python and in the graph.

`keras_albert.text.offsets` calls these for a WordPiece tokenizer (the Chinese releases). They
give the ids `Wordpiece.tokenize` / `tokenize_graph` give and each token's `[start, end)` span
in code points of the caller's text, before the basic tokenization changed it:

- each text character is normalized on its own (dropped if NUL, U+FFFD or a control
  character; " " if whitespace; lowercased, NFD and its nonspacing marks dropped, as the
  options say; an ideograph with a space either side), so every character of the normalized
  text knows the text character it came from. The text itself is normalized whole, as the
  tokenizer does (a word-final "Σ" lowercases to "ς" only in context; NFD reorders combining
  marks): both give as many characters (the one contextual lowercase mapping, final sigma, is
  one character for one, and the reordering keeps the count), so the origins line up;
- the words (split on spaces, each punctuation character a word) and WordPiece's pieces are
  spans of the normalized text; a piece's span runs from the origin of its first character to
  that of its last, extended over the marks after it that the accent stripping drops (the
  nonspacing marks of a decomposed "é"), as the SentencePiece offsets keep a dropped
  combining mark with the token before it. The characters the basic tokenization removes
  (control and format characters: an ANSI escape, a zero-width space) are in a span only
  when they are inside it (between two of its characters);
- an `[UNK]` token (a word the vocabulary cannot spell, or one over 200 characters) spans its
  whole word.

`words_with_offsets` / `words_with_offsets_graph` give the words' own spans by the same rules
(what the NER export tags). A word tokenized on its own gives the pieces it has in the whole
text, except where lowercasing depends on the context: "ΑΣ" alone is "ας", in "ΑΣ.Β" "ασ".

Offsets count code points of the text after invalid UTF-8 became U+FFFD (which the tokenizer
drops), i.e. Python `str` indices. Hugging Face's `BertTokenizerFast` offsets agree but after a
decomposed accent: its spans leave the marks out, so that an answer ending in a decomposed
"é" would lose its accent (its ids differ from the original's on word-final sigma and on
private-use characters, which it removes; tests/text/test_wordpiece_offsets.py measures both
on real text).
"""

from __future__ import annotations

import tensorflow as tf
import tensorflow_text as tf_text

from keras_albert.text.wordpiece import (
    SUFFIX_INDICATOR,
    lower_and_strip,
    prepare_character,
    prepare_graph,
    word_split_patterns,
)
from keras_albert.text.wordpiece_graph import Wordpiece

# ---------------------------------------------------------------------------------------------
# Python path.


def _word_spans(normalized: str, words: list[str]) -> list[tuple[int, int]] | None:
    """`[begin, end)` of each of the `words` in the `normalized` text they were split from
    (in order, apart by whitespace or nothing); None if they are not its words."""
    spans, position = [], 0
    for word in words:
        while position < len(normalized) and normalized[position].isspace():
            position += 1
        if not normalized.startswith(word, position):
            return None
        spans.append((position, position + len(word)))
        position += len(word)
    return spans if not normalized[position:].strip() else None


def _aligned_words(wordpiece: Wordpiece, text: str):
    """The normalized text, its words' `[begin, end)` in it (`Wordpiece.words`), and the
    function that maps a span of the normalized text to the text's span."""
    options = (wordpiece.lowercase, wordpiece.strip_accents)
    # Per text character: whether the accent stripping drops it (a mark); per normalized
    # character: the text character it came from.
    prepared = [prepare_character(char) for char in text]
    marks, origins = [], []
    for index, character in enumerate(prepared):
        width = len(lower_and_strip(character, *options))
        marks.append(bool(character) and not width)
        origins.extend([index] * width)
    normalized = lower_and_strip("".join(prepared), *options)
    words = _word_spans(normalized, wordpiece.words(text))
    if words is None or len(normalized) != len(origins):
        raise ValueError(f"Character alignment failed for the text beginning {text[:60]!r}")

    def span(begin: int, end: int) -> tuple[int, int]:
        stop = origins[end - 1] + 1
        while stop < len(text) and marks[stop]:
            stop += 1
        return origins[begin], stop

    return normalized, words, span


def words_with_offsets(wordpiece: Wordpiece, text: str) -> list[tuple[int, int]]:
    """The `[start, end)` span in `text` of each word of `Wordpiece.words(text)` (BERT's
    basic tokenization: every CJK ideograph and every punctuation character a word)."""
    _, words, span = _aligned_words(wordpiece, text)
    return [span(begin, end) for begin, end in words]


def tokenize_with_offsets(wordpiece: Wordpiece, text: str) -> tuple[list, list, list]:
    """Ids, starts and ends of the WordPiece tokens of `text` (see the module docstring)."""
    normalized, words, span = _aligned_words(wordpiece, text)
    ids, starts, ends = [], [], []
    for begin, end in words:
        pieces = wordpiece.split_word(normalized[begin:end])
        if pieces == [wordpiece.unk_token]:
            spans = [span(begin, end)]
        else:
            spans, position = [], begin
            for index, piece in enumerate(pieces):
                length = len(piece) - (len(SUFFIX_INDICATOR) if index else 0)
                spans.append(span(position, position + length))
                position += length
        for piece, (start, stop) in zip(pieces, spans, strict=True):
            ids.append(wordpiece.token_to_id[piece])
            starts.append(start)
            ends.append(stop)
    return ids, starts, ends


# ---------------------------------------------------------------------------------------------
# Graph path.


def _aligned_words_graph(wordpiece: Wordpiece, characters: dict):
    """The words of the normalized texts (`Wordpiece.words_graph`, ragged `[batch, None]`),
    their `[begin, end)` byte offsets in the concatenation of the normalized texts (flat
    int64), and the function that maps such byte offsets to global `[start, stop)` character
    indices of the texts."""
    chars = characters["chars"]  # (batch, None) one-character strings
    num_chars = tf.size(chars.flat_values, out_type=tf.int64)
    prepared = prepare_graph(chars.flat_values)  # (num_chars,)
    # Each character's normalized length, and the text normalized whole (as the tokenizer).
    widths = tf.strings.length(wordpiece.lower_and_strip_graph(prepared), unit="UTF8_CHAR")
    widths = tf.cast(widths, tf.int64)  # (num_chars,)
    normalized = wordpiece.lower_and_strip_graph(
        tf.strings.reduce_join(chars.with_flat_values(prepared), axis=1)
    )  # (batch,)
    origins = tf.repeat(tf.range(num_chars), widths)  # text character of each normalized one

    words, word_begins, word_ends = tf_text.regex_split_with_offsets(
        normalized, *word_split_patterns()
    )
    # Byte offsets in the concatenation of the normalized texts → its character indices.
    byte_base = tf.math.cumsum(tf.cast(tf.strings.length(normalized), tf.int64), exclusive=True)
    word_base = tf.gather(byte_base, words.value_rowids())
    _, char_bytes = tf.strings.unicode_decode_with_offsets(normalized, "UTF-8")
    global_char_bytes = (char_bytes + tf.expand_dims(byte_base, 1)).flat_values
    last_origin = tf.maximum(tf.size(origins, out_type=tf.int64) - 1, 0)
    safe_origins = tf.concat([origins, [0]], 0)
    # A span is extended over the marks after it: to the next character that is no mark, or
    # the end of its row.
    row_starts, row_lengths = characters["row_starts"], chars.row_lengths()
    no_mark = tf.where((widths > 0) | (tf.strings.length(prepared) == 0))[:, 0]
    stoppers = tf.sort(tf.concat([no_mark, row_starts + row_lengths], 0))
    stoppers = tf.concat([stoppers, [num_chars]], 0)

    def text_span(begin_bytes: tf.Tensor, end_bytes: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        begin = tf.searchsorted(global_char_bytes, begin_bytes, out_type=tf.int64)
        end = tf.searchsorted(global_char_bytes, end_bytes, out_type=tf.int64)
        start = tf.gather(safe_origins, tf.minimum(begin, last_origin))
        stop = tf.gather(safe_origins, tf.minimum(end - 1, last_origin)) + 1
        stop = tf.gather(stoppers, tf.searchsorted(stoppers, stop, out_type=tf.int64))
        return start, stop

    return (
        words,
        word_begins.flat_values + word_base,
        word_ends.flat_values + word_base,
        text_span,
    )


def words_with_offsets_graph(wordpiece: Wordpiece, characters: dict) -> dict:
    """`words_with_offsets` of texts already split into `characters`
    (`keras_albert.text.offsets.decoded_characters`): `starts`, `ends` (int64, local
    offsets), ragged `[batch, None]`."""
    words, begins, ends, text_span = _aligned_words_graph(wordpiece, characters)
    start, stop = text_span(begins, ends)
    row_starts = tf.gather(characters["row_starts"], words.value_rowids())
    return {
        "starts": words.with_flat_values(start - row_starts),
        "ends": words.with_flat_values(stop - row_starts),
    }


def tokenize_with_offsets_graph(wordpiece: Wordpiece, characters: dict) -> dict:
    """Token ids and character spans of texts already split into `characters`
    (`keras_albert.text.offsets.decoded_characters`).

    Returns `ids` (int32), `starts`, `ends` (int64, local offsets), ragged `[batch, None]`.
    """
    words, word_begins, _, text_span = _aligned_words_graph(wordpiece, characters)
    ids, piece_begins, piece_ends = wordpiece.split_words_graph(words.flat_values)
    piece_words = ids.value_rowids()  # (num_pieces,)
    word_base = tf.gather(word_begins, piece_words)
    start, stop = text_span(
        word_base + piece_begins.flat_values, word_base + piece_ends.flat_values
    )
    row_starts = characters["row_starts"]
    piece_row_starts = tf.gather(row_starts, tf.gather(words.value_rowids(), piece_words))
    token_rows = words.with_flat_values(ids).merge_dims(1, 2)  # (batch, None)
    return {
        "ids": tf.cast(token_rows, tf.int32),
        "starts": token_rows.with_flat_values(start - piece_row_starts),
        "ends": token_rows.with_flat_values(stop - piece_row_starts),
    }


__all__ = [
    "tokenize_with_offsets",
    "tokenize_with_offsets_graph",
    "words_with_offsets",
    "words_with_offsets_graph",
]
