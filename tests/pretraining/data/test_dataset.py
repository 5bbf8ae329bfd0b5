"""tf.data reader: original layout, round trip, sharding, dynamic masking on Austen, model.fit."""

import collections
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_albert.pretraining.data import (
    PretrainingDataConfig,
    create_pretraining_data,
    decode_record,
)
from keras_albert.pretraining.data.dataset import (
    DynamicMasking,
    dynamic_mask,
    make_pretraining_dataset,
)
from keras_albert.pretraining.data.records import pad_example
from keras_albert.text.tokenizer import AlbertTokenizer
from tests.pretraining.data._helpers import AUSTEN, word_ranges
from tests.text._paths import ALBERT_SPM

SEQ, PRED = 32, 5


@pytest.fixture(scope="module")
def tokenizer():
    return AlbertTokenizer(ALBERT_SPM)


def original_layout_records(count, rng, token_boundary=True):
    """Features as the original ``create_pretraining_data.py`` documents and writes them."""
    records = []
    for index in range(count):
        length = int(rng.integers(8, SEQ + 1))
        num_masked = int(rng.integers(0, PRED + 1))
        ids = np.zeros(SEQ, np.int64)
        ids[:length] = rng.integers(5, 30000, length)
        ids[0] = index  # lets sharding tests identify records
        values = {
            "input_ids": ids,
            "input_mask": (np.arange(SEQ) < length).astype(np.int64),
            "segment_ids": (np.arange(SEQ) >= length // 2).astype(np.int64) * (ids > 0),
            "masked_lm_positions": np.pad(
                np.sort(rng.choice(np.arange(1, length), num_masked, replace=False)),
                (0, PRED - num_masked),
            ),
            "masked_lm_ids": np.pad(rng.integers(5, 30000, num_masked), (0, PRED - num_masked)),
            "masked_lm_weights": np.pad(np.ones(num_masked, np.float32), (0, PRED - num_masked)),
            "next_sentence_labels": np.array([index % 2]),
        }
        if token_boundary:
            values["token_boundary"] = rng.integers(0, 2, SEQ)
        feature = {
            name: tf.train.Feature(float_list=tf.train.FloatList(value=v))
            if v.dtype == np.float32
            else tf.train.Feature(int64_list=tf.train.Int64List(value=v))
            for name, v in values.items()
        }
        example = tf.train.Example(features=tf.train.Features(feature=feature))
        records.append((example.SerializeToString(), values))
    return records


def write_records(path, records):
    with tf.io.TFRecordWriter(str(path)) as writer:
        for serialized, _ in records:
            writer.write(serialized)
    return str(path)


def unbatch(dataset):
    """(x, y, sample_weight) batches → list of per-example numpy dicts."""
    rows = []
    for x, y, weight in dataset:
        for i in range(x["token_ids"].shape[0]):
            row = {name: value[i].numpy() for name, value in x.items()}
            row.update({f"y_{k}": v[i].numpy() for k, v in y.items()})
            row.update({f"w_{k}": v[i].numpy() for k, v in weight.items()})
            rows.append(row)
    return rows


def assert_row_has_original_features(row, features):
    """Our names in a reader row == the original's names in the record."""
    for ours, original in (
        ("token_ids", "input_ids"),
        ("padding_mask", "input_mask"),
        ("segment_ids", "segment_ids"),
        ("mask_positions", "masked_lm_positions"),
        ("y_mlm", "masked_lm_ids"),
        ("w_mlm", "masked_lm_weights"),
    ):
        np.testing.assert_array_equal(row[ours], features[original])
    assert row["y_sop"] == features["next_sentence_labels"][0]
    assert row["w_sop"] == 1.0


@pytest.mark.parametrize("token_boundary", [True, False])
def test_reads_records_in_the_original_layout(tmp_path, token_boundary):
    records = original_layout_records(10, np.random.default_rng(0), token_boundary)
    path = write_records(tmp_path / "original.tfrecord", records)
    dataset = make_pretraining_dataset(path, 4, SEQ, PRED, shuffle=False)
    x_spec, y_spec, w_spec = dataset.element_spec
    assert {k: (v.shape.as_list(), v.dtype) for k, v in x_spec.items()} == {
        "token_ids": ([4, SEQ], tf.int32),
        "segment_ids": ([4, SEQ], tf.int32),
        "padding_mask": ([4, SEQ], tf.int32),
        "mask_positions": ([4, PRED], tf.int32),
    }
    assert {k: (v.shape.as_list(), v.dtype) for k, v in y_spec.items()} == {
        "mlm": ([4, PRED], tf.int32),
        "sop": ([4], tf.int32),
    }
    assert {k: (v.shape.as_list(), v.dtype) for k, v in w_spec.items()} == {
        "mlm": ([4, PRED], tf.float32),
        "sop": ([4], tf.float32),
    }
    rows = unbatch(dataset)
    assert len(rows) == 8  # 10 records, batches of 4, remainder dropped
    for row, (_, values) in zip(rows, records, strict=False):
        assert_row_has_original_features(row, values)


def test_written_examples_come_back_through_the_reader(tokenizer, tmp_path):
    config = PretrainingDataConfig(
        sequence_length=SEQ, max_predictions_per_sequence=PRED, dupe_factor=1
    )
    path = tmp_path / "p.txt"
    path.write_text(open(os.path.join(AUSTEN, "persuasion.txt")).read()[:30_000])
    examples = []
    summary = create_pretraining_data(
        [str(path)], str(tmp_path / "p"), tokenizer, config, progress=False,
        on_example=examples.append,
    )  # fmt: skip
    rows = unbatch(make_pretraining_dataset(summary.output_files, 1, SEQ, PRED, shuffle=False))
    assert len(rows) == len(examples) > 50
    for row, example in zip(rows, examples, strict=True):
        assert_row_has_original_features(row, pad_example(example, SEQ, PRED))
        assert row["y_sop"] == example.sentence_order_label


@pytest.mark.parametrize("num_files", [4, 1])
def test_input_context_shards_between_pipelines(tmp_path, num_files):
    records = original_layout_records(40, np.random.default_rng(1))
    paths = [
        write_records(tmp_path / f"s{i}.tfrecord", records[i::num_files]) for i in range(num_files)
    ]
    seen = []
    for pipeline in range(2):
        context = tf.distribute.InputContext(2, pipeline, 4)
        dataset = make_pretraining_dataset(paths, 8, SEQ, PRED, context, shuffle=False)
        assert dataset.element_spec[0]["token_ids"].shape.as_list() == [2, SEQ]
        seen.append({int(row["token_ids"][0]) for row in unbatch(dataset)})
    # Files (or, with one file, records) are split between the pipelines: disjoint, complete.
    assert not seen[0] & seen[1]
    assert seen[0] | seen[1] == set(range(40))


def test_shuffle_is_seeded(tmp_path):
    path = write_records(
        tmp_path / "a.tfrecord", original_layout_records(30, np.random.default_rng(2))
    )

    def order(**kwargs):
        dataset = make_pretraining_dataset(path, 1, SEQ, PRED, shuffle_buffer_size=30, **kwargs)
        return [int(row["token_ids"][0]) for row in unbatch(dataset)]

    assert order(shuffle=False) == list(range(30))
    assert order(seed=5) == order(seed=5) != list(range(30))
    assert sorted(order(seed=5)) == list(range(30))


def test_bad_arguments_name_the_value(tmp_path):
    with pytest.raises(ValueError, match="matches no file.*nothing"):
        make_pretraining_dataset(str(tmp_path / "nothing*"), 2, SEQ, PRED)
    with pytest.raises(ValueError, match="batch_size.*0"):
        make_pretraining_dataset(str(tmp_path / "x"), 0, SEQ, PRED)
    with pytest.raises(ValueError, match="masked_lm_prob.*2"):
        DynamicMasking(np.zeros(10, bool), (0,), 1, masked_lm_prob=2)
    with pytest.raises(ValueError, match=r"special_ids.*in \[0, 10\).*special_ids=12"):
        DynamicMasking(np.zeros(10, bool), (0, 12), 1)
    with pytest.raises(ValueError, match=r"mask_id.*in \[0, 10\).*mask_id=10"):
        DynamicMasking(np.zeros(10, bool), (0,), 10)


@pytest.fixture(scope="module")
def austen_unmasked(tokenizer, tmp_path_factory):
    """Three novels at 128 tokens written without masks (masked_lm_prob 0), ~3000 examples."""
    config = PretrainingDataConfig(sequence_length=128, masked_lm_prob=0.0, dupe_factor=1)
    inputs = [
        os.path.join(AUSTEN, n) for n in ("persuasion.txt", "emma.txt", "northangerabbey.txt")
    ]
    prefix = str(tmp_path_factory.mktemp("unmasked") / "u")
    return create_pretraining_data(inputs, prefix, tokenizer, config, progress=False)


def test_dynamic_masking_statistics_on_austen(tokenizer, austen_unmasked):
    masking = DynamicMasking.from_tokenizer(tokenizer)
    records = tf.data.TFRecordDataset(austen_unmasked.output_files)
    decoded = records.map(lambda r: decode_record(r, 128, 20, dynamic=True))
    seeds = tf.data.Dataset.random(seed=11).batch(2)
    masked = tf.data.Dataset.zip(decoded.batch(32), seeds).map(
        lambda f, s: (f, dynamic_mask(f["token_ids"], f["padding_mask"], s, masking, 20))
    )
    spans = collections.Counter()
    kinds = collections.Counter()
    num_masked = num_candidates = 0
    for features, result in masked.unbatch().as_numpy_iterator():
        original, padding = features["token_ids"], features["padding_mask"]
        assert not features["mask_weights"].any()  # the files really are unmasked
        count = int(result["mask_weights"].sum())
        positions = result["mask_positions"][:count]
        np.testing.assert_array_equal(result["mask_weights"], [1.0] * count + [0.0] * (20 - count))
        assert not result["mask_positions"][count:].any() and not result["mask_ids"][count:].any()
        assert list(positions) == sorted(set(positions.tolist()))
        np.testing.assert_array_equal(result["mask_ids"][:count], original[positions])
        unmasked = np.setdiff1d(np.arange(128), positions)
        np.testing.assert_array_equal(result["token_ids"][unmasked], original[unmasked])
        real = original[padding == 1]
        num_candidates += sum(int(t) not in tokenizer.special_ids for t in real)
        num_masked += count
        masked_set = set(positions.tolist())
        num_words = 0
        for start, end in word_ranges(real, tokenizer):
            covered = masked_set.intersection(range(start, end))
            assert not covered or len(covered) == end - start
            num_words += bool(covered)
        lengths = result["span_lengths"][result["span_lengths"] > 0]
        assert num_words == lengths.sum()
        spans.update(lengths.tolist())
        for shown, before in zip(result["token_ids"][positions], original[positions], strict=True):
            assert int(before) not in tokenizer.special_ids
            if shown == tokenizer.mask_id:
                kinds["mask"] += 1
            elif shown == before:
                kinds["same"] += 1
            else:
                assert int(shown) not in tokenizer.special_ids
                kinds["random"] += 1
    assert abs(num_masked / num_candidates - 0.15) < 0.01
    total = sum(spans.values())
    for n, expected in ((1, 6 / 11), (2, 3 / 11), (3, 2 / 11)):
        assert abs(spans[n] / total - expected) < 0.02, (n, spans[n] / total)
    total = sum(kinds.values())
    for kind, expected in (("mask", 0.8), ("same", 0.1), ("random", 0.1)):
        assert abs(kinds[kind] / total - expected) < 0.015, (kind, kinds[kind] / total)


def test_dynamic_masking_undoes_static_masks_and_remasks_each_epoch(tokenizer, tmp_path):
    config = PretrainingDataConfig(
        sequence_length=64, max_predictions_per_sequence=10, dupe_factor=1
    )
    examples = []
    summary = create_pretraining_data(
        [os.path.join(AUSTEN, "northangerabbey.txt")], str(tmp_path / "n"), tokenizer, config,
        progress=False, on_example=examples.append,
    )  # fmt: skip
    masking = DynamicMasking.from_tokenizer(tokenizer)

    def epochs(seed):
        dataset = make_pretraining_dataset(
            summary.output_files, 1, 64, 10, shuffle=False, seed=seed, dynamic_masking=masking
        )
        return [unbatch(dataset.take(50)), unbatch(dataset.take(50))]

    first, second = epochs(seed=3)
    for row, example in zip(first, examples, strict=False):
        original = np.array(pad_example(example, 64, 10)["input_ids"])
        original[example.mask_positions] = example.mask_ids  # the file's masks undone
        count = int(row["w_mlm"].sum())
        np.testing.assert_array_equal(row["y_mlm"][:count], original[row["mask_positions"][:count]])
        keep = np.setdiff1d(np.arange(64), row["mask_positions"][:count])
        np.testing.assert_array_equal(row["token_ids"][keep], original[keep])
    positions = lambda rows: [tuple(r["mask_positions"]) for r in rows]
    assert positions(first) != positions(second)  # new masks every epoch
    assert positions(epochs(seed=3)[0]) == positions(first)  # but reproducible from the seed


def test_dynamic_masking_masks_the_last_partial_batch(tokenizer, tmp_path):
    records = original_layout_records(10, np.random.default_rng(4))
    path = write_records(tmp_path / "partial.tfrecord", records)
    masking = DynamicMasking.from_tokenizer(tokenizer)
    dataset = make_pretraining_dataset(
        path, 4, SEQ, PRED, shuffle=False, seed=1, dynamic_masking=masking, drop_remainder=False
    )
    assert dataset.element_spec[0]["token_ids"].shape.as_list() == [None, SEQ]
    assert dataset.element_spec[1]["mlm"].shape.as_list() == [None, PRED]
    assert [len(x["token_ids"]) for x, _, _ in dataset] == [4, 4, 2]
    rows = unbatch(dataset)
    assert len(rows) == 10 and sum(row["w_mlm"].sum() for row in rows[8:]) > 0
    for row, (_, values) in zip(rows, records, strict=True):
        original = values["input_ids"].astype(np.int32).copy()
        real = values["masked_lm_weights"] > 0
        original[values["masked_lm_positions"][real]] = values["masked_lm_ids"][real]
        count = int(row["w_mlm"].sum())
        np.testing.assert_array_equal(row["y_mlm"][:count], original[row["mask_positions"][:count]])
        keep = np.setdiff1d(np.arange(SEQ), row["mask_positions"][:count])
        np.testing.assert_array_equal(row["token_ids"][keep], original[keep])
        np.testing.assert_array_equal(row["padding_mask"], values["input_mask"])
        assert row["y_sop"] == values["next_sentence_labels"][0]


def test_batches_feed_model_fit(tmp_path):
    records = original_layout_records(16, np.random.default_rng(3))
    path = write_records(tmp_path / "fit.tfrecord", records)
    dataset = make_pretraining_dataset(path, 4, SEQ, PRED, repeat=True, seed=0)
    token_ids = keras.Input((SEQ,), dtype="int32", name="token_ids")
    segment_ids = keras.Input((SEQ,), dtype="int32", name="segment_ids")
    padding_mask = keras.Input((SEQ,), dtype="int32", name="padding_mask")
    mask_positions = keras.Input((PRED,), dtype="int32", name="mask_positions")
    hidden = keras.layers.Embedding(30000, 8)(token_ids) + keras.layers.Embedding(2, 8)(segment_ids)
    hidden = hidden * keras.ops.expand_dims(keras.ops.cast(padding_mask, "float32"), -1)
    gathered = keras.ops.take_along_axis(hidden, keras.ops.expand_dims(mask_positions, -1), 1)
    outputs = {
        "mlm": keras.layers.Dense(30000, name="mlm")(gathered),
        "sop": keras.layers.Dense(2, name="sop")(hidden[:, 0]),
    }
    inputs = {
        "token_ids": token_ids,
        "segment_ids": segment_ids,
        "padding_mask": padding_mask,
        "mask_positions": mask_positions,
    }
    model = keras.Model(inputs, outputs)
    model.compile(
        "adam",
        loss={
            "mlm": keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            "sop": keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        },
    )
    model.fit(dataset, steps_per_epoch=2, epochs=1, verbose=0)
    # The loss Keras computes on a batch equals NumPy's on the same records' own labels and
    # weights: the batches carry the records' masked ids, weights and SOP labels, aligned.
    first = next(iter(make_pretraining_dataset(path, 4, SEQ, PRED, shuffle=False)))
    keras_loss = model.test_on_batch(*first, return_dict=True)
    values = [features for _, features in records[:4]]
    batch = {
        "token_ids": np.stack([v["input_ids"] for v in values]),
        "segment_ids": np.stack([v["segment_ids"] for v in values]),
        "padding_mask": np.stack([v["input_mask"] for v in values]),
        "mask_positions": np.stack([v["masked_lm_positions"] for v in values]),
    }
    logits = model.predict(batch, verbose=0)

    def cross_entropy(logits, labels):
        logits = logits.astype(np.float64)
        shifted = logits - logits.max(-1, keepdims=True)
        log_probs = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
        return -np.take_along_axis(log_probs, labels[..., None], -1)[..., 0]

    mlm_ids = np.stack([v["masked_lm_ids"] for v in values])
    mlm_weights = np.stack([v["masked_lm_weights"] for v in values])
    assert mlm_weights.sum() > 0
    mlm = (cross_entropy(logits["mlm"], mlm_ids) * mlm_weights).sum() / mlm_ids.size
    sop_labels = np.array([v["next_sentence_labels"][0] for v in values])
    sop = cross_entropy(logits["sop"], sop_labels).mean()
    np.testing.assert_allclose(keras_loss["mlm_loss"], mlm, rtol=1e-5)
    np.testing.assert_allclose(keras_loss["sop_loss"], sop, rtol=1e-5)
    np.testing.assert_allclose(keras_loss["loss"], mlm + sop, rtol=1e-5)


@pytest.mark.parametrize(
    "text, length, max_predictions, expected_mean",
    [
        ("", 8, 5, 0),
        ("word", 8, 5, 1),
        ("a few words to mask here", 16, 0, 0),
        ("x y z w", 8, 5, 1),
    ],
)
def test_dynamic_mask_edge_cases(tokenizer, text, length, max_predictions, expected_mean):
    masking = DynamicMasking.from_tokenizer(tokenizer, masked_lm_prob=0.15)
    ids = [tokenizer.cls_id, *tokenizer.encode(text), tokenizer.sep_id]
    token_ids = np.zeros(length, np.int32)
    token_ids[: len(ids)] = ids
    padding_mask = (np.arange(length) < len(ids)).astype(np.int32)
    batch = token_ids[None], padding_mask[None]  # a batch of one row
    mask = tf.function(lambda seed: dynamic_mask(*batch, seed, masking, max_predictions))
    counts = []
    for seed in range(100):
        result = {name: value[0] for name, value in mask(tf.constant([seed, 0])).items()}
        count = int(result["mask_weights"].numpy().sum())
        assert result["mask_positions"].shape == (max_predictions,)
        positions = result["mask_positions"].numpy()[:count]
        assert all(1 <= p < len(ids) - 1 for p in positions)
        np.testing.assert_array_equal(result["mask_ids"].numpy()[:count], token_ids[positions])
        counts.append(count)
    # Budget round(0.15 * 4) -> 1: a longer span is kept with probability 1 / size, so the
    # expected count is the budget.
    assert abs(np.mean(counts) - expected_mean) < 0.25


def test_batched_masks_hold_row_by_row(tokenizer):
    """One `dynamic_mask` call on a batch whose rows differ in length and padding, one of them
    without a candidate token: every row checked on its own in Python."""
    length, max_predictions, num_seeds = 64, 8, 100
    text = open(os.path.join(AUSTEN, "persuasion.txt")).read()[5_000:6_000]
    pieces = tokenizer.encode(text)
    cls, sep = tokenizer.cls_id, tokenizer.sep_id
    rows = [
        [cls, *pieces[:30], sep, *pieces[30:57], sep],  # 57 candidates: the budget is capped
        [cls, *pieces[60:70], sep, *pieces[70:75], sep],
        [cls, sep, sep],  # no candidate token
        [cls, *pieces[80:83], sep, *pieces[83:85], sep],
    ]
    token_ids = np.zeros((len(rows), length), np.int32)
    padding_mask = np.zeros((len(rows), length), np.int32)
    for i, row in enumerate(rows):
        token_ids[i, : len(row)] = row
        padding_mask[i, : len(row)] = 1
    masking = DynamicMasking.from_tokenizer(tokenizer)
    mask = tf.function(
        lambda seed: dynamic_mask(token_ids, padding_mask, seed, masking, max_predictions)
    )
    special = set(tokenizer.special_ids)
    counts = np.zeros(len(rows))
    for seed in range(num_seeds):
        result = {name: value.numpy() for name, value in mask(tf.constant([seed, 1])).items()}
        assert result["token_ids"].shape == (len(rows), length)
        for name in ("mask_positions", "mask_ids", "mask_weights", "span_lengths"):
            assert result[name].shape == (len(rows), max_predictions), name
        for i, original in enumerate(token_ids):
            real = original[: len(rows[i])]
            count = int(result["mask_weights"][i].sum())
            weights = [1.0] * count + [0.0] * (max_predictions - count)
            np.testing.assert_array_equal(result["mask_weights"][i], weights)
            positions = result["mask_positions"][i][:count]
            assert list(positions) == sorted(set(positions.tolist()))
            assert not result["mask_positions"][i][count:].any()
            assert not result["mask_ids"][i][count:].any()
            np.testing.assert_array_equal(result["mask_ids"][i][:count], original[positions])
            assert all(p < len(real) and int(original[p]) not in special for p in positions)
            unmasked = np.setdiff1d(np.arange(length), positions)
            np.testing.assert_array_equal(result["token_ids"][i][unmasked], original[unmasked])
            for shown in result["token_ids"][i][positions]:
                assert shown == tokenizer.mask_id or int(shown) not in special
            masked_set = set(positions.tolist())
            num_words = 0
            for start, end in word_ranges(real, tokenizer):
                covered = masked_set.intersection(range(start, end))
                assert not covered or len(covered) == end - start  # whole words
                num_words += bool(covered)
            lengths = result["span_lengths"][i]
            assert num_words == lengths.sum() and set(lengths.tolist()) <= {0, 1, 2, 3}
            counts[i] += count
    # Each row draws against its own budget: min(8, round(0.15 * candidates)); a span across
    # [SEP] is dropped, not redrawn, so short rows fall a little short of it.
    for i, row in enumerate(rows):
        num_candidates = sum(int(t) not in special for t in row)
        budget = min(max_predictions, max(1, int(0.15 * num_candidates + 0.5)))
        budget = budget if num_candidates else 0
        assert 0.7 * budget <= counts[i] / num_seeds <= budget, (i, counts[i] / num_seeds)
    first, again = mask(tf.constant([3, 1])), mask(tf.constant([3, 1]))
    np.testing.assert_array_equal(first["token_ids"], again["token_ids"])
    assert not np.array_equal(first["mask_positions"], mask(tf.constant([4, 1]))["mask_positions"])
