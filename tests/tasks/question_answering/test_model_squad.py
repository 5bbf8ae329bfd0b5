"""End to end on real SQuAD questions: features → fit → post-processing → official metrics files.

A tiny model trained to overfit a handful of questions must answer them exactly (EM 100).
"""

import json
import os

import keras
import numpy as np
import pytest

from keras_albert import AlbertBackbone, AlbertQuestionAnswerer
from keras_albert.tasks.question_answering.features import (
    feature_arrays,
    read_squad_examples,
    squad_features,
)
from keras_albert.tasks.question_answering.postprocess import (
    decode_answer_class,
    decode_null_span,
    write_evaluation,
)
from keras_albert.text.tokenizer import AlbertTokenizer
from tests.text._paths import ALBERT_SPM, DATA_DIR

V1_SAMPLE = os.path.join(DATA_DIR, "squad", "expmrc-squad-dev-sample.json")
V2_SAMPLE = os.path.join(DATA_DIR, "squad", "dev-v2.0-small.json")


def subset(path, qids):
    """The SQuAD JSON with only the questions `qids` (and their paragraphs)."""
    with open(path, encoding="utf-8") as f:
        dataset = json.load(f)
    articles = []
    for article in dataset["data"]:
        paragraphs = []
        for paragraph in article["paragraphs"]:
            questions = [q for q in paragraph["qas"] if q["id"] in qids]
            if questions:
                paragraphs.append({**paragraph, "qas": questions})
        if paragraphs:
            articles.append({**article, "paragraphs": paragraphs})
    return {"version": dataset.get("version"), "data": articles}


@pytest.mark.parametrize(
    "path, answerability",
    [
        (V1_SAMPLE, "null_span"),
        # ≈ 17 s; the answer-class head is also trained end to end by tests/finetuning/
        # test_tasks.py in every run (CI runs this one too)
        pytest.param(V2_SAMPLE, "answer_class", marks=pytest.mark.slow),
    ],
    ids=["v1.1-null-span", "v2.0-answer-class"],
)
@pytest.mark.slow
def test_overfit_questions_are_answered_exactly(path, answerability, tmp_path):
    keras.utils.set_random_seed(0)
    tokenizer = AlbertTokenizer(ALBERT_SPM)
    examples = list(read_squad_examples(path))
    if answerability == "null_span":
        examples = examples[:4]
    else:  # two answerable and two unanswerable questions
        examples = [e for e in examples if e.answers][:2] + [e for e in examples if not e.answers][
            :2
        ]
    dataset = subset(path, {e.qid for e in examples})
    features = list(
        squad_features(examples, tokenizer, sequence_length=96, doc_stride=48, max_query_length=24)
    )
    arrays = feature_arrays(features)

    backbone = AlbertBackbone(
        vocabulary_size=tokenizer.vocabulary_size,
        embedding_dim=16,
        hidden_dim=32,
        intermediate_dim=64,
        num_layers=2,
        num_heads=2,
        max_sequence_length=96,
    )
    model = AlbertQuestionAnswerer(backbone, answerability=answerability, dropout=0.0)
    x, y = model.training_targets(arrays)
    model.compile(optimizer=keras.optimizers.Adam(3e-3), **model.training_loss())
    model.fit(x, y, epochs=150, batch_size=len(features), verbose=0)

    outputs = model.predict(
        {name: arrays[name] for name in ("token_ids", "segment_ids", "padding_mask")}, verbose=0
    )
    if answerability == "null_span":
        result = decode_null_span(features, outputs["start_logits"], outputs["end_logits"])
        metrics = write_evaluation(dataset, result, tmp_path)
    else:
        result = decode_answer_class(features, outputs, null_score_threshold=0.0)
        metrics = write_evaluation(dataset, result, tmp_path, null_score_threshold=0.0)
    assert metrics["exact"] == 100.0, (result.predictions, metrics)
    assert metrics["f1"] == 100.0
    for name in ("predictions", "null_odds", "nbest_predictions", "metrics"):
        assert (tmp_path / f"{name}.json").exists()
    written = json.loads((tmp_path / "metrics.json").read_text())
    assert written["exact"] == 100.0 and written["total"] == len(examples)
    assert np.isfinite(list(result.null_odds.values())).all()
