"""RACE files → formatted, packed choices, checked on the real RACE+ sample."""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

from keras_albert.tasks.multiple_choice.features import (
    RaceFormatError,
    accuracy_by_level,
    choice_texts,
    make_race_dataset,
    read_race,
    write_race_predictions,
)
from tests.text._paths import DATA_DIR

SAMPLE = os.path.join(DATA_DIR, "race", "expmrc-race-dev-sample.json")
FULL = "/work/shared/data/race/expmrc-race-dev.json"  # used too where present


def raw_questions(path):
    """(article, question, options, answer letter) from the JSON, read here independently."""
    with open(path, encoding="utf-8") as file:
        passages = json.load(file)["data"]
    return [
        (passage["article"], question, options, answer)
        for passage in passages
        for question, options, answer in zip(
            passage["questions"], passage["options"], passage["answers"], strict=True
        )
    ]


def rule(question: str, option: str) -> str:
    """race_utils' rule, written out: each blank (a run of `_`) gets the option once."""
    if "_" not in question:
        return question + " " + option
    out, in_blank = [], False
    for char in question:
        if char == "_":
            if not in_blank:
                out.append(option)
            in_blank = True
        else:
            out.append(char)
            in_blank = False
    return "".join(out)


def split_row(token_ids, segment_ids, padding_mask, sep_id):
    ids = token_ids[padding_mask == 1]
    segments = segment_ids[padding_mask == 1]
    first_sep = int(np.argmax(ids == sep_id))
    assert (segments[: first_sep + 1] == 0).all() and (segments[first_sep + 1 :] == 1).all()
    assert ids[-1] == sep_id
    return list(ids[1:first_sep]), list(ids[first_sep + 1 : -1])


def sources():
    return [SAMPLE] + ([FULL] if os.path.exists(FULL) else [])


@pytest.mark.parametrize("path", sources(), ids=os.path.basename)
def test_reader_keeps_every_question_and_its_gold_option(path):
    raw = raw_questions(path)
    examples = read_race(path)
    assert len(examples) == len(raw)
    for row, (article, question, options, answer) in enumerate(raw):
        assert examples.articles[row] == article and examples.questions[row] == question
        assert examples.options[row] == options
        assert examples.options[row][examples.labels[row]] == options["ABCD".index(answer)]
    assert len(set(examples.ids)) == len(examples)


@pytest.mark.parametrize("sequence_length,max_qa_length", [(512, 128), (128, 128), (384, 12)])
def test_segments_follow_race_utils_on_the_real_sample(
    albert_tokenizer, sequence_length, max_qa_length
):
    tokenizer = albert_tokenizer
    budget = min(max_qa_length, (sequence_length - 3) // 2)
    examples = read_race(SAMPLE)
    raw = raw_questions(SAMPLE)
    dataset = make_race_dataset(
        examples, tokenizer, sequence_length, batch_size=16, max_qa_length=max_qa_length
    )
    batches = list(dataset)
    features = {k: np.concatenate([x[k].numpy() for x, _ in batches]) for k in batches[0][0]}
    labels = np.concatenate([y.numpy() for _, y in batches])
    np.testing.assert_array_equal(labels, examples.labels)

    cut_articles = cut_b = 0
    for row, (article, question, options, _) in enumerate(raw):
        article_ids = tokenizer.encode(article)
        for choice in range(features["token_ids"].shape[1]):
            mask = features["padding_mask"][row, choice]
            if choice >= len(options):
                assert not mask.any() and not features["token_ids"][row, choice].any()
                continue
            a, b = split_row(
                features["token_ids"][row, choice],
                features["segment_ids"][row, choice],
                mask,
                tokenizer.sep_id,
            )
            full_b = tokenizer.encode(
                rule(tokenizer.normalize(question), tokenizer.normalize(options[choice]))
            )
            assert b == full_b[-budget:], (row, choice)  # the end of B is kept
            cut_b += len(b) < len(full_b)
            assert len(b) <= max_qa_length
            assert a == article_ids[: len(a)]
            if len(a) < len(article_ids):
                # The article is cut only to fill what B, itself cut first, leaves.
                cut_articles += 1
                assert len(b) == min(len(full_b), budget)
                assert mask.sum() == sequence_length
    # The sample exercises both cuts where they can happen (its articles fit in 512).
    assert cut_articles > 0 or sequence_length == 512
    assert cut_b > 0 or budget == 128


def test_python_and_graph_formatting_agree_on_the_real_sample(albert_tokenizer):
    from keras_albert.tasks.multiple_choice.features import choice_texts_graph, padded_options

    examples = read_race(SAMPLE)
    options, present = padded_options(examples, 4)
    graph = choice_texts_graph(
        albert_tokenizer, tf.constant(examples.questions), tf.constant(options.astype(str))
    ).numpy()
    for row, question in enumerate(examples.questions):
        expected = choice_texts(albert_tokenizer, question, examples.options[row])
        got = [text.decode() for text in graph[row][: len(expected)]]
        assert got == expected
        # normalizing again (as the tokenizer does) changes nothing
        assert [albert_tokenizer.normalize(text) for text in got] == got


def test_blank_rule_examples(albert_tokenizer):
    texts = choice_texts(albert_tokenizer, "He went to ______ by _ bus.", ["School", "A"])
    assert texts == ["he went to school by school bus.", "he went to a by a bus."]
    assert choice_texts(albert_tokenizer, "Why?", ["Because."]) == ["why? because."]
    # A full-width low line is a blank after NFKD, as in the original's preprocess_text.
    assert choice_texts(albert_tokenizer, "Go ＿＿.", ["home"]) == ["go home."]


def write_race_directory(root, passages):
    for index, passage in enumerate(passages):
        level = "middle" if index % 2 else "high"
        os.makedirs(root / level, exist_ok=True)
        (root / level / f"{index}.txt").write_text(json.dumps(passage))


def test_directory_layout_and_levels(tmp_path):
    with open(SAMPLE, encoding="utf-8") as file:
        passages = json.load(file)["data"][:6]
    write_race_directory(tmp_path / "dev", passages)
    examples = read_race(tmp_path / "dev")
    expected_levels = [
        "high" if index % 2 == 0 else "middle"
        for index, passage in enumerate(passages)
        for _ in passage["questions"]
    ]
    assert sorted(examples.levels) == sorted(expected_levels)
    assert examples.levels[0] == "middle"  # middle/ is read first, as the original
    predictions = examples.labels.copy()
    predictions[examples.levels.index("high")] += 1  # one wrong high-school answer
    metrics = accuracy_by_level(examples, predictions % 4)
    high = sum(level == "high" for level in examples.levels)
    assert metrics["accuracy_middle"] == 1.0
    assert metrics["accuracy_high"] == pytest.approx((high - 1) / high)
    assert metrics["accuracy"] == pytest.approx((len(examples) - 1) / len(examples))


def test_a_list_of_files_and_json_lines(tmp_path):
    with open(SAMPLE, encoding="utf-8") as file:
        passages = json.load(file)["data"][:3]
    (tmp_path / "a.jsonl").write_text("\n".join(json.dumps(p) for p in passages[:2]) + "\n")
    (tmp_path / "b.txt").write_text(json.dumps(passages[2]))
    examples = read_race([tmp_path / "a.jsonl", tmp_path / "b.txt"])
    assert len(examples) == sum(len(p["questions"]) for p in passages)


@pytest.mark.parametrize(
    "change,expected",
    [
        (lambda p: p.update(answers=["E"] + p["answers"][1:]), "answer 'E' is not one of"),
        (lambda p: p["answers"].pop(), "one entry per question expected"),
        (lambda p: p.pop("article"), r"missing \['article'\]"),
        (lambda p: p["options"].__setitem__(0, ["only one"]), "at least 2 strings"),
    ],
)
def test_bad_passages_are_clear_errors(tmp_path, change, expected):
    with open(SAMPLE, encoding="utf-8") as file:
        passage = json.load(file)["data"][0]
    change(passage)
    (tmp_path / "bad.txt").write_text(json.dumps(passage))
    with pytest.raises(RaceFormatError, match=expected):
        read_race(tmp_path / "bad.txt")


def test_not_a_race_directory_is_a_clear_error(tmp_path):
    with pytest.raises(RaceFormatError, match="middle"):
        read_race(tmp_path)
    with pytest.raises(FileNotFoundError):
        read_race(tmp_path / "absent")


def test_predictions_file(tmp_path):
    examples = read_race(SAMPLE)
    rng = np.random.default_rng(0)
    probabilities = rng.dirichlet(np.ones(4), size=len(examples))
    write_race_predictions(tmp_path / "predictions.jsonl", examples, probabilities)
    lines = (tmp_path / "predictions.jsonl").read_text().splitlines()
    assert len(lines) == len(examples)
    for row, line in enumerate(lines):
        record = json.loads(line)
        count = len(examples.options[row])
        assert record["id"] == examples.ids[row]
        assert record["prediction"] == "ABCD"[int(np.argmax(probabilities[row, :count]))]
        assert record["label"] == "ABCD"[examples.labels[row]]
        assert len(record["probabilities"]) == count


def test_an_input_context_reads_one_shard_with_the_per_replica_batch(albert_tokenizer):
    examples = read_race(SAMPLE)
    context = tf.distribute.InputContext(
        num_input_pipelines=2, input_pipeline_id=0, num_replicas_in_sync=2
    )
    dataset = make_race_dataset(
        examples, albert_tokenizer, 64, batch_size=16, input_context=context
    )
    sizes = [int(features["token_ids"].shape[0]) for features, _ in dataset]
    assert sizes[0] == 8 and sum(sizes) == (len(examples) + 1) // 2


def test_a_tsv_given_as_race_json_is_named_with_its_line(tmp_path):
    tsv = tmp_path / "dev.tsv"
    tsv.write_text("sentence\tlabel\na fine film\t1\n")
    with pytest.raises(RaceFormatError) as error:
        read_race(tsv)
    assert str(error.value).startswith(
        f"{tsv}:1: not RACE JSON (a passage object per file or per line): Expecting value"
    )
