"""The question-answering features in the TensorFlow graph: `[batch]` questions and contexts →
packed windows `[CLS] question [SEP] context window [SEP]` with every token's character offsets
and max-context flags (`question_windows`), and the answer's token positions in each window
(`answer_positions`).

The one graph definition of these features: the string-in SavedModel
(`serving.QuestionAnsweringServingModule`) answers from every window of a question, the
preprocessor (`preprocessor.AlbertQuestionAnswererPreprocessor`) keeps the first. Both follow
`features.squad_features`, the Python windows fine-tuning runs: the question cut to
`max_query_length` tokens, windows `doc_stride` context tokens apart, the original's
max-context rule, and the labels of `answer_token_span` (`[CLS]`, position 0, for a question
without an answer and for a window that does not hold the whole answer).
"""

from __future__ import annotations

import tensorflow as tf
import tensorflow_text as tf_text

from keras_albert.text.offsets import offsets_supported, tokenize_with_offsets_graph


def require_offsets(tokenizer) -> None:
    """Refuses a tokenizer whose character offsets the graph cannot follow exactly."""
    if not offsets_supported(tokenizer):
        raise ValueError(
            "`tokenizer` must be a WordPiece tokenizer, or a SentencePiece tokenizer with "
            "normalize_quotes=False and ',' as a piece of its own, for in-graph character "
            f"offsets. Received: tokenizer with normalize_quotes={tokenizer.normalize_quotes}"
            f" and ',' {'not ' if tokenizer._resplit_table is None else ''}a piece of its own"
        )


def offsets_sentencepiece(tokenizer) -> tf_text.SentencepieceTokenizer | None:
    """The tokenizer `question_windows` reads SentencePiece offsets with (ids out), or None for
    WordPiece, whose offsets come from its own lookup table
    (`keras_albert.text.wordpiece_offsets`). Its holder keeps it as an attribute, so that a
    SavedModel tracks its resource."""
    require_offsets(tokenizer)
    if tokenizer.wordpiece:
        return None
    return tf_text.SentencepieceTokenizer(
        model=tokenizer.serialized_model, out_type=tf.int32, name="sentencepiece_offsets"
    )


def question_windows(
    tokenizer,
    sentencepiece,
    question: tf.Tensor,
    context: tf.Tensor,
    *,
    sequence_length: int,
    doc_stride: int,
    max_query_length: int,
    min_width: int = 2,
    max_windows: int | None = None,
    pad: bool = False,
) -> dict:
    """The packed windows of `[batch]` questions and contexts, with their bookkeeping.

    Args:
        tokenizer: an `AlbertTokenizer` (`require_offsets`).
        sentencepiece: its `offsets_sentencepiece`.
        question, context: `[batch]` `tf.string`.
        sequence_length: the longest window, in tokens.
        doc_stride: context tokens between the starts of successive windows.
        max_query_length: question tokens kept.
        min_width: the narrowest padded width (what the answer-class head's top-k needs).
        max_windows: keep at most this many windows of each question (their first); None:
            every window, the whole context.
        pad: pad every window to `sequence_length`; else to the longest window of the batch.

    Returns:
        `inputs` (`token_ids`, `segment_ids`, `padding_mask`: int32 `[windows, width]`),
        `example` (int64 `[windows]`: each window's question), `window_start` (its first
        context token's index among the context's tokens), `context_offset` (that token's
        position), `token_starts` / `token_ends` (int64 `[windows, width]`: character offsets
        into the context, -1 off the context), `max_context` (bool `[windows, width]`) and
        `tokens` (`tokenize_with_offsets_graph` of the contexts).
    """
    tokens = tokenize_with_offsets_graph(tokenizer, sentencepiece, context)
    query = tokenizer(question)[:, :max_query_length]  # (batch, None)
    num_tokens = tokens["ids"].row_lengths()  # (batch,) int64
    query_length = query.row_lengths()
    window_length = sequence_length - query_length - 3
    stride = tf.minimum(window_length, doc_stride)
    extra = tf.maximum(num_tokens - window_length, 0)
    num_windows = 1 + (extra + stride - 1) // stride  # (batch,)
    if max_windows is not None:
        num_windows = tf.minimum(num_windows, max_windows)
    example = tf.repeat(tf.range(tf.size(num_windows, tf.int64)), num_windows)  # (F,)
    window = tf.ragged.range(num_windows).flat_values  # (F,)

    def per_window(values):
        return tf.gather(values, example)

    q, n, w, s = (per_window(v) for v in (query_length, num_tokens, window_length, stride))
    start = window * s
    length = tf.minimum(w, n - start)
    total = q + 3 + length  # tokens of each window
    if pad:
        width = tf.constant(sequence_length, tf.int64)
    else:
        # Padded to the longest window (at least `min_width`; a batch of 0 has reduce_max =
        # the int64 minimum).
        width = tf.minimum(tf.maximum(tf.reduce_max(total), min_width), sequence_length)
    position = tf.range(width)[tf.newaxis, :]  # (1, width)
    q2, s2, len2, tot2 = (v[:, tf.newaxis] for v in (q, start, length, total))
    query_index = per_window(query.row_starts())[:, tf.newaxis] + position - 1
    context_local = s2 + position - q2 - 2  # context token index at each position
    context_index = per_window(tokens["ids"].row_starts())[:, tf.newaxis] + context_local
    is_query = (position >= 1) & (position <= q2)
    is_context = (position >= q2 + 2) & (position < q2 + 2 + len2)
    is_sep = (position == q2 + 1) | (position == q2 + 2 + len2)

    def take(values, index, mask, fill):
        padded = tf.concat([values, tf.zeros([1], values.dtype)], 0)
        safe = tf.where(mask, index, tf.size(values, tf.int64))
        return tf.where(mask, tf.gather(padded, safe), tf.cast(fill, values.dtype))

    token_ids = take(query.flat_values, query_index, is_query, tokenizer.pad_id)
    token_ids = tf.where(
        is_context, take(tokens["ids"].flat_values, context_index, is_context, 0), token_ids
    )
    token_ids = tf.where(is_sep, tokenizer.sep_id, token_ids)
    token_ids = tf.where(position == 0, tokenizer.cls_id, token_ids)
    padding_mask = position < tot2
    segment_ids = (position >= q2 + 2) & padding_mask
    token_starts = take(tokens["starts"].flat_values, context_index, is_context, -1)
    token_ends = take(tokens["ends"].flat_values, context_index, is_context, -1)

    # The original's max-context rule: the window where the token has the most context
    # (min(left, right) + 0.01 × window length, in float64 as Python; the first wins ties).
    overlap = tf.reduce_max((w + s - 1) // s) + 1
    candidate = (
        tf.maximum((context_local - w[:, tf.newaxis] + s[:, tf.newaxis]) // s[:, tf.newaxis], 0)
    )[..., tf.newaxis] + tf.range(tf.maximum(overlap, 1))  # (F, width, K)
    cand_start = candidate * s[:, tf.newaxis, tf.newaxis]
    cand_length = tf.minimum(
        w[:, tf.newaxis, tf.newaxis], n[:, tf.newaxis, tf.newaxis] - cand_start
    )
    local = context_local[..., tf.newaxis]
    inside = (
        (candidate < per_window(num_windows)[:, tf.newaxis, tf.newaxis])
        & (cand_start <= local)
        & (local <= cand_start + cand_length - 1)
    )
    score = tf.cast(
        tf.minimum(local - cand_start, cand_start + cand_length - 1 - local), tf.float64
    ) + tf.constant(0.01, tf.float64) * tf.cast(cand_length, tf.float64)
    score = tf.where(inside, score, tf.constant(-1e300, tf.float64))
    best = tf.reduce_max(score, axis=-1, keepdims=True)
    first = tf.reduce_min(tf.where(score == best, candidate, tf.int64.max), axis=-1)
    max_context = is_context & (first == window[:, tf.newaxis])

    def as_int32(value):
        return tf.cast(value, tf.int32)

    return {
        "inputs": {
            "token_ids": as_int32(token_ids),
            "segment_ids": as_int32(segment_ids),
            "padding_mask": as_int32(padding_mask),
        },
        "example": example,
        "window_start": start,
        "window_length": length,
        "context_offset": q + 2,
        "token_starts": token_starts,
        "token_ends": token_ends,
        "max_context": max_context,
        "tokens": tokens,
    }


def answer_positions(windows: dict, answer_start: tf.Tensor, answer_text: tf.Tensor) -> dict:
    """The labels of every window of `question_windows`: `start_positions`, `end_positions`
    (int32 `[windows]`, 0 = [CLS]) and `is_impossible` (int32 `[windows]`, 1 where the window
    does not hold the whole answer), as `features.squad_features` labels them.

    Args:
        windows: `question_windows`' output.
        answer_start: `[batch]` ints, the answer's first character in its context (code
            points: Python `str` indices).
        answer_text: `[batch]` `tf.string`, the answer as in the context; "" for a question
            without one (its `answer_start` is then not read).

    Raises:
        InvalidArgumentError (when run): where a context does not hold `answer_text` at
            `answer_start`.
    """
    tokens = windows["tokens"]
    text = tokens["text"]  # the contexts, invalid UTF-8 replaced as the offsets count it
    answer_length = tf.cast(tf.strings.length(answer_text, unit="UTF8_CHAR"), tf.int64)
    has_answer = answer_length > 0
    answer_start = tf.where(has_answer, tf.cast(answer_start, tf.int64), 0)
    answer_end = answer_start + answer_length
    context_length = tf.cast(tf.strings.length(text, unit="UTF8_CHAR"), tf.int64)
    in_range = (answer_start >= 0) & (answer_end <= context_length)
    safe_start = tf.where(in_range, answer_start, 0)
    safe_length = tf.where(in_range, answer_length, 0)
    found = tf.strings.substr(
        text, tf.cast(safe_start, tf.int32), tf.cast(safe_length, tf.int32), unit="UTF8_CHAR"
    )
    matches = ~has_answer | (in_range & tf.equal(found, answer_text))
    check = tf.debugging.Assert(
        tf.reduce_all(matches),
        [
            "`y`: `answer_text` must be the context's text at `answer_start` (character "
            "offsets, as Python `str` indices). Received, for the first such row:",
            tf.boolean_mask(answer_start, ~matches)[:1],
            tf.boolean_mask(answer_text, ~matches)[:1],
        ],
    )
    # `answer_token_span`: the first token ending after the start, the last starting before
    # the end (the offsets of a row increase: counting is bisecting).
    num_tokens = tokens["ids"].row_lengths()
    first = tf.reduce_sum(tf.cast(tokens["ends"] <= answer_start[:, tf.newaxis], tf.int64), axis=1)
    last = tf.reduce_sum(tf.cast(tokens["starts"] < answer_end[:, tf.newaxis], tf.int64), axis=1)
    first = tf.minimum(first, num_tokens - 1)
    last = tf.maximum(first, last - 1)

    example = windows["example"]
    first, last, has_answer = (tf.gather(v, example) for v in (first, last, has_answer))
    window_start = windows["window_start"]
    inside = has_answer & (window_start <= first) & (last < window_start + windows["window_length"])
    offset = windows["context_offset"] - window_start  # a context token's position - its index
    with tf.control_dependencies([check]):
        return {
            "start_positions": tf.cast(tf.where(inside, first + offset, 0), tf.int32),
            "end_positions": tf.cast(tf.where(inside, last + offset, 0), tf.int32),
            "is_impossible": tf.cast(~inside, tf.int32),
        }
