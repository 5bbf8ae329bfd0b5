"""`squad.tokenize_with_offsets` with TensorFlow ops: token ids and character spans in the graph.

For a `[batch]` string tensor of contexts, `tokenize_with_offsets_graph` returns the token ids
`AlbertTokenizer` gives and every token's `[start, end)` character span in the context, by the
rules of the Python `keras_albert.text.squad.tokenize_with_offsets`:

- the normalization is followed character by character (a whitespace run becomes one space
  from its first character, leading and trailing runs vanish; NFKD, combining marks dropped and
  lowercasing per character), so each normalized character knows the context character it came
  from; SentencePiece's byte offsets into the normalized text then give the span;
- a span runs from the first to the last non-space character it covers, extended over the
  characters the normalization drops (a combining mark after a letter); a token covering no
  character gets the empty span where the next token starts (or the end of the text);
- a "<digit>," piece re-split into the number's pieces and "," gives the comma the last
  character of the span and the number the rest.

Character offsets count code points of the context after invalid UTF-8 is replaced by U+FFFD
(one per maximal invalid subsequence), i.e. Python `str` indices of the decoded context.
Everything is vectorized over the flattened batch (global indices), no Python functions run.
"""

from __future__ import annotations

import tensorflow as tf
import tensorflow_text as tf_text

from keras_albert.text.normalization import (
    combining_class,
    lower_keeping_nul,
    whitespace_class,
)


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
        tokenizer: an `AlbertTokenizer` (`normalize_quotes=False`, "," a piece of its own).
        sentencepiece: a `tf_text.SentencepieceTokenizer` of the tokenizer's model, int32 out.
        context: `[batch]` `tf.string`.

    Returns:
        `ids`, `starts`, `ends`: ragged `[batch, None]` (int32 ids, int64 local offsets), plus
        the `decoded_characters` of the context.
    """
    characters = decoded_characters(context)
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
    """Whether `tokenize_with_offsets_graph` can follow this tokenizer exactly (SentencePiece
    only: WordPiece offsets are not implemented)."""
    return (
        not tokenizer.wordpiece
        and tokenizer._resplit_table is not None
        and not tokenizer.normalize_quotes
    )


__all__ = [
    "decoded_characters",
    "offsets_supported",
    "tokenize_with_offsets_graph",
    "trimmed_span",
]
