"""The fine-tuning driver: options, the classifier, every task end to end, the tool."""

import csv
import json
import os
import re
import runpy
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_albert import AlbertBackbone, AlbertClassifier, AlbertConfig, AlbertPretrainer
from keras_albert.finetuning.driver import FinetuningOptions, finetune
from keras_albert.finetuning.task_choice import choose_task
from keras_albert.tasks.classification import reader as glue
from keras_albert.tasks.classification.metrics import compute_metrics
from keras_albert.tasks.classification.options import ClassificationOptions
from keras_albert.tasks.classification.preprocessor import AlbertClassifierPreprocessor
from keras_albert.tasks.finetuning_task import predict_packed
from keras_albert.tasks.multiple_choice.options import MultipleChoiceOptions
from keras_albert.text.tokenizer import AlbertTokenizer
from tests.helpers import TINY, check_model_roundtrips, random_inputs, tiny_backbone
from tests.text.glue_rows import GLUE_DATA, write_mnli, write_qnli, write_qqp

ALBERT_MODEL = os.path.join(os.path.dirname(GLUE_DATA), "30k-clean.model")
# A tiny architecture over the real 30k-piece vocabulary, so real text tokenizes as in use.
TINY_30K = {**TINY, "vocabulary_size": 30000, "num_layers": 2}

# ----------------------------------------------------------------------------------------------
# Options.


def test_options_are_checked():
    with pytest.raises(ValueError, match=r"`dataset` must be one of .*Received: dataset='SST-5'"):
        choose_task(FinetuningOptions("SST-5", "t", "e", "o", preset="albert_base_v2"))
    with pytest.raises(
        ValueError, match="Exactly one of `init_checkpoint`, `preset`, `config` must be given"
    ):
        FinetuningOptions("SST-2", "t", "e", "o")
    with pytest.raises(ValueError, match="`text_columns` must be given for the generic task"):
        choose_task(FinetuningOptions("generic", "t", "e", "o", preset="albert_base_v2"))
    with pytest.raises(ValueError, match="`task_options` must be a ClassificationOptions for"):
        choose_task(
            FinetuningOptions("SST-2", "t", "e", "o", preset="albert_base_v2",
                              task_options=MultipleChoiceOptions())
        )  # fmt: skip
    with pytest.raises(ValueError, match="`batch_size` must be a positive int"):
        FinetuningOptions("RTE", "t", "e", "o", preset="albert_base_v2", batch_size=0)
    base = dict(train_data="t", eval_data="e", output_dir="o", preset="albert_base_v2")
    with pytest.raises(
        ValueError, match="`pad_to_multiple_of` must be None for the dataset 'squad"
    ):
        choose_task(FinetuningOptions("squad_v1", pad_to_multiple_of=16, **base))
    with pytest.raises(ValueError, match="`pad_to_multiple_of` must be .*pad_to_multiple_of=0"):
        FinetuningOptions("SST-2", pad_to_multiple_of=0, **base)
    with pytest.raises(ValueError, match="`group_by_length` must come with `pad_to_multiple_of`"):
        FinetuningOptions("SST-2", group_by_length=True, **base)
    with pytest.raises(ValueError, match="`group_by_length` must be one of"):
        FinetuningOptions("SST-2", group_by_length="yes", pad_to_multiple_of=8, **base)


# ----------------------------------------------------------------------------------------------
# The classifier, and loading our pretraining output into it in one call.


@pytest.mark.parametrize("num_classes", [1, 3])
def test_classifier_serialization_and_saving(num_classes, tmp_path):
    classifier = AlbertClassifier(tiny_backbone(), num_classes=num_classes, dropout=0.2)
    check_model_roundtrips(classifier, random_inputs(), tmp_path)


# ----------------------------------------------------------------------------------------------
# End to end: every task, on real samples where ../shared/data has the task.


@pytest.fixture(scope="module")
def tiny_config_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("config") / "albert_config.json"
    AlbertConfig(**TINY_30K).to_json(path)
    return str(path)


def _task_files(task, tmp_path):
    stems = {"SST-2": "sst2", "MRPC": "mrpc", "STS-B": "stsb", "CoLA": "cola", "RTE": "rte"}
    if task in stems:
        return tuple(
            os.path.join(GLUE_DATA, f"{stems[task]}_{split}.tsv") for split in ("train", "dev")
        )
    writer = {"QQP": write_qqp, "QNLI": write_qnli}.get(task)
    if writer:
        return writer(tmp_path / "train.tsv"), writer(tmp_path / "dev.tsv")
    return write_mnli(tmp_path / "train.tsv", dev=False), write_mnli(tmp_path / "dev.tsv")


def _read_predictions(path):
    with open(path, encoding="utf-8") as file:
        return list(csv.DictReader(file, delimiter="\t"))


# The regression and the three-way pair task run by default; the other GLUE tasks (the same
# path with their own readers and metrics) with the slow ones. SST-2 among them (≈ 9 s): in
# every run it trains end to end through this driver in test_resume.py, test_lora.py,
# test_precision.py and the serving guide.
SLOW = pytest.mark.slow


@pytest.mark.parametrize(
    "task",
    [
        "STS-B",
        "MNLI",
        *(
            pytest.param(name, marks=SLOW)
            for name in ("SST-2", "MRPC", "CoLA", "RTE", "QQP", "QNLI")
        ),
    ],
)
def test_every_task_end_to_end(task, tiny_config_path, tmp_path):
    # Two evaluations where the best-of choice matters most; one elsewhere, to stay fast.
    epochs = 2 if task in ("SST-2", "STS-B") else 1
    train_data, eval_data = _task_files(task, tmp_path)
    output_dir = tmp_path / "run"
    summary = finetune(
        FinetuningOptions(
            dataset=task,
            train_data=train_data,
            eval_data=eval_data,
            output_dir=str(output_dir),
            config=tiny_config_path,
            vocabulary=ALBERT_MODEL,
            sequence_length=32,
            train_steps=2,
            batch_size=4,
            num_evaluations=epochs,
            verbose=0,
        )
    )
    spec = glue.get_task(task)
    evaluation = glue.read_examples(eval_data, spec)
    assert summary["train_steps"] == 2 and len(summary["history"]) == epochs
    baseline = () if spec.is_regression else ("majority_accuracy", "num_predicted_classes")
    assert set(summary["best"]) == {"loss", *spec.metrics, *baseline}

    # The predictions file is the best checkpoint's, row for row, and its metrics are the
    # summary's, recomputed here from the file.
    rows = _read_predictions(output_dir / "eval_predictions.tsv")
    assert [row["index"] for row in rows] == evaluation.ids
    if spec.is_regression:
        predictions = np.array([float(row["prediction"]) for row in rows])
        np.testing.assert_allclose([float(row["label"]) for row in rows], evaluation.labels)
    else:
        predictions = np.array([spec.labels.index(row["prediction"]) for row in rows])
        assert [row["label"] for row in rows] == [spec.labels[i] for i in evaluation.labels]
    recomputed = compute_metrics(spec, evaluation.labels, predictions)
    if not spec.is_regression:
        counts = np.unique(evaluation.labels, return_counts=True)[1]
        recomputed["majority_accuracy"] = counts.max() / len(evaluation.labels)
        recomputed["num_predicted_classes"] = len(set(predictions.tolist()))
    for metric, value in recomputed.items():
        assert summary["best"][metric] == pytest.approx(value, abs=1e-5)
    best_epoch_metrics = summary["history"][summary["best_epoch"] - 1]
    assert best_epoch_metrics[spec.main_metric] == pytest.approx(summary["best"][spec.main_metric])

    best = keras.models.load_model(output_dir / "best.keras")
    assert isinstance(best, AlbertClassifier) and best.num_classes == spec.num_classes
    with open(output_dir / "history.csv", encoding="utf-8") as file:
        history = list(csv.DictReader(file))
    assert len(history) == epochs and f"val_{spec.main_metric}" in history[0]
    assert os.listdir(output_dir / "logs" / "validation")
    assert (output_dir / "tokenizer.model").read_bytes() == open(ALBERT_MODEL, "rb").read()


def test_the_saved_model_predicts_on_text_what_the_evaluation_computed(tiny_config_path, tmp_path):
    """One definition of the features: `best.keras` carries the preprocessor the run packed
    its batches with (dynamic padding here), and its `predict` on the eval file's raw sentence
    pairs gives the scores `eval_predictions.tsv` holds, and those of the packed ids."""
    train_data, eval_data = _task_files("STS-B", tmp_path)
    output_dir = tmp_path / "run"
    finetune(
        FinetuningOptions(
            dataset="STS-B", train_data=train_data, eval_data=eval_data,
            output_dir=str(output_dir), config=tiny_config_path, vocabulary=ALBERT_MODEL,
            sequence_length=24, pad_to_multiple_of=8, train_steps=2, batch_size=4,
            num_evaluations=1, verbose=0,
        )
    )  # fmt: skip
    best = keras.models.load_model(output_dir / "best.keras")
    assert isinstance(best.preprocessor, AlbertClassifierPreprocessor)
    assert best.preprocessor.sequence_length == 24
    evaluation = glue.read_examples(eval_data, glue.get_task("STS-B"))
    from_text = best.predict(tuple(evaluation.texts), batch_size=4, verbose=0)[:, 0]
    evaluated = [float(row["prediction"]) for row in _read_predictions(
        output_dir / "eval_predictions.tsv")]  # fmt: skip
    np.testing.assert_allclose(from_text, evaluated, atol=1e-5)
    tokenizer = AlbertTokenizer(ALBERT_MODEL)
    packed = glue.make_dataset(evaluation, tokenizer, 24, batch_size=4)
    from_ids = predict_packed(best, packed, verbose=0)[:, 0]
    np.testing.assert_allclose(from_text, from_ids, atol=1e-5)


def test_the_run_trains_exactly_train_steps_the_last_stretch_shorter(tiny_config_path, tmp_path):
    """10 steps, 3 evaluations: after steps 4, 8 and 10 (stretches of ceil(10 / 3), the last
    shorter), not 12; the schedule, the history and the last checkpoint end at step 10."""
    train_data, eval_data = _task_files("SST-2", tmp_path)
    output_dir = tmp_path / "run"
    options = FinetuningOptions(
        dataset="SST-2", train_data=train_data, eval_data=eval_data, output_dir=str(output_dir),
        config=tiny_config_path, vocabulary=ALBERT_MODEL, sequence_length=32, train_steps=10,
        batch_size=4, num_evaluations=3, verbose=0,
    )  # fmt: skip
    summary = finetune(options)
    assert summary["train_steps"] == 10 and summary["epochs"] == 3
    assert [row["step"] for row in summary["history"]] == [4, 8, 10]
    with open(output_dir / "history.csv", encoding="utf-8") as file:
        rows = list(csv.DictReader(file))
    assert [int(row["step"]) for row in rows] == [4, 8, 10]
    # The last update's rate (step 9, after the warmup): the linear decay ends at step 10.
    assert summary["recipe"]["warmup_steps"] < 9
    peak = summary["recipe"]["learning_rate"]
    assert float(rows[-1]["learning_rate"]) == pytest.approx(peak * (1 - 9 / 10))
    latest = tf.train.latest_checkpoint(str(output_dir / "checkpoints"))
    assert latest.endswith("ckpt-10")


@pytest.mark.slow
def test_remat_flag_reaches_the_trained_model(tiny_config_path, tmp_path):
    """`tools/finetune.py --remat`: the run's backbone is rematerialized (its best.keras says
    so; that it trains as without: tests/models/test_remat.py) and the summary records it."""
    train_data, eval_data = _task_files("SST-2", tmp_path)
    output_dir = tmp_path / "run"
    tool = os.path.join(os.path.dirname(GLUE_DATA), os.pardir, os.pardir, "tools", "finetune.py")
    argv = ["--dataset", "SST-2", "--train-data", train_data, "--eval-data", eval_data]
    argv += ["--config", tiny_config_path, "--vocabulary", ALBERT_MODEL, "--sequence-length", "32"]
    argv += ["--train-steps", "2", "--batch-size", "4", "--verbose", "0"]
    argv += ["--output-dir", str(output_dir), "--remat"]
    assert runpy.run_path(tool)["main"](argv) == 0
    assert keras.models.load_model(output_dir / "best.keras").backbone.remat is True
    summary = json.loads((output_dir / "summary.json").read_text())
    assert summary["options"]["remat"] is True


@pytest.mark.slow
def test_output_to_a_file_is_lines_not_a_bar(tiny_config_path, tmp_path, capsys):
    """verbose 1 with stdout not a terminal (captured here, as in a log file): no bar redraws
    or ANSI escapes, a line every step (stretches of 10: an interval of 1) but the stretches'
    last, whose evaluations print theirs."""
    train_data, eval_data = _task_files("SST-2", tmp_path)
    options = FinetuningOptions(
        dataset="SST-2", train_data=train_data, eval_data=eval_data,
        output_dir=str(tmp_path / "run"), config=tiny_config_path, vocabulary=ALBERT_MODEL,
        sequence_length=32, train_steps=20, batch_size=4, num_evaluations=2, verbose=1,
    )  # fmt: skip
    finetune(options)
    captured = capsys.readouterr()
    for text in (captured.out, captured.err):
        assert not re.search(r"[\r\b\x1b]", text), text[-2000:]
    lines = captured.out.splitlines()
    steps = [int(line.split()[1].split("/")[0]) for line in lines if line.startswith("step ")]
    assert steps == [*range(1, 10), *range(11, 20)]
    assert [line for line in lines if line.startswith("evaluation ")][0] == (
        "evaluation 1/2: steps 1-10 of 20"
    )
    evaluations = [line for line in lines if line.startswith("SST-2 eval after")]
    assert len(evaluations) == 2 and "majority_accuracy=" in evaluations[0]
    assert len(lines) <= len(steps) + 10, captured.out  # the plan, headings, results, summary


POSITIVE = ("good", "great", "fine", "lovely", "nice")
NEGATIVE = ("bad", "awful", "poor", "dull", "boring")


def _reviews_csv(path, templates, with_labels=True):
    """A review CSV (quoted text, a comma inside): one row per template and sentiment word."""
    rows = [
        (template.format(word), label)
        for template in templates
        for words, label in ((POSITIVE, "good"), (NEGATIVE, "bad"))
        for word in words
    ]
    header = "id,review,sentiment\n" if with_labels else "id,review\n"
    path.write_text(
        header
        + "".join(
            f'{i},"{text}"' + (f",{label}" if with_labels else "") + "\n"
            for i, (text, label) in enumerate(rows)
        ),
        encoding="utf-8",
    )
    return [text for text, _ in rows], [label for _, label in rows]


def _best_model_labels(output_dir, texts, sequence_length):
    """The argmax of `best.keras` on `texts`, packed here as [CLS] ids [SEP] (truncated)."""
    tokenizer = AlbertTokenizer(str(output_dir / "tokenizer.model"))
    ids = [
        [tokenizer.cls_id, *tokenizer.encode(text)[: sequence_length - 2], tokenizer.sep_id]
        for text in texts
    ]
    token_ids = np.full((len(ids), sequence_length), tokenizer.pad_id, np.int32)
    padding_mask = np.zeros((len(ids), sequence_length), np.int32)
    for row, row_ids in enumerate(ids):
        token_ids[row, : len(row_ids)] = row_ids
        padding_mask[row, : len(row_ids)] = 1
    best = keras.models.load_model(output_dir / "best.keras")
    logits = predict_packed(  # token ids: not through the preprocessor it carries
        best,
        {
            "token_ids": token_ids,
            "segment_ids": np.zeros_like(token_ids),
            "padding_mask": padding_mask,
        },
        verbose=0,
    )
    return [("bad", "good")[index] for index in np.asarray(logits).argmax(-1)]


@pytest.mark.slow
def test_from_pretraining_output_generic_csv_learns_and_predicts_with_the_best_model(tmp_path):
    """60 steps on separable reviews (sentiment words in templates) reach eval accuracy
    >= 0.9 on templates not trained on; both predictions files are the argmax of `best.keras`
    on the texts packed here, and the summary's accuracy is that of the eval predictions."""
    pretraining = tmp_path / "pretraining"
    pretraining.mkdir()
    keras.utils.set_random_seed(0)
    # Wider than TINY_30K, which does not learn this within 60 steps.
    sizes = dict(embedding_dim=32, hidden_dim=64, intermediate_dim=128, num_heads=4)
    pretrainer = AlbertPretrainer(AlbertBackbone(**{**TINY_30K, **sizes}))
    pretrainer.save(pretraining / "pretrainer.keras")
    # An accent-keeping pretraining run (its templates are ASCII: the same pieces either way).
    recorded = {"vocabulary": ALBERT_MODEL, "strip_accents": False}
    (pretraining / "run.json").write_text(json.dumps(recorded))
    train = tmp_path / "train.csv"
    _reviews_csv(train, ("a {0}, {0} film", "{} acting", "the plot was {}", "{} from start to end"))
    evaluation = tmp_path / "eval.csv"
    eval_texts, eval_labels = _reviews_csv(evaluation, ("it was {}", "{0} music, {0} cast"))
    test = tmp_path / "test.csv"
    test_texts, _ = _reviews_csv(test, ("truly {}", "{}"), with_labels=False)
    output_dir = tmp_path / "run"
    sequence_length = 16
    summary = finetune(
        FinetuningOptions(
            dataset="generic",
            train_data=str(train),
            eval_data=str(evaluation),
            test_data=str(test),
            output_dir=str(output_dir),
            init_checkpoint=str(pretraining),
            task_options=ClassificationOptions(
                text_columns=("review",), label_column="sentiment", labels=("bad", "good")
            ),
            sequence_length=sequence_length,
            train_steps=60,
            num_evaluations=3,
            batch_size=8,
            learning_rate=3e-3,
            dropout=0.0,
            warmup_steps=4,
            verbose=0,
        )
    )
    assert summary["num_train_examples"] == 40 and summary["options"]["init_checkpoint"]
    assert summary["num_test_examples"] == 20 and summary["num_skipped"]["test"] == 0
    # The .csv files were read with commas (the option, as given, is the default tab).
    assert summary["delimiters"] == {"train": ",", "eval": ",", "test": ","}
    assert summary["best"]["accuracy"] >= 0.9, summary["history"]
    # Fine-tuning normalized as the pretraining run recorded, and records it for the export.
    assert summary["strip_accents"] is False and "lowercase" not in summary
    assert (output_dir / "tokenizer.model").read_bytes() == open(ALBERT_MODEL, "rb").read()

    eval_rows = _read_predictions(output_dir / "eval_predictions.tsv")
    assert [row["label"] for row in eval_rows] == eval_labels
    best_eval = _best_model_labels(output_dir, eval_texts, sequence_length)
    assert [row["prediction"] for row in eval_rows] == best_eval
    accuracy = np.mean([p == label for p, label in zip(best_eval, eval_labels, strict=True)])
    assert summary["best"]["accuracy"] == pytest.approx(accuracy)

    rows = _read_predictions(output_dir / "test_predictions.tsv")
    # No id column chosen: the rows' indices, from 0.
    assert [row["index"] for row in rows] == [str(i) for i in range(len(test_texts))]
    best_test = _best_model_labels(output_dir, test_texts, sequence_length)
    assert [row["prediction"] for row in rows] == best_test


def test_cli_runs_the_driver_and_bad_input_names_file_and_line(tmp_path, monkeypatch, capsys):
    tool = os.path.join(os.path.dirname(GLUE_DATA), os.pardir, os.pardir, "tools", "finetune.py")
    bad = tmp_path / "bad.tsv"
    bad.write_text("sentence\tlabel\ngood\t1\nbad\tpositive\n", encoding="utf-8")
    argv = ["finetune.py", "--dataset", "SST-2", "--train-data", str(bad), "--eval-data", str(bad)]
    argv += ["--preset", "albert_base_v2", "--vocabulary", ALBERT_MODEL]
    argv += ["--output-dir", str(tmp_path / "x"), "--debug"]  # the exception, not one line
    monkeypatch.setattr(sys, "argv", argv)
    with pytest.raises(glue.DataFormatError, match=rf"{bad}:3: label 'positive'"):
        runpy.run_path(tool, run_name="__main__")
    monkeypatch.setattr(sys, "argv", [*argv[:2], "nope", *argv[3:]])
    with pytest.raises(ValueError, match=r"`dataset` must be one of .*Received: dataset='nope'"):
        runpy.run_path(tool, run_name="__main__")
