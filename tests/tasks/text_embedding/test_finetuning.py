"""Text-embedding fine-tuning through the driver: a tiny embedder (2 layers over the 30k
vocabulary) on the 12 STS-B train pairs of tests/data (cosine loss) and on their texts as
unscored pairs (in-batch negatives); the data sets' options and readers.

What the runs show: the training loss falls, and Spearman over the pairs the model trains on
rises above the untrained model's. They do not show that it generalizes: 12 pairs and a random
tiny model say nothing of held-out pairs (its Spearman on the 8 dev pairs of tests/data went
down in a trial run), so the dev file is predicted only as `test_data` here.
"""

import csv
import math

import keras
import numpy as np
import pytest

from keras_albert import AlbertConfig
from keras_albert.convert import load_checkpoint
from keras_albert.finetuning.driver import FinetuningOptions, finetune
from keras_albert.finetuning.task_choice import choose_task, make_task
from keras_albert.tasks.text_embedding.model import AlbertTextEmbedder
from keras_albert.tasks.text_embedding.options import STSB, TextEmbeddingOptions
from keras_albert.tasks.text_embedding.reader import DataFormatError, read_pairs
from keras_albert.text.tokenizer import AlbertTokenizer
from tests.text.glue_rows import GLUE_DATA
from tests.text.text_data import ALBERT_MODEL
from tests.tiny import TINY

STSB_TRAIN = f"{GLUE_DATA}/stsb_train.tsv"
STSB_DEV = f"{GLUE_DATA}/stsb_dev.tsv"


@pytest.fixture(scope="module")
def config_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("config") / "albert_config.json"
    AlbertConfig(**{**TINY, "vocabulary_size": 30000, "num_layers": 2}).to_json(path)
    return str(path)


def _options(config_path, output_dir, task, train_data, eval_data, **changes):
    return FinetuningOptions(
        dataset=task, train_data=train_data, eval_data=eval_data, output_dir=str(output_dir),
        config=config_path, vocabulary=str(ALBERT_MODEL), sequence_length=32, train_steps=24,
        batch_size=4, learning_rate=1e-3, num_evaluations=3, verbose=0, **changes,
    )  # fmt: skip


def _untrained_spearman(options):
    keras.utils.set_random_seed(options.seed)
    task = make_task(options, AlbertTokenizer(str(ALBERT_MODEL)))
    model = task.build_model(load_checkpoint(options.config, model="backbone"))
    return task.evaluate(model, 4)["spearman"]


def _train_losses(output_dir):
    with open(output_dir / "history.csv", encoding="utf-8") as file:
        return [float(row["loss"]) for row in csv.DictReader(file)]


@pytest.mark.slow
def test_stsb_trains_the_cosine_loss_and_reports_spearman(config_path, tmp_path):
    output_dir = tmp_path / "run"
    options = _options(
        config_path, output_dir, "STSB_embedding", STSB_TRAIN, STSB_TRAIN, test_data=STSB_DEV
    )
    summary = finetune(options)
    assert summary["task"] == "stsb_embedding" and summary["loss"] == "cosine"
    assert summary["main_metric"] == "spearman" and set(summary["best"]) == {"spearman", "pearson"}
    assert all(math.isfinite(value) for row in summary["history"] for value in row.values())
    losses = _train_losses(output_dir)
    assert len(losses) == 3 and losses[-1] < losses[0]
    assert summary["best"]["spearman"] > _untrained_spearman(options) + 0.2

    # The predictions are the best model's cosines; the scores the loss saw (0..1).
    best = keras.models.load_model(output_dir / "best.keras")
    assert isinstance(best, AlbertTextEmbedder)
    with open(output_dir / "eval_predictions.tsv", encoding="utf-8") as file:
        rows = list(csv.DictReader(file, delimiter="\t"))
    pairs = read_pairs(STSB_TRAIN, STSB)
    np.testing.assert_allclose([float(row["score"]) for row in rows], pairs.scores)
    assert max(float(row["score"]) for row in rows) <= 1.0
    with open(output_dir / "test_predictions.tsv", encoding="utf-8") as file:
        test_rows = list(csv.DictReader(file, delimiter="\t"))
    assert len(test_rows) == 8 and set(test_rows[0]) == {"index", "cosine"}


@pytest.mark.slow
def test_unscored_pairs_train_the_in_batch_negatives_loss(config_path, tmp_path):
    # The same texts as pairs without scores, in a CSV; the scored STS-B file to evaluate,
    # read as sentence pairs with its columns (the same names in both files).
    pairs = read_pairs(STSB_TRAIN, STSB)
    train = tmp_path / "pairs.csv"
    with open(train, "w", encoding="utf-8", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(["sentence1", "sentence2"])
        writer.writerows(zip(pairs.first, pairs.second, strict=True))
    task_options = TextEmbeddingOptions(
        pair_columns=("sentence1", "sentence2"), score_column="score", max_score=5.0
    )
    output_dir = tmp_path / "run"
    options = _options(config_path, output_dir, "sentence_pairs", str(train), STSB_TRAIN,
                       task_options=task_options)  # fmt: skip
    summary = finetune(options)
    assert summary["loss"] == "multiple_negatives_ranking"
    losses = _train_losses(output_dir)
    assert len(losses) == 3 and losses[-1] < losses[0]
    assert all(math.isfinite(value) for row in summary["history"] for value in row.values())


def test_the_data_sets_and_their_options(tmp_path):
    base = dict(train_data="t", eval_data="e", output_dir="o", preset="albert_base_v2")
    task_type, options = choose_task(FinetuningOptions("stsb_embedding", **base))
    assert task_type.name == "text_embedding"
    assert options.task_options == TextEmbeddingOptions()
    with pytest.raises(ValueError, match="`pair_columns` must be given for sentence_pairs"):
        choose_task(FinetuningOptions("sentence_pairs", **base))
    with pytest.raises(ValueError, match=r"`pair_columns` must name two columns\. Received"):
        TextEmbeddingOptions(pair_columns=("a",), score_column="s").pair_layout("sentence_pairs")
    with pytest.raises(ValueError, match="must be 0-based indices without a header"):
        TextEmbeddingOptions(
            pair_columns=("a", "b"), score_column="2", pair_header=False
        ).pair_layout("sentence_pairs")
    with pytest.raises(ValueError, match="`pooling` must be one of"):
        TextEmbeddingOptions(pooling="sum")
    with pytest.raises(ValueError, match="`max_score` must be"):
        TextEmbeddingOptions(max_score=0)


def test_the_reader(tmp_path):
    pairs = read_pairs(STSB_TRAIN, STSB)
    assert len(pairs) == 12 and pairs.first[0] == "A plane is taking off."
    assert pairs.scores[0] == pytest.approx(1.0) and pairs.scores[1] == pytest.approx(3.8 / 5)
    assert read_pairs(STSB_TRAIN, STSB, scored=False).scores is None
    headerless = tmp_path / "pairs.tsv"
    headerless.write_text('a "quoted\tb\t0.5\nc\td\tx\n', encoding="utf-8")
    layout = TextEmbeddingOptions(
        pair_columns=("0", "1"), score_column="2", pair_header=False
    ).pair_layout("sentence_pairs")
    with pytest.raises(DataFormatError, match=r"pairs.tsv:2: the score 'x' is not a finite"):
        read_pairs(headerless, layout)
    read = read_pairs(headerless, layout, skip_invalid=True)
    assert read.first == ['a "quoted'] and read.num_skipped == 1
    unscored = tmp_path / "unscored.tsv"
    unscored.write_text("sentence1\tsentence2\na\tb\n", encoding="utf-8")
    assert read_pairs(unscored, STSB).scores is None  # a training file: in-batch negatives
    with pytest.raises(
        DataFormatError, match=r"unscored.tsv:1: .* lacks the column\(s\) \['score'\]"
    ):
        read_pairs(unscored, STSB, scored=True)  # an eval file
