"""The record schema: inspecting and counting files of pretraining records."""

import os

import numpy as np
import pytest
import tensorflow as tf

from keras_albert.pretraining.data import count_records, decode_record, inspect_records
from keras_albert.pretraining.data.records import PretrainingExample, encode_example


def example(length, num_masked, label=0):
    """A `[CLS] A [SEP] B [SEP]` of `length` tokens with `num_masked` predictions."""
    token_ids = [2, *range(10, 10 + length - 3), 3, 3]
    positions = list(range(1, 1 + num_masked))
    return PretrainingExample(
        token_ids=token_ids,
        segment_ids=[0] * (length - 2) + [1] * 2,
        token_boundary=[1] * length,
        mask_positions=positions,
        mask_ids=[7] * num_masked,
        sentence_order_label=label,
        span_lengths=[1] * num_masked,
    )


def write(path, records):
    with tf.io.TFRecordWriter(str(path)) as writer:
        for record in records:
            writer.write(record)
    return str(path)


def test_layout_empty_files_and_counts(tmp_path, capsys):
    first = write(tmp_path / "a.tfrecord", [encode_example(example(9, 2), 16, 4)] * 3)
    second = write(tmp_path / "b.tfrecord", [encode_example(example(16, 4), 16, 4)] * 2)
    write(tmp_path / "c.tfrecord", [])
    layout = inspect_records(str(tmp_path / "*.tfrecord"), "train_data")
    assert layout.files == (first, second)
    assert (layout.sequence_length, layout.max_predictions_per_sequence) == (16, 4)
    assert layout.num_empty_files == 1
    assert "1 empty file(s) of `train_data` skipped" in capsys.readouterr().out
    assert count_records(layout.files) == 5


def test_encoded_example_decodes_to_our_names(tmp_path):
    record = encode_example(example(9, 2, label=1), 16, 4)
    features = {k: v.numpy() for k, v in decode_record(tf.constant(record), 16, 4).items()}
    np.testing.assert_array_equal(features["token_ids"][:9], [2, 10, 11, 12, 13, 14, 15, 3, 3])
    np.testing.assert_array_equal(features["token_ids"][9:], 0)
    np.testing.assert_array_equal(features["padding_mask"], [1] * 9 + [0] * 7)
    np.testing.assert_array_equal(features["segment_ids"], [0] * 7 + [1] * 2 + [0] * 7)
    np.testing.assert_array_equal(features["mask_positions"], [1, 2, 0, 0])
    np.testing.assert_array_equal(features["mask_ids"], [7, 7, 0, 0])
    np.testing.assert_array_equal(features["mask_weights"], [1.0, 1.0, 0.0, 0.0])
    assert features["sentence_order_label"] == 1
    assert features["mask_weights"].dtype == np.float32
    assert features["token_ids"].dtype == np.int32


def test_bad_record_files_are_refused(tmp_path):
    with pytest.raises(ValueError, match=r"`eval_data` matches no file. Received: eval_data="):
        inspect_records(str(tmp_path / "none*"), "eval_data")
    write(tmp_path / "empty.tfrecord", [])
    with pytest.raises(ValueError, match="Every file of `train_data` is empty"):
        inspect_records(str(tmp_path / "empty.tfrecord"), "train_data")
    other = tf.train.Example(
        features=tf.train.Features(
            feature={"text": tf.train.Feature(int64_list=tf.train.Int64List(value=[1]))}
        )
    )
    bare = write(tmp_path / "bare.tfrecord", [other.SerializeToString()])
    with pytest.raises(ValueError, match=r"lack the features .*Found: \['text'\]"):
        inspect_records(bare)
    short = write(tmp_path / "s1.tfrecord", [encode_example(example(9, 2), 16, 4)])
    long = write(tmp_path / "s2.tfrecord", [encode_example(example(9, 2), 32, 4)])
    with pytest.raises(ValueError, match="32 tokens with 4 predictions.*one layout"):
        inspect_records(f"{short},{long}")
    with pytest.raises(ValueError, match="at most 8 tokens and 4 masks.*9 tokens and 2 masks"):
        encode_example(example(9, 2), 8, 4)


def test_a_truncated_shard_or_a_foreign_file_is_named_with_its_record(tmp_path):
    record = encode_example(example(9, 2), 16, 4)
    whole = write(tmp_path / "whole.tfrecord", [record] * 3)
    cut = tmp_path / "cut.tfrecord"
    cut.write_bytes(open(whole, "rb").read()[:-10])  # a copy interrupted in record 2
    text = tmp_path / "notes.tfrecord"
    text.write_text("These are notes, not records.\n" * 20)
    size = os.path.getsize(cut)
    start_of_last = 2 * (len(record) + 16)
    with pytest.raises(ValueError) as error:
        inspect_records(f"{whole},{cut}", "train_data")
    assert str(error.value).startswith(
        f"{cut} is truncated: record 2 (at byte {start_of_last}) runs past the end of the "
        f"file ({size} bytes)."
    )
    with pytest.raises(ValueError, match=f"^{text} is not a TFRecord file .*record 0 "):
        inspect_records(str(text), "train_data")
    # Counting names the file too (TensorFlow's own DataLossError names none).
    with pytest.raises(ValueError, match=f"^{cut} is truncated, corrupt or not a TFRecord file "
                                         r"\(truncated record at"):  # fmt: skip
        count_records([whole, str(cut)])
    assert count_records([whole]) == 3
