"""AlbertPacker against the original ALBERT packing, property-based, and its Keras contract."""

import keras
import numpy as np
import pytest
import tensorflow as tf
from hypothesis import given, settings
from hypothesis import strategies as st

from keras_albert.text.packing import AlbertPacker, concat_rows

CLS, SEP, PAD = 2, 3, 0


def reference_pack(first, second, sequence_length):
    """The original: `_truncate_seq_pair` (pop from the longer, the second on a tie), then
    [CLS] A [SEP] (B [SEP]) with segment ids 0/1, padded with <pad>."""
    first = list(first)
    if second is None:
        first = first[: sequence_length - 2]
        tokens, segments = [CLS] + first + [SEP], [0] * (len(first) + 2)
    else:
        second = list(second)
        while len(first) + len(second) > sequence_length - 3:
            (first if len(first) > len(second) else second).pop()
        tokens = [CLS] + first + [SEP] + second + [SEP]
        segments = [0] * (len(first) + 2) + [1] * (len(second) + 1)
    padding = sequence_length - len(tokens)
    return tokens + [PAD] * padding, segments + [0] * padding, [1] * len(tokens) + [0] * padding


# Token ids drawn from 5.. so that [CLS]/[SEP]/<pad> only come from packing.
segment_strategy = st.lists(st.integers(5, 30000), max_size=40)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(segment_strategy, segment_strategy), min_size=1, max_size=6),
    st.integers(3, 48),
    st.booleans(),
)
def test_packing_matches_original_and_invariants(pairs, sequence_length, two_segments):
    packer = AlbertPacker(sequence_length, cls_id=CLS, sep_id=SEP, pad_id=PAD)
    firsts = tf.ragged.constant([first for first, _ in pairs], dtype=tf.int32, ragged_rank=1)
    seconds = tf.ragged.constant([second for _, second in pairs], dtype=tf.int32, ragged_rank=1)
    outputs = packer((firsts, seconds) if two_segments else firsts)
    token_ids = outputs["token_ids"].numpy()
    segment_ids = outputs["segment_ids"].numpy()
    padding_mask = outputs["padding_mask"].numpy()
    assert token_ids.dtype == np.int32 and segment_ids.dtype == np.int32
    assert padding_mask.dtype == bool
    assert token_ids.shape == segment_ids.shape == padding_mask.shape
    assert token_ids.shape == (len(pairs), sequence_length)
    for row, (first, second) in enumerate(pairs):
        expected = reference_pack(first, second if two_segments else None, sequence_length)
        assert token_ids[row].tolist() == expected[0]
        assert segment_ids[row].tolist() == expected[1]
        assert padding_mask[row].astype(int).tolist() == expected[2]
        # Invariants, independent of the reference.
        assert token_ids[row, 0] == CLS and (token_ids[row] == CLS).sum() == 1
        assert (token_ids[row] == SEP).sum() == (2 if two_segments else 1)
        length = padding_mask[row].sum()
        assert padding_mask[row, :length].all() and not padding_mask[row, length:].any()
        assert token_ids[row, length - 1] == SEP and (token_ids[row, length:] == PAD).all()
        segments = segment_ids[row, :length]
        assert (np.diff(segments) >= 0).all() and set(segments) <= {0, 1}
        kept_first = token_ids[row, 1 : 1 + (segments == 0).sum() - 2].tolist()
        assert kept_first == list(first[: len(kept_first)])  # truncation keeps a prefix
        if two_segments:
            kept_second = token_ids[row, len(kept_first) + 2 : length - 1].tolist()
            assert kept_second == list(second[: len(kept_second)])
            assert length == min(len(first) + len(second) + 3, sequence_length)
            if len(kept_first) < len(first) and len(kept_second) < len(second):
                # Both truncated: longest-first leaves them within one token of each other.
                assert 0 <= len(kept_first) - len(kept_second) <= 1
        else:
            assert length == min(len(first) + 2, sequence_length)


def test_longest_first_examples():
    packer = AlbertPacker(9, cls_id=CLS, sep_id=SEP, pad_id=PAD)
    first = tf.ragged.constant([[10, 11, 12, 13, 14, 15], [10], [10, 11, 12, 13]])
    second = tf.ragged.constant([[20, 21], [20, 21, 22, 23, 24, 25, 26], [20, 21, 22, 23]])
    token_ids = packer((first, second))["token_ids"].numpy().tolist()
    assert token_ids == [
        [2, 10, 11, 12, 13, 3, 20, 21, 3],  # the longer first segment loses 2
        [2, 10, 3, 20, 21, 22, 23, 24, 3],  # the longer second segment loses 2
        [2, 10, 11, 12, 3, 20, 21, 22, 3],  # a tie: the second loses one, then the first
    ]


def test_unbatched_and_dense_inputs():
    packer = AlbertPacker(6, cls_id=CLS, sep_id=SEP, pad_id=PAD)
    single = packer(tf.constant([7, 8, 9, 10, 11]))
    assert single["token_ids"].numpy().tolist() == [2, 7, 8, 9, 10, 3]
    pair = packer((tf.constant([7]), tf.constant([8, 9])))
    assert pair["token_ids"].numpy().tolist() == [2, 7, 3, 8, 9, 3]
    assert pair["segment_ids"].numpy().tolist() == [0, 0, 0, 1, 1, 1]
    dense = packer(tf.constant([[7, 8], [9, 10]], dtype=tf.int64))
    assert dense["token_ids"].numpy().tolist() == [[2, 7, 8, 3, 0, 0], [2, 9, 10, 3, 0, 0]]


def test_in_tf_data():
    packer = AlbertPacker(6, cls_id=CLS, sep_id=SEP, pad_id=PAD)
    dataset = tf.data.Dataset.from_tensor_slices(tf.ragged.constant([[7, 8], [9], [], [5] * 9]))
    unbatched = [x["token_ids"].numpy().tolist() for x in dataset.map(packer)]
    batched = [row for x in dataset.batch(3).map(packer) for row in x["token_ids"].numpy().tolist()]
    assert (
        unbatched
        == batched
        == [
            [2, 7, 8, 3, 0, 0],
            [2, 9, 3, 0, 0, 0],
            [2, 3, 0, 0, 0, 0],
            [2, 5, 5, 5, 5, 3],
        ]
    )


def test_validation():
    with pytest.raises(ValueError, match=r"at least 3 .*Received: sequence_length=2"):
        AlbertPacker(2, cls_id=CLS, sep_id=SEP, pad_id=PAD)
    with pytest.raises(TypeError, match="'8'"):
        AlbertPacker("8", cls_id=CLS, sep_id=SEP, pad_id=PAD)
    with pytest.raises(ValueError, match="cls_id.*-1"):
        AlbertPacker(8, cls_id=-1, sep_id=SEP, pad_id=PAD)
    packer = AlbertPacker(8, cls_id=CLS, sep_id=SEP, pad_id=PAD)
    with pytest.raises(ValueError, match="3 segments"):
        packer([tf.constant([1])] * 3)
    with pytest.raises(TypeError, match="float32"):
        packer(tf.constant([1.0]))


def test_serialization_round_trip():
    packer = AlbertPacker(8, cls_id=CLS, sep_id=SEP, pad_id=PAD, name="packer")
    config = packer.get_config()
    assert {key: config[key] for key in ("sequence_length", "cls_id", "sep_id", "pad_id")} == {
        "sequence_length": 8,
        "cls_id": CLS,
        "sep_id": SEP,
        "pad_id": PAD,
    }
    restored = AlbertPacker.from_config(config)
    restored_again = keras.saving.deserialize_keras_object(
        keras.saving.serialize_keras_object(packer)
    )
    inputs = (tf.ragged.constant([[5, 6, 7, 8, 9]]), tf.ragged.constant([[10, 11]]))
    for other in (restored, restored_again):
        for key, value in packer(inputs).items():
            np.testing.assert_array_equal(other(inputs)[key].numpy(), value.numpy())


def test_concat_rows_equals_ragged_concat_along_axis_1():
    parts = [
        tf.ragged.constant([[1, 2], [], [3], []], dtype=tf.int32),
        tf.ragged.constant([[4], [5, 6, 7], [], []], dtype=tf.int32),
        tf.ragged.constant([[8], [9], [10, 11], []], dtype=tf.int32),
    ]
    for count in (1, 2, 3):
        expected = tf.concat(parts[:count], axis=1)
        assert concat_rows(parts[:count]).to_list() == expected.to_list()
    empty = [tf.ragged.constant([[]], dtype=tf.int32)[:0]] * 2
    assert concat_rows(empty).to_list() == []
