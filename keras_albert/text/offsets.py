"""Token ids with each token's character span in the original text, in Python and in the graph.

`tokenize_with_offsets(tokenizer, text)` (Python, offline data creation) and
`tokenize_with_offsets_graph(tokenizer, sentencepiece, texts)` (TensorFlow ops, inside exported
SavedModels) give the ids `AlbertTokenizer` gives and every token's `[start, end)` character span
in the text, so that a span of tokens maps back to an exact substring with the caller's case,
accents and spacing (SQuAD answers, NER words). A WordPiece tokenizer's offsets (the Chinese
releases) come from `keras_albert.text.wordpiece_offsets`; the SentencePiece rules, shared by both
paths:

- the normalization is followed character by character (a whitespace run becomes one space
  from its first character, leading and trailing runs vanish; NFKD, combining marks dropped and
  lowercasing per character), so each normalized character knows the text character it came
  from; SentencePiece's byte offsets into the normalized text then give the span;
- a span runs from the first to the last non-space character it covers, extended over the
  characters the normalization drops (a combining mark after a letter); a token covering no
  character gets the empty span where the next token starts (or the end of the text);
- a "<digit>," piece re-split into the number's pieces and "," gives the comma the last
  character of the span and the number the rest.

Character offsets count code points of the text after invalid UTF-8 is replaced by U+FFFD
(one per maximal invalid subsequence), i.e. Python `str` indices of the decoded text. The graph
path is vectorized over the flattened batch (global indices); no Python function runs in it.

`words_with_offsets` / `words_with_offsets_graph` give the words the tokenizer splits into
pieces as spans of the text (what the NER export tags): the whitespace split for SentencePiece,
BERT's basic-tokenization words for WordPiece.
"""

from __future__ import annotations

import dataclasses
import re
import unicodedata

import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text

from keras_albert.text import wordpiece_offsets
from keras_albert.text.normalization import (
    combining_class,
    lower_keeping_nul,
    whitespace_class,
)
from keras_albert.text.sentencepiece_model import split_digit_comma


@dataclasses.dataclass(frozen=True)
class ContextTokens:
    """A text's token ids and each token's `[start, end)` character span in the text."""

    ids: list[int]
    starts: list[int]
    ends: list[int]


@dataclasses.dataclass(frozen=True)
class TextWords:
    """A text's words, each the text's own substring, and their `[start, end)` spans."""

    words: list[str]
    starts: list[int]
    ends: list[int]


def _require_str(text) -> None:
    if not isinstance(text, str):
        raise TypeError(
            f"`text` must be a str (offsets index its characters). "
            f"Received: text of type {type(text).__name__}"
        )


def words_with_offsets(tokenizer, text: str) -> TextWords:
    """The words of `text` that the tokenizer splits into pieces, with their character spans.

    SentencePiece: the whitespace split (Python `str.split()`). WordPiece: the words of BERT's
    basic tokenization (`keras_albert.text.wordpiece_offsets.words_with_offsets`): the
    whitespace split with every CJK ideograph and every punctuation character a word of its
    own, so that unspaced Chinese is one word per character. Each word is the text's
    substring at its span, not the normalized word.
    """
    _require_str(text)
    if tokenizer.wordpiece:
        spans = wordpiece_offsets.words_with_offsets(tokenizer._wordpiece, text)
    else:
        spans = [match.span() for match in re.finditer(r"\S+", text)]  # `\s` is `str.isspace`
    return TextWords(
        words=[text[start:end] for start, end in spans],
        starts=[start for start, _ in spans],
        ends=[end for _, end in spans],
    )


def _normalize_with_origins(tokenizer, text: str) -> tuple[str, list[int]]:
    """`tokenizer.normalize(text)` and, for each of its characters, the index in `text` of the
    character it came from. A run of whitespace becomes one space from the run's first character."""
    if tokenizer.normalize_quotes:
        raise ValueError(
            "Character offsets need `normalize_quotes=False` (its two-character rewrite is not "
            "followed). Received: normalize_quotes=True"
        )
    characters, origins = [], []
    pending_space = None
    for index, character in enumerate(text):
        if character.isspace():
            if characters and pending_space is None:
                pending_space = index
            continue
        if pending_space is not None:
            characters.append(" ")
            origins.append(pending_space)
            pending_space = None
        if tokenizer.strip_accents:
            # NFKD of a string is the NFKD of each character followed by a reordering of
            # combining marks only; as those are dropped, character by character is exact.
            decomposed = unicodedata.normalize("NFKD", character)
            pieces = [c for c in decomposed if not unicodedata.combining(c)]
        else:
            pieces = [character]
        characters.extend(pieces)
        origins.extend([index] * len(pieces))
    normalized = "".join(characters)
    if tokenizer.lowercase:
        # Lowercasing the whole string (final sigma is contextual) keeps each character's
        # lowercase length; a character that lowercases to two (İ) repeats its origin.
        lowered = normalized.lower()
        lengths = [len(c.lower()) for c in characters]
        if sum(lengths) == len(lowered):
            origins = [o for o, n in zip(origins, lengths, strict=True) for _ in range(n)]
            normalized = lowered
    if normalized != tokenizer.normalize(text):
        raise ValueError(f"Character alignment failed for the text beginning {text[:60]!r}")
    return normalized, origins


def tokenize_with_offsets(tokenizer, text: str) -> ContextTokens:
    """`tokenizer.encode(text)` with each token's `[start, end)` character span in `text`.

    A token's span runs from the first to the last non-space character it covers; characters
    the normalization drops (combining marks of a decomposed accent) stay with the token before
    them. A token that covers no character (a lone "▁") gets the empty span where the next
    token starts.
    """
    _require_str(text)
    if tokenizer.wordpiece:
        ids, starts, ends = wordpiece_offsets.tokenize_with_offsets(tokenizer._wordpiece, text)
        return ContextTokens(ids=ids, starts=starts, ends=ends)
    normalized, origins = _normalize_with_origins(tokenizer, text)
    encoded = normalized.encode("utf-8")
    # The character index of every byte offset (and of the end).
    byte_to_char = np.zeros(len(encoded) + 1, dtype=np.int64)
    position = 0
    for char_index, character in enumerate(normalized):
        width = len(character.encode("utf-8"))
        byte_to_char[position : position + width] = char_index
        position += width
    byte_to_char[len(encoded)] = len(normalized)
    produces_output = np.zeros(len(text) + 1, dtype=bool)
    produces_output[origins] = True

    proto = tokenizer._processor.encode(normalized, return_type="proto")
    ids, starts, ends = [], [], []
    for piece in proto.pieces:
        begin, end = int(byte_to_char[piece.begin]), int(byte_to_char[piece.end])
        while begin < end and normalized[begin] == " ":
            begin += 1
        while end > begin and normalized[end - 1] == " ":
            end -= 1
        if begin == end:
            span = None
        else:
            start = origins[begin]
            stop = origins[end - 1] + 1
            while stop < len(text) and not produces_output[stop] and not text[stop].isspace():
                stop += 1
            span = (start, stop)
        text_piece = piece.piece
        if len(text_piece) > 1 and text_piece[-1] == "," and text_piece[-2].isdigit():
            parts = split_digit_comma(tokenizer._processor, text_piece)
            part_ids = [tokenizer.piece_to_id(part) for part in parts]
            # The comma is the span's last character; the number keeps the rest.
            spans = [span if span is None else (span[0], max(span[0], span[1] - 1))] * (
                len(parts) - 1
            ) + [span if span is None else (max(span[0], span[1] - 1), span[1])]
        else:
            part_ids, spans = [piece.id], [span]
        for part_id, part_span in zip(part_ids, spans, strict=True):
            ids.append(part_id)
            starts.append(None if part_span is None else part_span[0])
            ends.append(None if part_span is None else part_span[1])
    # Empty tokens take the empty span at the start of the next token (or the end of the text).
    following = len(text)
    for index in range(len(ids) - 1, -1, -1):
        if starts[index] is None:
            starts[index] = ends[index] = following
        else:
            following = starts[index]
    return ContextTokens(ids=ids, starts=starts, ends=ends)


def _next_position(positions: tf.Tensor, at: tf.Tensor, missing) -> tf.Tensor:
    """The smallest entry of the sorted `positions` that is >= `at` (or `missing`)."""
    index = tf.searchsorted(positions, tf.reshape(at, [-1]), side="left", out_type=tf.int64)
    padded = tf.concat([positions, tf.cast(tf.reshape(missing, [1]), positions.dtype)], 0)
    return tf.reshape(tf.gather(padded, index), tf.shape(at))


def _previous_position(positions: tf.Tensor, before: tf.Tensor, missing) -> tf.Tensor:
    """The largest entry of the sorted `positions` that is < `before` (or `missing`)."""
    flat = tf.reshape(before, [-1])
    index = tf.searchsorted(positions, flat, side="left", out_type=tf.int64) - 1
    padded = tf.concat([tf.cast(tf.reshape(missing, [1]), positions.dtype), positions], 0)
    return tf.reshape(tf.gather(padded, index + 1), tf.shape(before))


def decoded_characters(text: tf.Tensor) -> dict:
    """The characters of `[batch]` strings: `text` (invalid UTF-8 replaced), `chars`
    (ragged `[batch, None]` one-character strings), `is_space` (flat bool, Python's
    `str.isspace`) and `row_starts` (int64 `[batch]`, global index of each row's first)."""
    text = tf.strings.unicode_transcode(
        text, "UTF-8", "UTF-8", errors="replace", replacement_char=0xFFFD
    )
    chars = tf.strings.unicode_split(text, "UTF-8")  # (batch, None)
    is_space = tf.strings.regex_full_match(chars.flat_values, whitespace_class())
    return {"text": text, "chars": chars, "is_space": is_space, "row_starts": chars.row_starts()}


def _whitespace_words_graph(characters: dict) -> dict:
    """`starts` and `ends` of the whitespace-separated words (ragged int64, local)."""
    chars, is_space = characters["chars"], characters["is_space"]
    flat_index = tf.range(tf.size(is_space, tf.int64))
    local = flat_index - tf.gather(characters["row_starts"], chars.value_rowids())
    previous_space = tf.concat([[True], is_space[:-1]], 0) | (local == 0)
    next_space = tf.concat([is_space[1:], [True]], 0) | (
        local == tf.gather(chars.row_lengths() - 1, chars.value_rowids())
    )
    starts = chars.with_flat_values(~is_space & previous_space)
    ends = chars.with_flat_values(~is_space & next_space)
    return {
        "starts": tf.ragged.boolean_mask(chars.with_flat_values(local), starts),
        "ends": tf.ragged.boolean_mask(chars.with_flat_values(local + 1), ends),
    }


def words_with_offsets_graph(tokenizer, text: tf.Tensor) -> dict:
    """`words_with_offsets` of `[batch]` `tf.string` texts (invalid UTF-8 becomes U+FFFD):
    `words` (`tf.string`), `starts`, `ends` (int64, local offsets), ragged `[batch, None]`."""
    characters = decoded_characters(text)
    if tokenizer.wordpiece:
        spans = wordpiece_offsets.words_with_offsets_graph(tokenizer._wordpiece, characters)
    else:
        spans = _whitespace_words_graph(characters)
    # Each word is the join of its characters (a substr of the whole text per word would
    # copy the text once per word). The spans are disjoint and in order: a character belongs
    # to the last word starting at or before it, if it ends after the character.
    chars, row_starts = characters["chars"], characters["row_starts"]
    starts, ends = spans["starts"], spans["ends"]
    word_row_starts = tf.gather(row_starts, starts.value_rowids())
    word_starts = starts.flat_values + word_row_starts  # (num_words,) global
    word_ends = ends.flat_values + word_row_starts
    num_words = tf.size(word_starts, out_type=tf.int64)
    flat_index = tf.range(tf.size(chars.flat_values, out_type=tf.int64))
    word = tf.searchsorted(word_starts, flat_index, side="right", out_type=tf.int64) - 1
    # A character before the first word (word -1) reads the appended end 0: outside.
    inside = flat_index < tf.gather(tf.concat([word_ends, [0]], 0), word % (num_words + 1))
    words = tf.strings.unsorted_segment_join(
        tf.boolean_mask(chars.flat_values, inside), tf.boolean_mask(word, inside), num_words
    )
    return {"words": starts.with_flat_values(words), "starts": starts, "ends": ends}


def trimmed_span(non_space: tf.Tensor, begin: tf.Tensor, end: tf.Tensor):
    """`[begin, end)` (global indices) without leading and trailing spaces; `non_space` holds
    the sorted global indices of the characters that are not spaces. Returns (begin, end,
    nonempty)."""
    big = tf.int64.max
    first = _next_position(non_space, begin, big)
    last = _previous_position(non_space, end, -1)
    nonempty = first < end
    return tf.where(nonempty, first, begin), tf.where(nonempty, last + 1, begin), nonempty


def tokenize_with_offsets_graph(tokenizer, sentencepiece, context: tf.Tensor) -> dict:
    """Token ids and character spans of `[batch]` contexts (see the module docstring).

    Args:
        tokenizer: an `AlbertTokenizer` (`offsets_supported`).
        sentencepiece: a `tf_text.SentencepieceTokenizer` of the tokenizer's model, int32 out;
            None for a WordPiece tokenizer (`keras_albert.text.wordpiece_offsets`).
        context: `[batch]` `tf.string`.

    Returns:
        `ids`, `starts`, `ends`: ragged `[batch, None]` (int32 ids, int64 local offsets), plus
        the `decoded_characters` of the context.
    """
    characters = decoded_characters(context)
    if tokenizer.wordpiece:
        tokens = wordpiece_offsets.tokenize_with_offsets_graph(tokenizer._wordpiece, characters)
        return {**tokens, **characters}
    chars, is_space = characters["chars"], characters["is_space"]
    row_ids = chars.value_rowids()
    num_chars = tf.shape(is_space, out_type=tf.int64)[0]
    row_starts = characters["row_starts"]
    row_lengths = chars.row_lengths()

    # Per character: its normalized text (the whitespace collapse and strip, NFKD, combining
    # marks dropped, lowercase), and how many code points that is.
    not_space = tf.cast(~is_space, tf.int64)
    before = tf.math.cumsum(chars.with_flat_values(not_space), axis=1, exclusive=True)
    after = tf.math.cumsum(chars.with_flat_values(not_space), axis=1, exclusive=True, reverse=True)
    flat_index = tf.range(num_chars)
    previous_space = tf.concat([[False], is_space[:-1]], 0) & (
        flat_index != tf.gather(row_starts, row_ids)
    )
    kept_space = is_space & ~previous_space & (before.flat_values > 0) & (after.flat_values > 0)
    pieces = chars.flat_values
    if tokenizer.strip_accents:
        pieces = tf.strings.regex_replace(
            tf_text.normalize_utf8(pieces, "NFKD"), combining_class() + "+", ""
        )
    if tokenizer.lowercase:
        pieces = lower_keeping_nul(pieces)
    pieces = tf.where(is_space, tf.where(kept_space, " ", ""), pieces)
    widths = tf.cast(tf.strings.length(pieces, unit="UTF8_CHAR"), tf.int64)
    normalized = tf.strings.reduce_join(chars.with_flat_values(pieces), axis=1)
    # The context character of every normalized character (global indices).
    origins = tf.repeat(flat_index, widths)
    produces = widths > 0

    ids, byte_starts, byte_ends = sentencepiece.tokenize_with_offsets(normalized)
    code_points, char_byte_starts = tf.strings.unicode_decode_with_offsets(normalized, "UTF-8")
    byte_lengths = tf.cast(tf.strings.length(normalized), tf.int64)
    byte_base = tf.math.cumsum(byte_lengths, exclusive=True)  # (batch,)
    global_char_bytes = (char_byte_starts + tf.expand_dims(byte_base, 1)).flat_values
    piece_rows = ids.value_rowids()
    piece_base = tf.gather(byte_base, piece_rows)
    begin = tf.searchsorted(
        global_char_bytes, byte_starts.flat_values + piece_base, "left", out_type=tf.int64
    )
    end = tf.searchsorted(
        global_char_bytes, byte_ends.flat_values + piece_base, "left", out_type=tf.int64
    )
    normalized_non_space = tf.cast(tf.where(code_points.flat_values != 32)[:, 0], tf.int64)
    begin, end, nonempty = trimmed_span(normalized_non_space, begin, end)
    safe = tf.concat([origins, [0]], 0)
    start = tf.gather(safe, tf.minimum(begin, tf.size(origins, tf.int64)))
    stop = tf.gather(safe, tf.maximum(end - 1, 0)) + 1
    # Extended over dropped characters: to the next character that is a space, produces
    # output, or the end of its row.
    stoppers = tf.sort(
        tf.concat([tf.where(produces | is_space)[:, 0], row_starts + row_lengths], 0)
    )
    stop = _next_position(stoppers, stop, num_chars)
    piece_row_starts = tf.gather(row_starts, piece_rows)
    start = start - piece_row_starts
    stop = stop - piece_row_starts

    # The digit-comma re-split, spans included.
    values, row_splits = tokenizer._resplit_table
    table = tf.RaggedTensor.from_row_splits(
        tf.constant(values), tf.constant(row_splits), validate=False
    )
    parts = tf.gather(table, ids.flat_values)  # (num_pieces, None)
    part_pieces = parts.value_rowids()
    part_count = tf.gather(parts.row_lengths(), part_pieces)
    part_index = tf.ragged.range(parts.row_lengths()).flat_values
    is_split = part_count > 1
    is_last = part_index == part_count - 1
    piece_start, piece_stop = tf.gather(start, part_pieces), tf.gather(stop, part_pieces)
    comma = tf.maximum(piece_start, piece_stop - 1)
    part_start = tf.where(is_split & is_last, comma, piece_start)
    part_stop = tf.where(is_split & ~is_last, comma, piece_stop)
    part_nonempty = tf.gather(nonempty, part_pieces)
    part_rows = tf.gather(piece_rows, part_pieces)

    # Empty tokens: the empty span at the start of the next nonempty token of the row.
    num_parts = tf.shape(part_pieces, out_type=tf.int64)[0]
    nonempty_index = tf.where(part_nonempty)[:, 0]
    following = _next_position(nonempty_index, tf.range(num_parts), num_parts)
    following_safe = tf.minimum(following, tf.maximum(num_parts - 1, 0))
    has_following = (following < num_parts) & (
        tf.gather(tf.concat([part_rows, [-1]], 0), following) == part_rows
    )
    following_start = tf.where(
        has_following,
        tf.gather(tf.concat([part_start, [0]], 0), following_safe),
        tf.gather(row_lengths, part_rows),
    )
    part_start = tf.where(part_nonempty, part_start, following_start)
    part_stop = tf.where(part_nonempty, part_stop, following_start)

    token_rows = ids.with_flat_values(parts).merge_dims(1, 2)
    return {
        "ids": tf.cast(token_rows, tf.int32),
        "starts": token_rows.with_flat_values(part_start),
        "ends": token_rows.with_flat_values(part_stop),
        **characters,
    }


def offsets_supported(tokenizer) -> bool:
    """Whether `tokenize_with_offsets_graph` can follow this tokenizer exactly: WordPiece, or
    SentencePiece with `normalize_quotes=False` and "," a piece of its own."""
    if tokenizer.wordpiece:
        return True
    return tokenizer._resplit_table is not None and not tokenizer.normalize_quotes


__all__ = [
    "TextWords",
    "decoded_characters",
    "offsets_supported",
    "tokenize_with_offsets_graph",
    "trimmed_span",
    "words_with_offsets",
    "words_with_offsets_graph",
]
