"""GLUE-style task files: every layout, every task's columns, and bad input naming file:line."""

import csv
import os

import numpy as np
import pytest

from keras_albert.tasks.classification import reader as glue
from tests.text.glue_rows import GLUE_DATA, write_mnli, write_qnli, write_qqp


def _plain_rows(path, header=True):
    """Independent parse: split physical lines on tabs (valid for GLUE's unquoted TSVs)."""
    with open(path, encoding="utf-8-sig") as file:
        rows = [line.rstrip("\n").split("\t") for line in file if line.strip()]
    return rows[1:] if header else rows


@pytest.mark.parametrize(
    "task, stem, text_fields, label_field",
    [
        ("SST-2", "sst2", [0], 1),
        ("MRPC", "mrpc", [3, 4], 0),
        ("STS-B", "stsb", [7, 8], 9),
        ("CoLA", "cola", [3], 1),
    ],
)
@pytest.mark.parametrize("split", ["train", "dev"])
def test_glue_tsv_files_read_every_row(task, stem, text_fields, label_field, split):
    path = os.path.join(GLUE_DATA, f"{stem}_{split}.tsv")
    examples = glue.read_examples(path, task)
    rows = _plain_rows(path, header=task != "CoLA")
    assert len(examples) == len(rows) and examples.num_skipped == 0
    for column, field in zip(examples.texts, text_fields, strict=True):
        assert column == [row[field] for row in rows]
    spec = glue.get_task(task)
    if spec.is_regression:
        np.testing.assert_array_equal(
            examples.labels, np.float32([float(row[label_field]) for row in rows])
        )
    else:
        expected = [spec.labels.index(row[label_field]) for row in rows]
        np.testing.assert_array_equal(examples.labels, expected)
        assert examples.labels.dtype == np.int32


def test_mrpc_keeps_a_leading_quote_and_drops_the_byte_order_mark():
    examples = glue.read_examples(os.path.join(GLUE_DATA, "mrpc_dev.tsv"), "MRPC")
    assert examples.texts[1][0].startswith('"The foodservice pie business')
    train = glue.read_examples(os.path.join(GLUE_DATA, "mrpc_train.tsv"), "mrpc")
    assert train.texts[0][0].startswith("Amrozi accused")


@pytest.mark.parametrize("split", ["train", "dev"])
def test_rte_csv_export_is_unquoted_and_labels_are_indices(split):
    path = os.path.join(GLUE_DATA, f"rte_{split}.tsv")
    with open(path, encoding="utf-8", newline="") as file:
        rows = list(csv.DictReader(file, delimiter="\t"))
    examples = glue.read_examples(path, "RTE")
    assert examples.texts[0] == [row["sentence1"] for row in rows]
    assert examples.texts[1] == [row["sentence2"] for row in rows]
    assert examples.ids == [row["idx"] for row in rows]
    np.testing.assert_array_equal(examples.labels, [int(row["label"]) for row in rows])
    if split == "train":
        assert examples.texts[0][12] == (
            'Valero Energy Corp., on Monday, said it found "extensive" additional damage at its '
            "250,000-barrel-per-day Port Arthur refinery."
        )


def test_rte_glue_tsv_layout(tmp_path):
    path = tmp_path / "train.tsv"
    path.write_text(
        "index\tsentence1\tsentence2\tlabel\n"
        '0\t"Quoted" start.\tA claim.\tentailment\n'
        "1\tPremise two.\tClaim two.\tnot_entailment\n",
        encoding="utf-8",
    )
    examples = glue.read_examples(path, "RTE")
    assert examples.texts[0] == ['"Quoted" start.', "Premise two."]
    np.testing.assert_array_equal(examples.labels, [0, 1])
    assert examples.ids == ["0", "1"]


def test_qqp_mnli_qnli_in_their_glue_column_layouts(tmp_path):
    qqp = glue.read_examples(write_qqp(tmp_path / "qqp.tsv"), "QQP")
    assert qqp.texts[0][0] == "How do I learn to cook rice?"
    assert qqp.texts[1][0] == "What is the best way to cook rice?"
    np.testing.assert_array_equal(qqp.labels, [1, 0, 0, 1, 1, 0, 0, 1])
    assert qqp.ids[:2] == ["201359", "201360"]

    mnli = glue.read_examples(write_mnli(tmp_path / "mnli.tsv", dev=True), "MNLI")
    assert mnli.texts[1][0] == "The man is outside."
    # gold_label, not label1: row 2's annotators disagree.
    np.testing.assert_array_equal(mnli.labels, [1, 0, 2, 1, 0, 2, 1, 0])
    mnli_train = glue.read_examples(write_mnli(tmp_path / "mnli_train.tsv", dev=False), "MNLI")
    np.testing.assert_array_equal(mnli_train.labels, mnli.labels)

    qnli = glue.read_examples(write_qnli(tmp_path / "qnli.tsv"), "QNLI")
    assert qnli.texts[0][0] == "What colour is the sky on a clear day?"
    np.testing.assert_array_equal(qnli.labels, [0, 1, 0, 1, 0, 1, 0, 1])


def test_unlabeled_test_files(tmp_path):
    path = tmp_path / "test.tsv"
    path.write_text("index\tsentence\n0\tA fine film .\n1\tA dull one .\n", encoding="utf-8")
    examples = glue.read_examples(path, "SST-2", labeled=False)
    assert examples.labels is None and examples.ids == ["0", "1"]
    cola = glue.read_examples(path, "CoLA", labeled=False)
    assert cola.texts[0] == ["A fine film .", "A dull one ."]


def test_generic_csv_and_headerless_tsv(tmp_path):
    path = tmp_path / "reviews.csv"
    path.write_text(
        'text,other,stars\n"Great, really great",x,pos\nAwful,y,neg\n', encoding="utf-8"
    )
    task = glue.generic_task(["text"], "stars", ["neg", "pos"])
    examples = glue.read_examples(path, task)
    assert examples.texts[0] == ["Great, really great", "Awful"]
    np.testing.assert_array_equal(examples.labels, [1, 0])
    assert task.metrics == ("accuracy", "f1")

    path = tmp_path / "pairs.tsv"
    path.write_text("a\tb\t0.5\nc\td\t4\n", encoding="utf-8")
    regression = glue.generic_task([0, 1], 2, None, header=False)
    examples = glue.read_examples(path, regression)
    np.testing.assert_allclose(examples.labels, [0.5, 4.0])
    assert regression.num_classes == 1 and examples.ids == ["0", "1"]  # no id column: from 0


def test_task_names():
    assert glue.get_task("sst2") is glue.get_task("SST-2")
    assert glue.get_task("STSB").is_regression
    assert glue.get_task("mnli").num_classes == 3
    with pytest.raises(ValueError, match=r"Unknown task 'SST-3'.*SST-2.*QNLI.*generic"):
        glue.get_task("SST-3")


# ----------------------------------------------------------------------------------------------
# Bad input: a clear error naming file and line.


def _write(tmp_path, text, name="bad.tsv"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_empty_file(tmp_path):
    path = _write(tmp_path, "")
    with pytest.raises(glue.DataFormatError, match=rf"{path}:1: the file is empty"):
        glue.read_examples(path, "SST-2")
    header_only = _write(tmp_path, "sentence\tlabel\n", "header.tsv")
    with pytest.raises(glue.DataFormatError, match=rf"{header_only}:1: no examples"):
        glue.read_examples(header_only, "SST-2")


def test_header_without_the_task_columns(tmp_path):
    path = _write(tmp_path, "text\tlabel\nfine\t1\n")
    with pytest.raises(glue.DataFormatError, match=rf"{path}:1: the header .* sentence, label"):
        glue.read_examples(path, "SST-2")


def test_row_with_missing_column(tmp_path):
    path = _write(tmp_path, "sentence\tlabel\ngood\t1\nno label here\nbad\t0\n")
    with pytest.raises(glue.DataFormatError, match=rf"{path}:3: expected 2 fields .* found 1"):
        glue.read_examples(path, "SST-2")
    cola = _write(tmp_path, "src\t1\t\tFine.\nsrc\t0\n", "cola.tsv")
    with pytest.raises(glue.DataFormatError, match=rf"{cola}:2: expected at least 4 fields"):
        glue.read_examples(cola, "CoLA")


def test_label_outside_the_label_list(tmp_path):
    path = _write(tmp_path, "sentence\tlabel\ngood\t1\nbad\t2\n")
    with pytest.raises(glue.DataFormatError, match=rf"{path}:3: label '2' is not one of"):
        glue.read_examples(path, "SST-2")
    rte = _write(tmp_path, "sentence1\tsentence2\tlabel\tidx\na\tb\t5\t0\n", "rte.tsv")
    with pytest.raises(glue.DataFormatError, match=rf"{rte}:2: label '5' is not a label index"):
        glue.read_examples(rte, "RTE")


@pytest.mark.parametrize("score", ["high", "nan", ""])
def test_non_numeric_regression_target(tmp_path, score):
    header = (
        "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\tscore"
    )
    path = _write(tmp_path, f"{header}\n0\tg\tf\ty\t0\ts\ts\tA.\tB.\t{score}\n")
    with pytest.raises(glue.DataFormatError, match=rf"{path}:2: the regression target"):
        glue.read_examples(path, "STS-B")


def test_quoted_field_spanning_lines_reports_its_last_line(tmp_path):
    path = _write(
        tmp_path,
        'sentence1\tsentence2\tlabel\tidx\n"two\nlines"\tb\t0\t0\nc\td\tmaybe\t1\n',
        "rte.tsv",
    )
    with pytest.raises(glue.DataFormatError, match=rf"{path}:4: label 'maybe'"):
        glue.read_examples(path, "RTE")


def test_skip_invalid_counts_and_reports(tmp_path):
    path = _write(tmp_path, "sentence\tlabel\ngood\t1\nbad\t7\nshort\nfine\t0\n")
    examples = glue.read_examples(path, "SST-2", skip_invalid=True)
    assert examples.texts[0] == ["good", "fine"]
    assert examples.num_skipped == 2
    assert examples.skipped[0].startswith(f"{path}:3: label '7'")
    assert examples.skipped[1].startswith(f"{path}:4: expected 2 fields")


# ----------------------------------------------------------------------------------------------
# The pipeline: in-graph tokenization and packing give the Python path's ids.


def test_make_dataset_matches_the_python_tokenizer(albert_tokenizer):
    path = os.path.join(GLUE_DATA, "mrpc_dev.tsv")
    examples = glue.read_examples(path, "MRPC")
    sequence_length = 48
    dataset = glue.make_dataset(examples, albert_tokenizer, sequence_length, batch_size=3)
    batches = list(dataset.as_numpy_iterator())
    token_ids = np.concatenate([x["token_ids"] for x, _ in batches])
    segment_ids = np.concatenate([x["segment_ids"] for x, _ in batches])
    padding_mask = np.concatenate([x["padding_mask"] for x, _ in batches])
    labels = np.concatenate([y for _, y in batches])
    np.testing.assert_array_equal(labels, examples.labels)
    tok = albert_tokenizer
    for row, (first, second) in enumerate(zip(*examples.texts, strict=True)):
        a, b = tok.encode(first), tok.encode(second)
        while len(a) + len(b) > sequence_length - 3:  # the original _truncate_seq_pair
            (a if len(a) > len(b) else b).pop()
        ids = [tok.cls_id, *a, tok.sep_id, *b, tok.sep_id]
        expected = ids + [tok.pad_id] * (sequence_length - len(ids))
        np.testing.assert_array_equal(token_ids[row], expected)
        np.testing.assert_array_equal(
            segment_ids[row][: len(ids)], [0] * (len(a) + 2) + [1] * (len(b) + 1)
        )
        assert padding_mask[row].sum() == len(ids) and padding_mask.dtype == np.int32


def _rows(dataset, num_batches=None):
    """(token ids, label) per example, in the order the dataset yields them."""
    if num_batches is not None:
        dataset = dataset.take(num_batches)
    return [
        (tuple(ids.tolist()), int(label))
        for x, y in dataset.as_numpy_iterator()
        for ids, label in zip(x["token_ids"], y, strict=True)
    ]


def test_training_dataset_repeats_shuffles_and_drops_the_remainder(albert_tokenizer):
    examples = glue.read_examples(os.path.join(GLUE_DATA, "sst2_dev.tsv"), "SST-2")
    num_examples = len(examples)
    file_order = _rows(glue.make_dataset(examples, albert_tokenizer, 16, batch_size=num_examples))
    assert len(set(file_order)) == num_examples == 8  # distinct rows: an order is visible

    def training_rows(seed):
        dataset = glue.make_dataset(
            examples, albert_tokenizer, 16, batch_size=3, training=True, seed=seed
        )
        rows = _rows(dataset, num_batches=8)
        assert len(rows) == 24  # full batches across the pass boundaries: three passes of 8
        return rows

    rows = training_rows(seed=1)
    passes = [rows[i * num_examples : (i + 1) * num_examples] for i in range(3)]
    for one_pass in passes:  # each pass sees every example once ...
        assert sorted(one_pass) == sorted(file_order)
    assert passes[0] != file_order  # ... not in file order,
    assert passes[1] != passes[0]  # and in a new order every pass,
    assert training_rows(seed=1) == rows  # the same for the same seed,
    assert training_rows(seed=2) != rows  # another for another seed.

    unlabeled = glue.read_examples(os.path.join(GLUE_DATA, "sst2_dev.tsv"), "SST-2", labeled=False)
    (x,) = list(glue.make_dataset(unlabeled, albert_tokenizer, 16, 8).as_numpy_iterator())
    assert set(x) == {"token_ids", "segment_ids", "padding_mask"}


@pytest.mark.parametrize(
    "training, multiple", [pytest.param(False, 8, marks=pytest.mark.slow), (True, 8), (False, 1)]
)
def test_dynamic_padding_cuts_each_batch_to_its_longest_example(
    albert_tokenizer, training, multiple
):
    # Dynamic padding drops only padding: the kept columns are the full batch's, every dropped
    # column is padding, and the length is the longest example rounded up to the multiple
    # (with a multiple of 1, the last kept column holds a real token).
    examples = glue.read_examples(os.path.join(GLUE_DATA, "mrpc_dev.tsv"), "MRPC")
    sequence_length = 96
    common = dict(batch_size=3, training=training, seed=0)
    full = glue.make_dataset(examples, albert_tokenizer, sequence_length, **common).take(4)
    cut = glue.make_dataset(
        examples, albert_tokenizer, sequence_length, pad_to_multiple_of=multiple, **common
    ).take(4)
    lengths = []
    for (x, y), (xc, yc) in zip(full.as_numpy_iterator(), cut.as_numpy_iterator(), strict=True):
        np.testing.assert_array_equal(y, yc)
        longest = x["padding_mask"].sum(axis=1).max()
        length = xc["token_ids"].shape[1]
        assert length == min(-(-longest // multiple) * multiple, sequence_length)
        for name in ("token_ids", "segment_ids", "padding_mask"):
            np.testing.assert_array_equal(xc[name], x[name][:, :length])
        assert not x["padding_mask"][:, length:].any()
        if multiple == 1:
            assert xc["padding_mask"][:, -1].any()
        lengths.append(length)
    assert len(set(lengths)) > 1 and max(lengths) < sequence_length  # batches really differ


def test_dynamic_padding_keeps_the_classifier_outputs(albert_tokenizer):
    # Exact, not approximate: attention masks the padding, so the logits of a cut batch are
    # the full batch's.
    from keras_albert import AlbertClassifier
    from tests.helpers import tiny_backbone

    examples = glue.read_examples(os.path.join(GLUE_DATA, "sst2_dev.tsv"), "SST-2")
    vocabulary = albert_tokenizer.vocabulary_size
    model = AlbertClassifier(tiny_backbone(vocabulary_size=vocabulary, max_sequence_length=64), 2)
    full = glue.make_dataset(examples, albert_tokenizer, 64, batch_size=4)
    cut = glue.make_dataset(examples, albert_tokenizer, 64, batch_size=4, pad_to_multiple_of=4)
    for (x, _), (xc, _) in zip(full, cut, strict=True):
        assert xc["token_ids"].shape[1] < 64
        np.testing.assert_allclose(model(xc), model(x), atol=1e-5, rtol=1e-5)


def test_dynamic_padding_rejects_a_bad_multiple(albert_tokenizer):
    examples = glue.read_examples(os.path.join(GLUE_DATA, "sst2_dev.tsv"), "SST-2")
    with pytest.raises(ValueError, match="`pad_to_multiple_of` must be .*pad_to_multiple_of=0"):
        glue.make_dataset(examples, albert_tokenizer, 16, 4, pad_to_multiple_of=0)


def _row_index(tokenizer, token_ids) -> int:
    """The index written as the synthetic row's last word, `n<index>`."""
    text = tokenizer.decode([i for i in token_ids.tolist() if i > 3])  # specials dropped
    return int(text.split()[-1][1:])


def test_grouping_by_length_batches_similar_lengths_and_sees_every_row(albert_tokenizer):
    # 300 rows of 1 to 30 words, batches of 2: a grouping window is 100 rows. Grouped batches
    # hold rows of nearly one length (random ones do not), every row keeps its label, every
    # row comes round, and the same seed gives the same batches.
    from keras_albert.text.pipeline import LENGTH_WINDOW

    rng = np.random.default_rng(0)
    words = rng.integers(1, 31, size=300)
    texts = [" ".join(["movie"] * int(n) + [f"n{i}"]) for i, n in enumerate(words)]
    examples = glue.Examples(
        "synthetic", glue.get_task("SST-2"), (texts,), (words % 2).astype(np.int32),
        [str(i) for i in range(300)], list(range(300)),
    )  # fmt: skip
    num_batches = 3 * 300 // 2 + LENGTH_WINDOW  # three passes and the shuffle buffer's slack

    def batches(group, seed=0):
        dataset = glue.make_dataset(
            examples, albert_tokenizer, 48, 2, training=True, seed=seed, group_by_length=group
        )
        return list(dataset.take(num_batches).as_numpy_iterator())

    def spread(batch_list):  # mean difference of token counts within a batch
        return np.mean([np.ptp(x["padding_mask"].sum(axis=1)) for x, _ in batch_list])

    grouped, plain = batches(True), batches(False)
    assert spread(grouped) < 0.25 * spread(plain)
    seen = {}
    for x, y in grouped:
        for ids, label in zip(x["token_ids"], y, strict=True):
            index = _row_index(albert_tokenizer, ids)
            seen[index] = seen.get(index, 0) + 1
            assert label == words[index] % 2
    assert set(seen) == set(range(300)) and min(seen.values()) >= 2
    assert [x["token_ids"].tolist() for x, _ in batches(True)] == [
        x["token_ids"].tolist() for x, _ in grouped
    ]
    with pytest.raises(ValueError, match="`lengths`"):
        glue.make_dataset(examples, albert_tokenizer, 48, 2, group_by_length=True)


def test_grouping_a_set_smaller_than_one_window_holds_no_row_twice(albert_tokenizer):
    # 60 rows, batches of 4: the window shrinks to one pass (15 batches), so no batch holds a
    # row twice (a 50-batch window would hold each row 3 or 4 times, sorted side by side), and
    # over 10 passes' worth of batches every row comes round about 10 times.
    texts = [" ".join(["film"] * (1 + i % 9) + [f"n{i}"]) for i in range(60)]
    examples = glue.Examples(
        "synthetic", glue.get_task("SST-2"), (texts,), np.zeros(60, np.int32),
        [str(i) for i in range(60)], list(range(60)),
    )  # fmt: skip
    dataset = glue.make_dataset(
        examples, albert_tokenizer, 16, 4, training=True, seed=3, group_by_length=True
    )
    counts = np.zeros(60, int)
    for x, _ in dataset.take(150).as_numpy_iterator():
        rows = [_row_index(albert_tokenizer, ids) for ids in x["token_ids"]]
        assert len(set(rows)) == 4, rows
        counts[rows] += 1
    assert counts.min() >= 7 and counts.max() <= 13, counts


def test_a_directory_given_as_a_task_file_is_refused_by_name(tmp_path):
    with pytest.raises(ValueError) as error:
        glue.read_examples(tmp_path, "SST-2", name="train_data")
    assert str(error.value) == (
        f"`train_data` must be a file, not a directory. Received: train_data='{tmp_path}'"
    )
