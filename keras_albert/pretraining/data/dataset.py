"""tf.data pipeline over pretraining TFRecords (ours or the original ALBERT's), for `model.fit`.

Files carry the original feature layout (`records`); they become our names when parsed
(`records.decode_record`). Each batch is
`(x, y, sample_weight)`:

- `x = {"token_ids", "segment_ids", "padding_mask"}` int32 `(batch, sequence_length)` and
  `"mask_positions"` int32 `(batch, max_predictions_per_sequence)`;
- `y = {"mlm": mask_ids}` int32 `(batch, max_predictions_per_sequence)` and
  `{"sop": sentence_order_label}` int32 `(batch,)`;
- `sample_weight = {"mlm": mask_weights}` float32 `(batch, max_predictions_per_sequence)` (0 on
  padded predictions) and `{"sop": ones}` float32 `(batch,)`.

With `dynamic_masking` the static masks in the files are undone and every epoch draws new ones
in-graph (RoBERTa-style) with the same scheme as `masking.mask_tokens`: n-gram whole-word
spans with p(n) ∝ 1/n, a budget of `round(masked_lm_prob * non-special tokens)` capped by
`max_predictions_per_sequence`, 80% `[MASK]` / 10% random non-special token / 10% unchanged.
Both run on whole batches (`restore_masked_tokens`, `dynamic_mask`), one call per batch with
one seed per batch, each row drawn on its own.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Sequence

import numpy as np
import tensorflow as tf

from keras_albert import validation
from keras_albert.pretraining.data.records import decode_record
from keras_albert.pretraining.data.vocabulary import TokenizerLike


@dataclasses.dataclass(frozen=True, eq=False)
class DynamicMasking:
    """Vocabulary facts and parameters for in-graph masking.

    Args:
        word_start: bool array `(vocabulary_size,)`, the tokenizer's `is_word_start`.
        special_ids: ids never masked and never used as random replacements.
        mask_id: the `[MASK]` id.
        masked_lm_prob: fraction of non-special tokens to mask.
        max_ngram: longest span in words; p(n) ∝ 1/n.

    Example:

        masking = DynamicMasking.from_tokenizer(AlbertTokenizer(proto="30k-clean.model"))
        dataset = make_pretraining_dataset(
            "runs/data/*.tfrecord", 32, 128, 20, dynamic_masking=masking
        )
        model.fit(dataset, ...)
    """

    word_start: np.ndarray
    special_ids: tuple[int, ...]
    mask_id: int
    masked_lm_prob: float = 0.15
    max_ngram: int = 3

    def __post_init__(self):
        word_start = np.asarray(self.word_start)
        if word_start.ndim != 1 or word_start.dtype != bool:
            raise ValueError(
                "`word_start` must be a 1-D bool array over the vocabulary. Received: "
                f"word_start of shape {word_start.shape} and dtype {word_start.dtype}"
            )
        size = word_start.shape[0]
        for i in self.special_ids:
            validation.require_index("special_ids", i, size)
        validation.require_index("mask_id", self.mask_id, size)
        validation.require_rate("masked_lm_prob", self.masked_lm_prob)
        validation.require_int("max_ngram", self.max_ngram, 1)

    @classmethod
    def from_tokenizer(
        cls, tokenizer: TokenizerLike, masked_lm_prob: float = 0.15, max_ngram: int = 3
    ) -> DynamicMasking:
        word_start = np.array(
            [tokenizer.is_word_start(i) for i in range(tokenizer.vocabulary_size)], bool
        )
        return cls(
            word_start,
            tuple(sorted(tokenizer.special_ids)),
            tokenizer.mask_id,
            masked_lm_prob,
            max_ngram,
        )


def restore_masked_tokens(features: dict[str, tf.Tensor]) -> tf.Tensor:
    """A batch's `token_ids` `(batch, sequence_length)` with the static predictions put back
    (padded predictions have weight 0)."""
    real = features["mask_weights"] > 0  # (batch, max_predictions)
    positions = features["mask_positions"]
    rows = tf.broadcast_to(tf.range(tf.shape(positions)[0])[:, None], tf.shape(positions))
    indices = tf.boolean_mask(tf.stack([rows, positions], -1), real)  # (num_real, 2)
    ids = tf.boolean_mask(features["mask_ids"], real)
    return tf.tensor_scatter_nd_update(features["token_ids"], indices, ids)


def dynamic_mask(
    token_ids: tf.Tensor,
    padding_mask: tf.Tensor,
    seed: tf.Tensor,
    masking: DynamicMasking,
    max_predictions_per_sequence: int,
) -> dict[str, tf.Tensor]:
    """Masks a batch in-graph, every row on its own draws; stateless: the same `seed` gives
    the same masks.

    Per row: spans, n ~ p(n), are drawn until their word count reaches the budget (each word
    has at least one piece); they are laid out uniformly at random without overlap over the
    row's words (k spans of total length L among W words ↔ k slots among W - L + k); spans
    across a segment boundary are dropped; the rest are taken in random order while the piece
    count fits the budget, the one that overshoots with probability remaining / size. Rows
    differ in their word and span counts, so every per-row quantity is kept at a static width
    (words: `sequence_length`, spans: `min(max_predictions_per_sequence, sequence_length)`)
    with a row's own count saying how much of it is real. One call masks a whole batch: the
    ops are the same in number as for one row, so their fixed cost is paid once per batch.

    Args:
        token_ids: int32 `(batch, sequence_length)`, unmasked; `sequence_length` static.
        padding_mask: int `(batch, sequence_length)`, 1 on real tokens.
        seed: int `(2,)` stateless seed of the whole batch.
        masking: vocabulary facts and parameters.
        max_predictions_per_sequence: size of the prediction outputs.

    Returns:
        `token_ids` (masked, `(batch, sequence_length)`), `mask_positions` (ascending),
        `mask_ids`, `mask_weights` (each `(batch, max_predictions_per_sequence)`) and
        `span_lengths` (accepted spans' lengths in words, in the order of their positions,
        0-padded, `(batch, max_predictions_per_sequence)`).
    """
    max_predictions = max_predictions_per_sequence
    token_ids = tf.cast(token_ids, tf.int32)
    sequence_length = token_ids.shape[-1]
    if token_ids.shape.rank != 2 or sequence_length is None:
        raise ValueError(
            "`token_ids` must be of shape (batch, sequence_length) with a static "
            f"sequence_length. Received: token_ids of shape {token_ids.shape}"
        )
    # A row has at most sequence_length words, hence spans and masked tokens.
    num_draws = min(max_predictions, sequence_length)
    vocabulary_size = masking.word_start.shape[0]
    special_table = np.zeros(vocabulary_size, bool)
    special_table[list(masking.special_ids)] = True
    replacements = tf.constant(np.flatnonzero(~special_table), tf.int32)
    special_table = tf.constant(special_table)
    word_start_table = tf.constant(masking.word_start)
    probabilities = 1.0 / np.arange(1, masking.max_ngram + 1)
    log_probabilities = tf.constant(np.log(probabilities / probabilities.sum())[None], tf.float32)
    seeds = tf.random.experimental.stateless_split(tf.cast(seed, tf.int64), 6)

    batch_size = tf.shape(token_ids)[0]
    special = tf.gather(special_table, token_ids) | (tf.cast(padding_mask, tf.int32) == 0)
    candidate = ~special  # (B, S)
    previous_special = tf.concat([tf.ones([batch_size, 1], tf.bool), special[:, :-1]], 1)
    is_start = candidate & (tf.gather(word_start_table, token_ids) | previous_special)
    num_words = tf.reduce_sum(tf.cast(is_start, tf.int32), 1)  # (B,)
    # Word index of every candidate token; special tokens point at an extra slot S, so a
    # row's words are columns [0, num_words) of width S + 1.
    word_of_token = tf.where(
        candidate, tf.cumsum(tf.cast(is_start, tf.int32), 1) - 1, sequence_length
    )
    width = sequence_length + 1
    row_offsets = tf.range(batch_size)[:, None] * width
    word_segments = tf.reshape(word_of_token + row_offsets, [-1])
    num_segments = batch_size * width

    def take(values, indices):  # values[b, indices[b, ...]] of every row b
        return tf.gather(values, indices, batch_dims=1)

    def per_word(values, reduce):  # (B, S) token values → (B, S + 1) per word
        reduced = reduce(tf.reshape(values, [-1]), word_segments, num_segments)
        return tf.reshape(reduced, [batch_size, width])

    # A block is a run between specials; all the pieces of a word lie in one.
    word_block = per_word(tf.cumsum(tf.cast(special, tf.int32), 1), tf.math.unsorted_segment_max)
    word_sizes = per_word(tf.cast(candidate, tf.int32), tf.math.unsorted_segment_sum)
    word_sizes = tf.concat([word_sizes[:, :-1], tf.zeros([batch_size, 1], tf.int32)], 1)
    word_offsets = tf.cumsum(word_sizes, 1, exclusive=True)  # (B, S + 1) pieces before word w

    num_candidates = tf.reduce_sum(tf.cast(candidate, tf.int32), 1)
    budget = tf.maximum(
        1,
        tf.cast(
            tf.floor(masking.masked_lm_prob * tf.cast(num_candidates, tf.float32) + 0.5), tf.int32
        ),
    )
    if masking.masked_lm_prob == 0 or max_predictions == 0:
        budget = tf.zeros_like(num_candidates)
    budget = tf.where(num_candidates > 0, tf.minimum(budget, max_predictions), 0)  # (B,)

    # (B, K) span lengths in words; the prefix whose words reach the budget is laid out.
    lengths = tf.cast(
        tf.random.stateless_categorical(
            tf.tile(log_probabilities, [batch_size, 1]), num_draws, seeds[0]
        )
        + 1,
        tf.int32,
    )
    # A span longer than the sequence shrinks to it (as the Python scheme's fallback).
    lengths = tf.minimum(lengths, tf.maximum(num_words, 1)[:, None])
    ends = tf.cumsum(lengths, 1)
    active = (ends - lengths < budget[:, None]) & (ends <= num_words[:, None])  # a prefix
    num_spans = tf.reduce_sum(tf.cast(active, tf.int32), 1)
    lengths = tf.where(active, lengths, 0)
    num_slots = num_words - tf.reduce_sum(lengths, 1) + num_spans
    # The num_spans largest of num_slots uniforms: a uniform choice of slots.
    uniforms = tf.random.stateless_uniform([batch_size, sequence_length], seeds[1])
    uniforms = tf.where(tf.range(sequence_length) < num_slots[:, None], uniforms, -1.0)
    _, slots = tf.math.top_k(uniforms, num_draws)
    slots = tf.sort(tf.where(active, slots, sequence_length), 1)  # (B, K) active ones first
    starts = tf.where(active, slots + tf.cumsum(lengths - 1, 1, exclusive=True), 0)
    stops = starts + lengths
    safe_last = tf.maximum(stops - 1, 0)
    valid = active & (take(word_block, starts) == take(word_block, safe_last))
    sizes = take(word_offsets, stops) - take(word_offsets, starts)

    # Inactive spans sort last.
    keys = tf.random.stateless_uniform([batch_size, num_draws], seeds[2])
    order = tf.argsort(tf.where(active, keys, 2.0), 1)
    valid_in_order = take(valid, order)
    sizes_in_order = tf.where(valid_in_order, take(sizes, order), 0)
    total = tf.cumsum(sizes_in_order, 1)
    accepted_in_order = valid_in_order & (total <= budget[:, None])
    overflow = valid_in_order & (total > budget[:, None])
    first = tf.reduce_sum(tf.cast(tf.cumsum(tf.cast(overflow, tf.int32), 1) == 0, tf.int32), 1)
    at_first = tf.one_hot(first, num_draws, dtype=tf.int32)  # all zero without an overflow
    first_size = tf.reduce_sum(at_first * sizes_in_order, 1)
    first_total = tf.reduce_sum(at_first * total, 1)
    remaining = budget - (first_total - first_size)
    keep_first = (first_total <= max_predictions) & (
        tf.random.stateless_uniform([batch_size], seeds[3]) * tf.cast(first_size, tf.float32)
        < tf.cast(remaining, tf.float32)
    )
    accepted_in_order |= (at_first > 0) & keep_first[:, None]
    accepted = take(accepted_in_order, tf.argsort(order, 1))  # (B, K)

    # Word w is masked iff an accepted span covers it: +1 at its start, -1 at its stop.
    ones = tf.cast(accepted, tf.int32)
    delta = tf.math.unsorted_segment_sum(
        tf.reshape(tf.concat([ones, -ones], 1), [-1]),
        tf.reshape(tf.concat([starts, stops], 1) + row_offsets, [-1]),
        num_segments,
    )
    # (B, S + 1); column S (special tokens) stays False: every start is matched by its stop.
    word_masked = tf.cumsum(tf.reshape(delta, [batch_size, width]), 1) > 0
    token_masked = take(word_masked, word_of_token)  # (B, S)

    # Masked positions, ascending: the largest S - position of the masked tokens.
    position_keys = tf.where(token_masked, sequence_length - tf.range(sequence_length), 0)
    position_keys, _ = tf.math.top_k(position_keys, num_draws)
    weights = position_keys > 0  # (B, K)
    positions = tf.where(weights, sequence_length - position_keys, 0)
    original = tf.where(weights, take(token_ids, positions), 0)

    # Drawn for every token, kept for the masked ones: one op for the batch.
    draw = tf.random.stateless_uniform([batch_size, sequence_length], seeds[4])
    random_ids = tf.gather(
        replacements,
        tf.random.stateless_uniform(
            [batch_size, sequence_length], seeds[5], maxval=replacements.shape[0], dtype=tf.int32
        ),
    )
    new_ids = tf.where(draw < 0.8, masking.mask_id, tf.where(draw < 0.9, random_ids, token_ids))
    masked_token_ids = tf.where(token_masked, new_ids, token_ids)

    # Accepted spans first, in their order (a stable sort on "not accepted").
    span_order = tf.argsort(tf.cast(~accepted, tf.int32), 1, stable=True)
    span_lengths = tf.where(take(accepted, span_order), take(lengths, span_order), 0)

    def pad(values, dtype):  # (B, K) → (B, max_predictions)
        values = tf.pad(tf.cast(values, dtype), [[0, 0], [0, max_predictions - num_draws]])
        return tf.ensure_shape(values, [token_ids.shape[0], max_predictions])

    return {
        "token_ids": masked_token_ids,
        "mask_positions": pad(positions, tf.int32),
        "mask_ids": pad(original, tf.int32),
        "mask_weights": pad(weights, tf.float32),
        "span_lengths": pad(span_lengths, tf.int32),
    }


@contextlib.contextmanager
def _op_seeds_from(seed):
    """Seeds the ops made inside from `seed` alone when `seed` is a tensor (a pipeline made
    per pass inside `flat_map`, whose seed depends on the pass).

    There TensorFlow would mix the graph's seed (the global one) into the op seed, and with a
    global seed of 0 it compares the tensor seed with 0 in Python, which fails in a traced
    function. The graph's seed is cleared meanwhile, so such pipelines do not depend on the
    global seed at all. A Python `seed` (or None) is left to TensorFlow's usual rule.
    """
    if not isinstance(seed, tf.Tensor) or tf.executing_eagerly():
        yield
        return
    graph = tf.compat.v1.get_default_graph()
    saved = graph.seed
    graph.seed = None
    try:
        yield
    finally:
        graph.seed = saved


def _to_fit_inputs(features: dict[str, tf.Tensor]):
    x = {name: features[name] for name in ("token_ids", "segment_ids", "padding_mask")}
    x["mask_positions"] = features["mask_positions"]
    y = {"mlm": features["mask_ids"], "sop": features["sentence_order_label"]}
    sample_weight = {
        "mlm": features["mask_weights"],
        "sop": tf.ones_like(features["sentence_order_label"], tf.float32),
    }
    return x, y, sample_weight


def make_pretraining_dataset(
    file_pattern: str | Sequence[str],
    batch_size: int,
    sequence_length: int,
    max_predictions_per_sequence: int,
    input_context: tf.distribute.InputContext | None = None,
    shuffle: bool = True,
    shuffle_buffer_size: int = 10_000,
    seed: int | None = None,
    repeat: bool = False,
    cycle_length: int = 8,
    dynamic_masking: DynamicMasking | None = None,
    drop_remainder: bool = True,
) -> tf.data.Dataset:
    """Batches of `(x, y, sample_weight)` from sharded pretraining TFRecords (see module doc).

    Args:
        file_pattern: a glob, or a list of globs / files.
        batch_size: global batch size; with `input_context` each pipeline gets its replicas'
            share (`input_context.get_per_replica_batch_size`).
        sequence_length: the `sequence_length` the files were written with.
        max_predictions_per_sequence: predictions per example (in the files; with
            `dynamic_masking`, of the output).
        input_context: from `strategy.distribute_datasets_from_function`; files (or, with
            fewer files than pipelines, records) are sharded per input pipeline.
        shuffle: shuffle files and records (buffer `shuffle_buffer_size`), reshuffled per epoch.
        seed: seed of the shuffles and of dynamic masking (None: different every run).
        repeat: repeat forever (for `steps_per_epoch`).
        cycle_length: files read in parallel.
        dynamic_masking: mask in-graph, anew each epoch, instead of using the files' masks
            (each batch, the last partial one included, in one call).
        drop_remainder: drop the last partial batch (static shapes, as a TPU needs); `False`
            keeps it (evaluation over every record).

    Returns:
        A `tf.data.Dataset`, prefetched; with `drop_remainder`, of static shapes.
    """
    validation.require_int("batch_size", batch_size, 1)
    validation.require_int("sequence_length", sequence_length, 3)
    validation.require_int("max_predictions_per_sequence", max_predictions_per_sequence, 0)
    validation.require_int("shuffle_buffer_size", shuffle_buffer_size, 1)
    validation.require_int("cycle_length", cycle_length, 1)
    patterns = [file_pattern] if isinstance(file_pattern, str) else list(file_pattern)
    files = sorted({path for pattern in patterns for path in tf.io.gfile.glob(pattern)})
    if not files:
        raise ValueError(f"`file_pattern` matches no file. Received: file_pattern={file_pattern!r}")

    num_pipelines, pipeline_id = 1, 0
    if input_context is not None:
        num_pipelines = input_context.num_input_pipelines
        pipeline_id = input_context.input_pipeline_id
        batch_size = input_context.get_per_replica_batch_size(batch_size)
    shard_files = num_pipelines > 1 and len(files) >= num_pipelines
    if shard_files:
        files = files[pipeline_id::num_pipelines]

    dataset = tf.data.Dataset.from_tensor_slices(files)
    if shuffle:
        with _op_seeds_from(seed):
            dataset = dataset.shuffle(len(files), seed=seed, reshuffle_each_iteration=True)
    dataset = dataset.interleave(
        tf.data.TFRecordDataset,
        cycle_length=min(cycle_length, len(files)),
        num_parallel_calls=tf.data.AUTOTUNE,
        deterministic=not shuffle or seed is not None,
    )
    if num_pipelines > 1 and not shard_files:
        dataset = dataset.shard(num_pipelines, pipeline_id)
    if shuffle:
        with _op_seeds_from(seed):
            dataset = dataset.shuffle(shuffle_buffer_size, seed=seed, reshuffle_each_iteration=True)
    if repeat:
        dataset = dataset.repeat()

    dynamic = dynamic_masking is not None
    dataset = dataset.map(
        lambda record: decode_record(
            record, sequence_length, max_predictions_per_sequence, dynamic
        ),
        num_parallel_calls=tf.data.AUTOTUNE,
    )
    dataset = dataset.batch(batch_size, drop_remainder=drop_remainder)
    if dynamic:
        with _op_seeds_from(seed):
            seeds = tf.data.Dataset.random(seed=seed, rerandomize_each_iteration=True)
        seeds = seeds.batch(2)
        dataset = tf.data.Dataset.zip(dataset, seeds)

        def remask(features, batch_seed):
            # One call per batch: the masking's many small ops run once for all its rows.
            token_ids = restore_masked_tokens(features)
            masked = dynamic_mask(
                token_ids,
                features["padding_mask"],
                batch_seed,
                dynamic_masking,
                max_predictions_per_sequence,
            )
            masked.pop("span_lengths")
            return {**features, **masked}

        dataset = dataset.map(remask, num_parallel_calls=tf.data.AUTOTUNE)
    dataset = dataset.map(_to_fit_inputs, num_parallel_calls=tf.data.AUTOTUNE)
    return dataset.prefetch(tf.data.AUTOTUNE)
