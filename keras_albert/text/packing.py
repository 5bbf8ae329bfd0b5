"""Packing token ids into ALBERT's model inputs: `[CLS] A [SEP]` or `[CLS] A [SEP] B [SEP]`.

keras-hub's `MultiSegmentPacker` is not used: its longest-first-like strategy ("round_robin")
runs TensorFlow Text's `RoundRobinTrimmer`, whose `RoundRobinTrim`/`RoundRobinGenerateMasks` ops
are missing from stock TF Serving before 2.20, and its "waterfall" strategy truncates the first
segment first, not the longer one. `AlbertPacker` computes the original truncation in closed form
with plain TensorFlow ops (ragged range, boolean mask, gather, to_tensor).
"""

from __future__ import annotations

import keras
import tensorflow as tf


def truncated_lengths(
    first_length: tf.Tensor, second_length: tf.Tensor, budget: int
) -> tuple[tf.Tensor, tf.Tensor]:
    """Segment lengths after google-research/albert's `_truncate_seq_pair`.

    The original drops the last token of the longer segment (the second on a tie) until both
    fit in `budget`. The result in closed form: the first segment keeps
    `min(first_length, max(ceil(budget / 2), budget - second_length))` tokens and the second
    fills what is left, up to its length. Works elementwise on int64 tensors.
    """
    half = (budget + 1) // 2
    first = tf.minimum(
        first_length, tf.maximum(tf.cast(half, first_length.dtype), budget - second_length)
    )
    second = tf.minimum(second_length, budget - first)
    return first, second


def concat_rows(parts: list[tf.RaggedTensor]) -> tf.RaggedTensor:
    """Row `i` of the result is row `i` of every part, one after the other: `tf.concat(parts,
    axis=1)` for ragged parts of shape (batch, None) with the same number of rows.

    `tf.concat` on ragged tensors along axis 1 orders the rows with an integer `Transpose`, which
    TensorFlow's oneDNN graph pass (on by default on AVX-512 VNNI/BF16 CPUs) reports on stderr
    as `E0000 … oneDNN supports DT_INT64 only on platforms with AVX-512` in every process that
    runs it, a serving process included. Here the row order is computed arithmetically instead.
    """
    count = len(parts)
    stacked = tf.concat(parts, axis=0)  # part-major: all rows of parts[0], then of parts[1], …
    nrows = parts[0].nrows()
    position = tf.range(nrows * count)  # row-major over (row, part)
    order = (position % count) * nrows + position // count
    interleaved = tf.gather(stacked, order)  # (batch * count, None)
    lengths = tf.reduce_sum(tf.reshape(interleaved.row_lengths(), tf.stack([nrows, count])), 1)
    return tf.RaggedTensor.from_row_lengths(interleaved.flat_values, lengths, validate=False)


@keras.saving.register_keras_serializable(package="keras_albert")
class AlbertPacker(keras.layers.Layer):
    """Packs one or two segments of token ids into `token_ids`, `segment_ids`, `padding_mask`.

    One segment gives `[CLS] A [SEP]`, two give `[CLS] A [SEP] B [SEP]`; segment ids are 0 up to
    and including the first `[SEP]` and 1 after it; `<pad>` fills the rest. Segments too long for
    `sequence_length` are truncated as the original ALBERT does: a single segment to
    `sequence_length - 2` tokens; a pair by dropping tokens from the end of the longer segment
    (the second on a tie) until they fit in `sequence_length - 3`. Uses plain TensorFlow ops only,
    so it runs in `tf.data` and in stock TF Serving.

    Inputs are a batch of segments (`tf.RaggedTensor` or dense tensor of shape (batch, None)) or
    a single unbatched example (shape (None,)), or a tuple/list of two such. Outputs, int32 except
    the mask: `token_ids` and `segment_ids` of shape (batch, sequence_length) (or
    (sequence_length,) when unbatched) and `padding_mask`, bool, True on real tokens.

    Args:
        sequence_length: length of the packed sequence, at least 3.
        cls_id: id of `[CLS]`.
        sep_id: id of `[SEP]`.
        pad_id: id of `<pad>`.

    Example:
    >>> import tensorflow as tf
    >>> from keras_albert import AlbertPacker
    >>> packer = AlbertPacker(sequence_length=8, cls_id=2, sep_id=3, pad_id=0)
    >>> first = tf.ragged.constant([[10, 11, 12]])
    >>> second = tf.ragged.constant([[20, 21]])
    >>> packer((first, second))["token_ids"].numpy().tolist()
    [[2, 10, 11, 12, 3, 20, 21, 3]]
    """

    def __init__(self, sequence_length, cls_id, sep_id, pad_id, **kwargs):
        super().__init__(**kwargs)
        if isinstance(sequence_length, bool) or not isinstance(sequence_length, int):
            raise TypeError(
                f"`sequence_length` must be an int. Received: sequence_length={sequence_length!r}"
            )
        if sequence_length < 3:
            raise ValueError(
                "`sequence_length` must be at least 3 ([CLS] and two [SEP]). "
                f"Received: sequence_length={sequence_length}"
            )
        for argument, value in (("cls_id", cls_id), ("sep_id", sep_id), ("pad_id", pad_id)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(
                    f"`{argument}` must be a non-negative int. Received: {argument}={value!r}"
                )
        self.sequence_length = sequence_length
        self.cls_id = cls_id
        self.sep_id = sep_id
        self.pad_id = pad_id
        # Ragged and unbatched inputs pass through untouched (as in keras-hub's preprocessing).
        self._convert_input_args = False
        self._allow_non_tensor_positional_args = True
        self.built = True

    def call(self, inputs):
        segments = list(inputs) if isinstance(inputs, (tuple, list)) else [inputs]
        if len(segments) not in (1, 2):
            raise ValueError(
                f"`inputs` must be one or two segments. Received: {len(segments)} segments"
            )
        segments = [_as_ragged_ids(segment) for segment in segments]
        ranks = {segment.shape.rank for segment in segments}
        if len(ranks) != 1 or ranks.pop() not in (1, 2):
            raise ValueError(
                "Each segment must have shape (batch, None) or (None,), and all the same rank. "
                f"Received: shapes {[segment.shape for segment in segments]}"
            )
        unbatched = segments[0].shape.rank == 1
        if unbatched:
            segments = [tf.RaggedTensor.from_tensor(segment[tf.newaxis]) for segment in segments]

        outputs = pack_segments(
            segments, self.sequence_length, self.cls_id, self.sep_id, self.pad_id
        )
        if unbatched:
            outputs = {name: value[0] for name, value in outputs.items()}
        return outputs

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "sequence_length": self.sequence_length,
                "cls_id": self.cls_id,
                "sep_id": self.sep_id,
                "pad_id": self.pad_id,
            }
        )
        return config


def pack_segments(
    segments: list[tf.RaggedTensor],
    sequence_length: int | tf.Tensor,
    cls_id: int,
    sep_id: int,
    pad_id: int,
) -> dict:
    """`AlbertPacker`'s packing of one or two int32 ragged segments `(batch, None)`, with
    `sequence_length` an int or a scalar int32 tensor (the TF-Hub preprocessor's
    `bert_pack_inputs(..., seq_length=N)` takes it at call time). `padding_mask` is bool."""
    lengths = [segment.row_lengths() for segment in segments]  # (batch,) each
    budget = tf.cast(sequence_length, tf.int64)
    if len(segments) == 1:
        lengths = [tf.minimum(lengths[0], budget - 2)]
    else:
        lengths = list(truncated_lengths(lengths[0], lengths[1], budget - 3))
    segments = [
        _truncate(segment, length) for segment, length in zip(segments, lengths, strict=True)
    ]

    batch_size = segments[0].nrows()
    cls = tf.RaggedTensor.from_tensor(tf.fill(tf.stack([batch_size, 1]), cls_id))
    sep = tf.RaggedTensor.from_tensor(tf.fill(tf.stack([batch_size, 1]), sep_id))
    token_parts, segment_parts = [cls], [tf.zeros_like(cls)]
    for index, segment in enumerate(segments):
        token_parts += [segment, sep]
        segment_parts += [tf.zeros_like(segment) + index, tf.zeros_like(sep) + index]
    token_ids = concat_rows(token_parts)  # (batch, None), at most sequence_length
    segment_ids = concat_rows(segment_parts)

    if isinstance(sequence_length, int):
        shape = [None, sequence_length]
    else:  # known at run time only
        shape = tf.stack([batch_size, tf.cast(sequence_length, tf.int64)])
    return {
        "token_ids": token_ids.to_tensor(default_value=pad_id, shape=shape),
        "segment_ids": segment_ids.to_tensor(default_value=0, shape=shape),
        "padding_mask": tf.sequence_mask(token_ids.row_lengths(), sequence_length),
    }


def _as_ragged_ids(segment) -> tf.RaggedTensor | tf.Tensor:
    if not isinstance(segment, tf.RaggedTensor):
        segment = tf.convert_to_tensor(segment)
    if not segment.dtype.is_integer:
        raise TypeError(
            f"Segments must hold integer token ids. Received: dtype={segment.dtype.name}"
        )
    segment = tf.cast(segment, tf.int32)
    if isinstance(segment, tf.RaggedTensor) or segment.shape.rank == 1:
        return segment
    return tf.RaggedTensor.from_tensor(segment)


def _truncate(segment: tf.RaggedTensor, length: tf.Tensor) -> tf.RaggedTensor:
    # segment: (batch, None); length: (batch,) -> each row keeps its first `length` ids.
    positions = tf.ragged.range(segment.row_lengths())
    return tf.ragged.boolean_mask(segment, positions < tf.expand_dims(length, 1))
