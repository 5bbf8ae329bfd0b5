"""What the pretraining records hold, read from their first records: `inspect_records`.

Kept apart so that it can be replaced by the one record schema of
`keras_albert.text.pretraining` (its `inspect_records` / `RecordLayout`).
"""

from __future__ import annotations

import dataclasses

import tensorflow as tf

# Record features (the original names) and their length: sequence or predictions.
_SEQUENCE_FEATURES = ("input_ids", "input_mask", "segment_ids")
_PREDICTION_FEATURES = ("masked_lm_positions", "masked_lm_ids", "masked_lm_weights")
_LABEL_FEATURE = "next_sentence_labels"


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
    length and one prediction count across files. Empty files are counted and reported.

    Raises:
        ValueError: no file matches, a record misses features, or lengths disagree.
    """
    patterns = [p for p in file_pattern.split(",") if p]
    files = sorted({path for pattern in patterns for path in tf.io.gfile.glob(pattern)})
    if not files:
        raise ValueError(f"`{name}` matches no file. Received: {name}={file_pattern!r}")
    sequence_length = max_predictions = None
    nonempty, num_empty = [], 0
    for path in files:
        first = list(tf.data.TFRecordDataset(path).take(1).as_numpy_iterator())
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
        missing = [f for f in (*_SEQUENCE_FEATURES, *_PREDICTION_FEATURES) if f not in features]
        if _LABEL_FEATURE not in features:
            missing.append(_LABEL_FEATURE)
        if missing:
            raise ValueError(
                f"{path}: the records lack the features {missing}; expected the original ALBERT "
                f"pretraining layout with {list(_SEQUENCE_FEATURES + _PREDICTION_FEATURES)} and "
                f"'{_LABEL_FEATURE}'. Found: {sorted(features)}"
            )
        lengths = {f: len(_values(features[f])) for f in _SEQUENCE_FEATURES + _PREDICTION_FEATURES}
        file_sequence = {lengths[f] for f in _SEQUENCE_FEATURES}
        file_predictions = {lengths[f] for f in _PREDICTION_FEATURES}
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


def _values(feature: tf.train.Feature) -> list:
    kind = feature.WhichOneof("kind")
    return list(getattr(feature, kind).value) if kind else []
