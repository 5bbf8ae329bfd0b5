"""SQuAD v1.1 / v2.0 (both answerability heads), RACE and NER through `tools/finetune.py main`,
on real samples of tests/data: every file written, official metric keys, and the written
predictions are those of `best.keras` reloaded here (from the files, not from the driver). Each
run also predicts `--test-data`, the eval file without its gold: the test predictions are the
eval predictions, question for question (sentence for sentence)."""

import csv
import json
import os
import runpy
from pathlib import Path

import keras
import numpy as np
import pytest
from seqeval.metrics import f1_score as seqeval_f1

from keras_albert import AlbertConfig
from keras_albert.finetuning.driver import finetune
from keras_albert.finetuning.options import FinetuningOptions
from keras_albert.finetuning.task_choice import choose_task
from keras_albert.tasks.finetuning_task import predict_packed
from keras_albert.tasks.multiple_choice.features import (
    RaceFormatError,
    make_race_dataset,
    read_race,
)
from keras_albert.tasks.question_answering.features import (
    SquadFormatError,
    feature_arrays,
    read_squad_examples,
    squad_features,
)
from keras_albert.tasks.question_answering.metrics import evaluate
from keras_albert.tasks.question_answering.options import QuestionAnsweringOptions
from keras_albert.tasks.question_answering.postprocess import decode_answer_class, decode_null_span
from keras_albert.tasks.token_classification.features import (
    ConllFormatError,
    make_ner_dataset,
    read_conll,
    word_predictions,
)
from keras_albert.text.tokenizer import AlbertTokenizer
from tests.text._paths import ALBERT_SPM, DATA_DIR

TOOL = Path(__file__).resolve().parents[2] / "tools" / "finetune.py"
SEQUENCE_LENGTH = 64
# The official SQuAD v2.0 evaluation script's keys (v1.1 data: answerable questions only).
SQUAD_V1_KEYS = {"exact", "f1", "total", "HasAns_exact", "HasAns_f1", "HasAns_total"}
SQUAD_V2_KEYS = SQUAD_V1_KEYS | {
    "NoAns_exact", "NoAns_f1", "NoAns_total", "best_exact", "best_exact_thresh", "best_f1",
    "best_f1_thresh", "null_score_threshold",
}  # fmt: skip
SQUAD_WINDOWS = dict(sequence_length=SEQUENCE_LENGTH, doc_stride=24, max_query_length=16)


@pytest.fixture(scope="module")
def config_path(tmp_path_factory):
    """A tiny architecture over the real 30k-piece vocabulary (real text tokenizes as in use)."""
    path = tmp_path_factory.mktemp("config") / "albert_config.json"
    AlbertConfig(
        vocabulary_size=30000, embedding_dim=16, hidden_dim=32, intermediate_dim=64,
        num_layers=1, num_heads=2, max_sequence_length=SEQUENCE_LENGTH,
    ).to_json(path)  # fmt: skip
    return str(path)


def finetune_tool(config_path, output_dir, task, train_data, eval_data, *flags):
    argv = ["--dataset", task, "--train-data", train_data, "--eval-data", eval_data]
    argv += ["--config", config_path, "--vocabulary", ALBERT_SPM, "--seed", "1"]
    argv += ["--sequence-length", str(SEQUENCE_LENGTH), "--train-steps", "4", "--batch-size", "4"]
    argv += ["--epochs", "2", "--learning-rate", "1e-3", "--output-dir", str(output_dir), *flags]
    assert runpy.run_path(str(TOOL))["main"](argv) == 0
    with open(output_dir / "summary.json", encoding="utf-8") as file:
        summary = json.load(file)
    with open(output_dir / "metrics.json", encoding="utf-8") as file:
        metrics = json.load(file)
    with open(output_dir / "history.csv", encoding="utf-8") as file:
        history = list(csv.DictReader(file))
    # Common to every task: two evaluations, the best checkpoint's metrics, TensorBoard.
    main = summary["main_metric"]
    assert len(history) == 2 == len(summary["history"]) and summary["train_steps"] == 4
    assert [float(row[f"val_{main}"]) for row in history] == pytest.approx(
        [row[main] for row in summary["history"]]
    )
    assert metrics == summary["best"]
    assert metrics[main] == pytest.approx(max(row[main] for row in summary["history"]))
    assert os.listdir(output_dir / "logs" / "validation")
    assert (output_dir / "tokenizer.model").read_bytes() == Path(ALBERT_SPM).read_bytes()
    best = keras.models.load_model(output_dir / "best.keras")
    return summary, metrics, best


# ----------------------------------------------------------------------------------------------
# SQuAD.


def _squad_v1_sample(path):
    """The first article (23 questions) of the ExpMRC SQuAD v1.1 dev sample, unchanged."""
    sample = Path(DATA_DIR, "squad", "expmrc-squad-dev-sample.json")
    dataset = json.loads(sample.read_text(encoding="utf-8"))
    dataset["data"] = dataset["data"][:1]
    path.write_text(json.dumps(dataset), encoding="utf-8")
    return str(path)


def _without_answers(data, path):
    """A SQuAD test file: `data` without any question's gold."""
    dataset = json.loads(Path(data).read_text(encoding="utf-8"))
    for article in dataset["data"]:
        for paragraph in article["paragraphs"]:
            for question in paragraph["qas"]:
                for gold in ("answers", "is_impossible", "plausible_answers"):
                    question.pop(gold, None)
    path.write_text(json.dumps(dataset), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize(
    "task, answerability",
    [("squad_v1", "null_span"), ("squad_v2", "null_span"), ("squad_v2", "answer_class")],
)
@pytest.mark.slow
def test_squad_end_to_end(task, answerability, config_path, tmp_path):
    if task == "squad_v1":
        data = _squad_v1_sample(tmp_path / "squad.json")
    else:
        data = os.path.join(DATA_DIR, "squad", "dev-v2.0-small.json")
    output_dir = tmp_path / "run"
    flags = ["--squad-answerability", answerability, "--doc-stride", "24"]
    flags += ["--max-query-length", "16", "--verbose", "0"]
    flags += ["--test-data", _without_answers(data, tmp_path / "test.json")]
    summary, metrics, best = finetune_tool(config_path, output_dir, task, data, data, *flags)
    assert set(metrics) == (SQUAD_V2_KEYS if task == "squad_v2" else SQUAD_V1_KEYS)
    assert summary["main_metric"] == "f1" and best.answerability == answerability

    with open(data, encoding="utf-8") as file:
        dataset = json.load(file)
    written = {
        name: json.loads((output_dir / f"{name}.json").read_text(encoding="utf-8"))
        for name in ("predictions", "null_odds", "nbest_predictions")
    }
    examples = list(read_squad_examples(dataset))
    assert set(written["predictions"]) == {example.qid for example in examples}
    for example in examples:  # answers are exact substrings of their context
        assert written["predictions"][example.qid] in example.context

    # best.keras, reloaded, on windows made here: the same answers and no-answer scores.
    tokenizer = AlbertTokenizer(ALBERT_SPM)
    features = list(squad_features(examples, tokenizer, **SQUAD_WINDOWS))
    arrays = feature_arrays(features)
    inputs = {name: arrays[name] for name in ("token_ids", "segment_ids", "padding_mask")}
    outputs = predict_packed(best, inputs, verbose=0)  # token ids: not through its preprocessor
    threshold = 0.0 if task == "squad_v2" else None
    if answerability == "null_span":
        result = decode_null_span(
            features, outputs["start_logits"], outputs["end_logits"],
            version_2=task == "squad_v2", null_score_threshold=threshold,
        )  # fmt: skip
    else:
        result = decode_answer_class(features, outputs, null_score_threshold=threshold)
    assert result.predictions == written["predictions"]
    for qid, odds in result.null_odds.items():
        # A difference of two logit sums: float32 rounding of the logits (the driver's batches
        # and `predict`'s differ, and oneDNN fuses the residual adds) is absolute, ≈ 1e-7.
        expected = odds if np.isfinite(odds) else 1e30
        assert written["null_odds"][qid] == pytest.approx(expected, abs=1e-6), qid
    assert [e["text"] for e in written["nbest_predictions"][examples[0].qid]] == [
        e["text"] for e in result.nbest[examples[0].qid]
    ]
    # The test file is the eval file without its answers: the same questions, decoded as the
    # evaluation decodes them at the same threshold, each once, in file order.
    test_predictions = json.loads((output_dir / "test_predictions.json").read_text("utf-8"))
    assert list(test_predictions) == [example.qid for example in examples]
    assert test_predictions == written["predictions"]
    assert summary["num_test_examples"] == len(examples) == summary["num_eval_examples"]
    if task == "squad_v2":
        test_null_odds = json.loads((output_dir / "test_null_odds.json").read_text("utf-8"))
        assert test_null_odds == written["null_odds"]
    else:
        assert not (output_dir / "test_null_odds.json").exists()
    if task == "squad_v1":
        recomputed = evaluate(dataset, written["predictions"])
    else:
        recomputed = evaluate(dataset, written["predictions"], written["null_odds"], 0.0)
    for key, value in recomputed.items():
        assert metrics[key] == pytest.approx(value), key


def test_squad_v1_refuses_the_answer_class_head():
    message = r"`answerability` must be 'null_span' for squad_v1 .*answer_class"
    answer_class = QuestionAnsweringOptions(answerability="answer_class")
    with pytest.raises(ValueError, match=message):
        choose_task(
            FinetuningOptions(
                "squad_v1", "t", "e", "o", preset="albert_base_v2", task_options=answer_class
            )
        )
    with pytest.raises(ValueError, match=r"`dataset` must be one of .*squad_v2, race, ner"):
        choose_task(FinetuningOptions("squad", "t", "e", "o", preset="albert_base_v2"))


# ----------------------------------------------------------------------------------------------
# RACE and NER.


def _race_without_answers(passages, path):
    """A RACE test file: the passages (`{"data": [...]}`) without their answers."""
    data = [{key: value for key, value in p.items() if key != "answers"} for p in passages["data"]]
    path.write_text(json.dumps({"data": data}), encoding="utf-8")
    return str(path)


@pytest.mark.slow
def test_race_end_to_end_and_step_progress(config_path, tmp_path, capsys):
    sample = os.path.join(DATA_DIR, "race", "expmrc-race-dev-sample.json")
    with open(sample, encoding="utf-8") as file:
        passages = json.load(file)
    passages["data"] = passages["data"][:3]  # the first 3 passages: a dozen questions
    data = tmp_path / "race.json"
    data.write_text(json.dumps(passages), encoding="utf-8")
    test = _race_without_answers(passages, tmp_path / "test.json")
    output_dir = tmp_path / "run"
    flags = ["--max-qa-length", "16", "--verbose", "2", "--test-data", str(test)]
    summary, metrics, best = finetune_tool(config_path, output_dir, "race", str(data), str(data),
                                           *flags)  # fmt: skip
    out = capsys.readouterr().out
    # Progress over steps, not Keras's "Epoch k/n"; a time estimate from the second stretch.
    assert "evaluation 1/2: steps 1-2 of 4\n" in out and "Epoch" not in out
    assert "evaluation 2/2: steps 3-4 of 4, about " in out

    records = [json.loads(line) for line in (output_dir / "eval_predictions.jsonl").open()]
    gold = [
        (passage["id"], index, answer)
        for passage in passages["data"]
        for index, answer in enumerate(passage["answers"])
    ]
    assert [r["index"] for r in records] == list(range(len(gold)))
    assert [(r["id"], r["label"]) for r in records] == [(f"{p}-{i}", a) for p, i, a in gold]
    accuracy = np.mean([r["prediction"] == r["label"] for r in records])
    assert metrics == {"accuracy": pytest.approx(accuracy)}

    tokenizer = AlbertTokenizer(ALBERT_SPM)
    inputs = make_race_dataset(read_race(str(data)), tokenizer, SEQUENCE_LENGTH, max_qa_length=16)
    logits = predict_packed(best, inputs, verbose=0)  # token ids: not through its preprocessor
    letters = [chr(ord("A") + int(i)) for i in logits.argmax(-1)]
    assert [r["prediction"] for r in records] == letters
    # The test file is the eval file without answers: the same lines, without the label.
    test_records = [json.loads(line) for line in (output_dir / "test_predictions.jsonl").open()]
    assert test_records == [{k: v for k, v in r.items() if k != "label"} for r in records]
    assert summary["num_test_examples"] == len(gold)


def test_ner_end_to_end(config_path, tmp_path):
    dev = os.path.join(DATA_DIR, "ner", "wnut17_dev.conll")
    lines = Path(dev).read_text(encoding="utf-8").splitlines(keepends=True)
    data = tmp_path / "ner.conll"
    data.write_text("".join(lines[:240]), encoding="utf-8")  # the first 15 sentences
    test = tmp_path / "test.conll"  # words only: the first column of the eval file
    test.write_text(
        "".join(line.split("\t")[0].rstrip("\n") + "\n" for line in lines[:240]),
        encoding="utf-8",
    )
    output_dir = tmp_path / "run"
    summary, metrics, best = finetune_tool(
        config_path, output_dir, "ner", str(data), str(data), "--verbose", "0",
        "--test-data", str(test),
    )  # fmt: skip
    sentences = read_conll(data)
    assert summary["labels"][0] == "O" and best.labels == summary["labels"]
    types = {tag[2:] for tag in summary["labels"][1:]}
    assert set(metrics) == {"precision", "recall", "f1", "num_cut_words"} | {
        f"f1_{kind}" for kind in types
    }

    written = (output_dir / "eval_predictions.conll").read_text(encoding="utf-8").split("\n\n")
    rows = [[line.split("\t") for line in block.splitlines()] for block in written if block.strip()]
    assert [[row[0] for row in rows_] for rows_ in rows] == sentences.words
    assert [[row[1] for row in rows_] for rows_ in rows] == sentences.tags
    predicted = [[row[2] for row in rows_] for rows_ in rows]
    # Entity F1 of the written file, by seqeval (conlleval's definition), is the metric's.
    assert metrics["f1"] == pytest.approx(seqeval_f1(sentences.tags, predicted))

    tokenizer = AlbertTokenizer(ALBERT_SPM)
    tags, cut = [], 0
    for features, _, positions in make_ner_dataset(
        sentences, tokenizer, summary["labels"], SEQUENCE_LENGTH, with_positions=True
    ):
        batch_tags, batch_cut = word_predictions(
            best.predict_on_batch(features), positions.to_list(), summary["labels"]
        )
        tags, cut = tags + batch_tags, cut + batch_cut
    assert tags == predicted and cut == metrics["num_cut_words"]
    # The test file is the eval file's words: each sentence once, its words and predicted tags.
    written = (output_dir / "test_predictions.conll").read_text(encoding="utf-8").split("\n\n")
    test_rows = [[line.split("\t") for line in block.splitlines()] for block in written]
    assert test_rows == [[[row[0], row[2]] for row in rows_] for rows_ in rows]
    assert summary["num_test_examples"] == len(sentences)


@pytest.mark.parametrize(
    "task, error, message",
    [
        ("squad_v2", SquadFormatError, r"no answer .*read as `test_data`"),
        ("race", RaceFormatError, r"missing \['answers'\].*read as `test_data`"),
        ("ner", ConllFormatError, r"test\.conll:1: expected a token and its tag.*`test_data`"),
    ],
)
def test_an_unlabeled_file_is_test_data_only(task, error, message, config_path, tmp_path):
    """The test files above, given as `eval_data`: an error before any output is written."""
    if task == "squad_v2":
        train = os.path.join(DATA_DIR, "squad", "dev-v2.0-small.json")
        test = _without_answers(train, tmp_path / "test.json")
    elif task == "race":
        train = os.path.join(DATA_DIR, "race", "expmrc-race-dev-sample.json")
        passages = json.loads(Path(train).read_text(encoding="utf-8"))
        test = _race_without_answers(passages, tmp_path / "test.json")
    else:
        train = os.path.join(DATA_DIR, "ner", "wnut17_dev.conll")
        test = tmp_path / "test.conll"
        test.write_text("Stabilized\napproach\n", encoding="utf-8")
    options = FinetuningOptions(
        task, train, str(test), str(tmp_path / "run"), config=config_path,
        vocabulary=ALBERT_SPM, sequence_length=SEQUENCE_LENGTH, verbose=0,
        task_options=QuestionAnsweringOptions(max_query_length=16) if "squad" in task else None,
    )  # fmt: skip
    with pytest.raises(error, match=message):
        finetune(options)
    assert not (tmp_path / "run").exists()
