"""The ONE schema of the pretraining records: the original ALBERT TFRecord layout.

Files hold the original `create_pretraining_data.py`'s features, one `tf.train.Example` each:

    feature                 dtype    length
    input_ids               int64    sequence_length
    input_mask              int64    sequence_length   1 on real tokens
    segment_ids             int64    sequence_length
    token_boundary          int64    sequence_length   1 where a word starts (written, not read)
    masked_lm_positions     int64    max_predictions_per_sequence
    masked_lm_ids           int64    max_predictions_per_sequence
    masked_lm_weights       float32  max_predictions_per_sequence   1.0 per real prediction
    next_sentence_labels    int64    1   the sentence-order label in ALBERT's files

This module alone spells those names (besides `keras_albert/convert/` tables). Everything past
`decode_record` uses ours: `token_ids`, `padding_mask`, `segment_ids`, `mask_positions`,
`mask_ids`, `mask_weights`, `sentence_order_label`.

Writing (`encode_example`) needs numpy and protobuf only, so worker processes never import
TensorFlow; reading (`decode_record`, `inspect_records`, `count_records`) imports it when called.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import struct
from collections.abc import Sequence

import numpy as np

SEQUENCE_FEATURES = ("input_ids", "input_mask", "segment_ids")
PREDICTION_FEATURES = ("masked_lm_positions", "masked_lm_ids", "masked_lm_weights")
LABEL_FEATURE = "next_sentence_labels"
TOKEN_BOUNDARY_FEATURE = "token_boundary"
# Every feature written, in the order written.
ORIGINAL_FEATURE_NAMES = (
    *SEQUENCE_FEATURES,
    *PREDICTION_FEATURES,
    LABEL_FEATURE,
    TOKEN_BOUNDARY_FEATURE,
)
# Original name → ours, for the features a reader needs.
OUR_NAMES = {
    "input_ids": "token_ids",
    "input_mask": "padding_mask",
    "segment_ids": "segment_ids",
    "masked_lm_positions": "mask_positions",
    "masked_lm_ids": "mask_ids",
    "masked_lm_weights": "mask_weights",
    LABEL_FEATURE: "sentence_order_label",
}
_FLOAT_FEATURES = ("masked_lm_weights",)


@dataclasses.dataclass
class PretrainingExample:
    """One example before padding: `[CLS] A [SEP] B [SEP]`.

    `token_ids` already carry the masking; `mask_ids` are the original tokens at
    `mask_positions` (ascending). `span_lengths` are the masked n-grams' lengths in words.
    """

    token_ids: list[int]
    segment_ids: list[int]
    token_boundary: list[int]
    mask_positions: list[int]
    mask_ids: list[int]
    sentence_order_label: int
    span_lengths: list[int]
    # A and B are the two halves of one sentence (a one-sentence chunk), not whole sentences.
    cut_inside_sentence: bool = False

    def original_token_ids(self) -> list[int]:
        """`token_ids` with the masked positions restored."""
        restored = list(self.token_ids)
        for position, token_id in zip(self.mask_positions, self.mask_ids, strict=True):
            restored[position] = token_id
        return restored


def pad_example(
    example: PretrainingExample, sequence_length: int, max_predictions_per_sequence: int
) -> dict[str, np.ndarray]:
    """The example as the original's feature dict (padded with zeros; weights 1.0 per mask)."""
    length = len(example.token_ids)
    num_masked = len(example.mask_positions)
    if length > sequence_length or num_masked > max_predictions_per_sequence:
        raise ValueError(
            f"`example` must have at most {sequence_length} tokens and "
            f"{max_predictions_per_sequence} masks. Received: example with {length} tokens "
            f"and {num_masked} masks"
        )

    def padded(values, size, dtype=np.int64):
        array = np.zeros(size, dtype)
        array[: len(values)] = values
        return array

    return {
        "input_ids": padded(example.token_ids, sequence_length),
        "input_mask": padded([1] * length, sequence_length),
        "segment_ids": padded(example.segment_ids, sequence_length),
        "masked_lm_positions": padded(example.mask_positions, max_predictions_per_sequence),
        "masked_lm_ids": padded(example.mask_ids, max_predictions_per_sequence),
        "masked_lm_weights": padded([1.0] * num_masked, max_predictions_per_sequence, np.float32),
        LABEL_FEATURE: np.array([example.sentence_order_label], np.int64),
        TOKEN_BOUNDARY_FEATURE: padded(example.token_boundary, sequence_length),
    }


@functools.cache
def _example_message_class():
    """`tensorflow.Example` built with protobuf alone, in a private descriptor pool.

    Workers serialize without importing TensorFlow; the schema is tensorflow/core/example's
    (example.proto, feature.proto), so the bytes are those of `tf.train.Example`.
    """
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    field = descriptor_pb2.FieldDescriptorProto
    file = descriptor_pb2.FileDescriptorProto(
        name="keras_albert/example.proto", package="tensorflow", syntax="proto3"
    )

    def message(name, *fields, nested=()):
        proto = file.message_type.add(name=name)
        proto.nested_type.extend(nested)
        for number, (field_name, label, kind, type_name) in enumerate(fields, 1):
            proto.field.add(
                name=field_name, number=number, label=label, type=kind, type_name=type_name
            )
        return proto

    repeated, optional = field.LABEL_REPEATED, field.LABEL_OPTIONAL
    message("BytesList", ("value", repeated, field.TYPE_BYTES, None))
    message("FloatList", ("value", repeated, field.TYPE_FLOAT, None))
    message("Int64List", ("value", repeated, field.TYPE_INT64, None))
    feature = message(
        "Feature",
        ("bytes_list", optional, field.TYPE_MESSAGE, ".tensorflow.BytesList"),
        ("float_list", optional, field.TYPE_MESSAGE, ".tensorflow.FloatList"),
        ("int64_list", optional, field.TYPE_MESSAGE, ".tensorflow.Int64List"),
    )
    feature.oneof_decl.add(name="kind")
    for f in feature.field:
        f.oneof_index = 0
    entry = descriptor_pb2.DescriptorProto(name="FeatureEntry")
    entry.options.map_entry = True
    entry.field.add(name="key", number=1, label=optional, type=field.TYPE_STRING)
    entry.field.add(
        name="value",
        number=2,
        label=optional,
        type=field.TYPE_MESSAGE,
        type_name=".tensorflow.Feature",
    )
    message(
        "Features",
        ("feature", repeated, field.TYPE_MESSAGE, ".tensorflow.Features.FeatureEntry"),
        nested=[entry],
    )
    message("Example", ("features", optional, field.TYPE_MESSAGE, ".tensorflow.Features"))
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("tensorflow.Example"))


def serialize_features(features: dict[str, np.ndarray]) -> bytes:
    """A serialized `tf.train.Example` with the original's feature names and types."""
    example = _example_message_class()()
    feature = example.features.feature
    for name in ORIGINAL_FEATURE_NAMES:
        values = features[name]
        if values.dtype == np.float32:
            feature[name].float_list.value.extend(values.tolist())
        else:
            feature[name].int64_list.value.extend(values.tolist())
    return example.SerializeToString(deterministic=True)


def encode_example(
    example: PretrainingExample, sequence_length: int, max_predictions_per_sequence: int
) -> bytes:
    """One example → the bytes of its `tf.train.Example` in the original layout."""
    return serialize_features(pad_example(example, sequence_length, max_predictions_per_sequence))


def feature_spec(sequence_length: int, max_predictions_per_sequence: int, dynamic: bool) -> dict:
    """`tf.io.parse_single_example`'s spec; `dynamic` reads any number of predictions."""
    import tensorflow as tf

    spec = {name: tf.io.FixedLenFeature([sequence_length], tf.int64) for name in SEQUENCE_FEATURES}
    spec[LABEL_FEATURE] = tf.io.FixedLenFeature([1], tf.int64)
    for name in PREDICTION_FEATURES:
        dtype = tf.float32 if name in _FLOAT_FEATURES else tf.int64
        if dynamic:
            # Any number of static predictions (0 for unmasked files): they are undone anyway.
            spec[name] = tf.io.VarLenFeature(dtype)
        else:
            spec[name] = tf.io.FixedLenFeature([max_predictions_per_sequence], dtype)
    return spec


def decode_record(
    record, sequence_length: int, max_predictions_per_sequence: int, dynamic: bool = False
) -> dict:
    """One serialized `tf.train.Example` → our names (int32 / float32), no batching."""
    import tensorflow as tf

    spec = feature_spec(sequence_length, max_predictions_per_sequence, dynamic)
    parsed = tf.io.parse_single_example(record, spec)
    features = {}
    for name, ours in OUR_NAMES.items():
        value = parsed[name]
        if isinstance(value, tf.SparseTensor):
            value = tf.sparse.to_dense(value)
        if name == LABEL_FEATURE:
            value = value[0]
        features[ours] = value if name in _FLOAT_FEATURES else tf.cast(value, tf.int32)
    return features


@dataclasses.dataclass(frozen=True)
class RecordLayout:
    """What the pretraining records hold, read from their first records."""

    files: tuple[str, ...]
    sequence_length: int
    max_predictions_per_sequence: int
    num_empty_files: int


def inspect_records(file_pattern: str, name: str = "file_pattern") -> RecordLayout:
    """Finds the files of `file_pattern` (comma-separated globs) and checks their first records.

    Every non-empty file's first record must hold the original features with one sequence
    length and one prediction count across files. Empty files are counted and reported. A
    local file's framing is walked to its end (`check_framing`: its record headers only, about
    0.5 s per GB), so that a half-written shard is refused here, naming it, rather than as
    TensorFlow's DataLossError hours into training; a remote one (`gs://`) is read from its
    first record only.

    Raises:
        ValueError: no file matches, a file is not TFRecord or is truncated, a record misses
            features, or lengths disagree.
    """
    import tensorflow as tf

    patterns = [p for p in file_pattern.split(",") if p]
    files = sorted({path for pattern in patterns for path in tf.io.gfile.glob(pattern)})
    if not files:
        raise ValueError(f"`{name}` matches no file. Received: {name}={file_pattern!r}")
    sequence_length = max_predictions = None
    nonempty, num_empty = [], 0
    for path in files:
        if os.path.isfile(path):
            check_framing(path)
        try:
            first = list(tf.data.TFRecordDataset(path).take(1).as_numpy_iterator())
        except tf.errors.DataLossError as error:
            raise ValueError(_unreadable(path, error)) from None
        if not first:
            num_empty += 1
            continue
        try:
            example = tf.train.Example.FromString(first[0])
        except Exception as error:  # protobuf's DecodeError
            raise ValueError(
                f"{path}: the first record is not a tf.train.Example ({error})."
            ) from None
        features = example.features.feature
        missing = [f for f in (*SEQUENCE_FEATURES, *PREDICTION_FEATURES) if f not in features]
        if LABEL_FEATURE not in features:
            missing.append(LABEL_FEATURE)
        if missing:
            raise ValueError(
                f"{path}: the records lack the features {missing}; expected the original ALBERT "
                f"pretraining layout with {list(SEQUENCE_FEATURES + PREDICTION_FEATURES)} and "
                f"'{LABEL_FEATURE}'. Found: {sorted(features)}"
            )
        lengths = {f: len(_values(features[f])) for f in SEQUENCE_FEATURES + PREDICTION_FEATURES}
        file_sequence = {lengths[f] for f in SEQUENCE_FEATURES}
        file_predictions = {lengths[f] for f in PREDICTION_FEATURES}
        if len(file_sequence) != 1 or len(file_predictions) != 1:
            raise ValueError(f"{path}: the features of one record disagree in length: {lengths}")
        (file_sequence,), (file_predictions,) = file_sequence, file_predictions
        if sequence_length is None:
            sequence_length, max_predictions = file_sequence, file_predictions
        elif (file_sequence, file_predictions) != (sequence_length, max_predictions):
            raise ValueError(
                f"{path} holds sequences of {file_sequence} tokens with {file_predictions} "
                f"predictions, but {nonempty[0]} holds {sequence_length} and "
                f"{max_predictions}. All files of `{name}` must have one layout."
            )
        nonempty.append(path)
    if not nonempty:
        raise ValueError(f"Every file of `{name}` is empty. Received: {name}={file_pattern!r}")
    if num_empty:
        print(f"keras_albert: {num_empty} empty file(s) of `{name}` skipped.")
    return RecordLayout(tuple(nonempty), sequence_length, max_predictions, num_empty)


def _values(feature) -> list:
    kind = feature.WhichOneof("kind")
    return list(getattr(feature, kind).value) if kind else []


def count_records(files: Sequence[str]) -> int:
    """The number of records in TFRecord `files` (read through once; one error naming the
    file that is truncated or not TFRecord)."""
    import tensorflow as tf

    total = 0
    for path in files:
        try:
            total += int(tf.data.TFRecordDataset(path).reduce(np.int64(0), lambda n, _: n + 1))
        except tf.errors.DataLossError as error:
            raise ValueError(_unreadable(path, error)) from None
    return total


# A TFRecord: length (uint64, little-endian), its masked CRC32C (4 bytes), the data, the
# data's masked CRC32C (4 bytes).
_HEADER = struct.Struct("<Q")
_HEADER_SIZE, _FOOTER_SIZE = 12, 4


def frame_record(data: bytes) -> bytes:
    """`data` as one TFRecord (what `tf.io.TFRecordWriter` writes), without TensorFlow: for
    writers that are not TensorFlow's (the Beam pipeline). Needs `google-crc32c`."""
    import google_crc32c

    def masked_crc(value: bytes) -> bytes:
        crc = google_crc32c.value(value)
        return struct.pack("<I", (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF)

    length = _HEADER.pack(len(data))
    return length + masked_crc(length) + data + masked_crc(data)


def check_framing(path: str) -> int:
    """The number of records in the local TFRecord file `path`, from its record headers alone.

    Raises:
        ValueError: naming `path` and the record, when a record runs past the end of the
            file: a shard cut short (an interrupted write or copy), or a file that is not
            TFRecord at all (its first "length" is text or noise).
    """
    size = os.path.getsize(path)
    offset = index = 0
    with open(path, "rb") as file:
        while offset < size:
            file.seek(offset)
            header = file.read(_HEADER_SIZE)
            end = (
                offset + _HEADER_SIZE + _HEADER.unpack_from(header)[0] + _FOOTER_SIZE
                if len(header) == _HEADER_SIZE
                else size + 1
            )
            if end > size:
                kind = (
                    "is truncated"
                    if index
                    else "is not a TFRecord file (or is cut short in its first record)"
                )
                raise ValueError(
                    f"{path} {kind}: record {index} (at byte {offset}) runs past the end of the "
                    f"file ({size} bytes). A shard cut short by an interrupted write or copy, "
                    "or another kind of file: recreate it or leave it out."
                )
            offset, index = end, index + 1
    return index


def _unreadable(path: str, error) -> str:
    """TensorFlow's DataLossError, which names no file, as one line that does."""
    detail = " ".join(error.message.split("}}")[-1].split("[Op:")[0].split())
    return f"{path} is truncated, corrupt or not a TFRecord file ({detail})."
