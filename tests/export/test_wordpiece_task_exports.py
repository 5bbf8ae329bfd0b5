"""SQuAD-format question answering and NER with the Chinese releases' WordPiece vocabulary, end
to end: a tiny model fine-tuned a few steps by `tools/finetune.py` on real Chinese samples
(tests/data/zh: questions and entity tags written over ChnSentiCorp reviews, see its NOTICE),
exported string-in from the run's `best.keras` (`vocab.txt` beside it), and served in a fresh
process without keras_albert (`serving_harness.py`, the TF1 session loader). The served answers
must equal the in-process Python path, as tests/export/test_task_exports.py checks for
SentencePiece: `squad_features` + Keras + `decode_null_span` for QA, `make_ner_dataset` +
Keras + `word_predictions` for NER. NER texts are also sent unspaced: their words (each
ideograph one) are `text_sentences`' and are tagged as the spaced text.
"""

import json
import runpy
from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf
from tensorflow_serving.apis import prediction_log_pb2

from keras_albert import AlbertBackbone, AlbertConfig
from keras_albert.export import export_checkpoint
from keras_albert.serving import requests as serving_requests
from keras_albert.tasks.finetuning_task import predict_packed
from keras_albert.tasks.question_answering.features import read_squad_examples, squad_features
from keras_albert.tasks.question_answering.model import AlbertQuestionAnswerer
from keras_albert.tasks.question_answering.postprocess import decode_null_span
from keras_albert.tasks.question_answering.serving import QuestionAnsweringServingModule
from keras_albert.tasks.token_classification.features import (
    ConllSentences,
    make_ner_dataset,
    read_conll,
    text_sentences,
    word_predictions,
)
from keras_albert.text.tokenizer import AlbertTokenizer
from tests.export.conftest import read_logs, run_harness, write_requests
from tests.export.test_serving_export import FORBIDDEN_OPS, outputs_of
from tests.text.text_data import ALBERT_MODEL, DATA

# Two fine-tuning runs, two exports and a serving process (≈ 1 min): with the slow tests, which
# CI runs. tests/export/test_chinese_export.py serves a WordPiece export in every run.
pytestmark = pytest.mark.slow

TOOL = Path(__file__).resolve().parents[2] / "tools" / "finetune.py"
VOCABULARY = DATA / "zh" / "vocab_chinese.txt"
SQUAD = DATA / "zh" / "squad_zh_sample.json"
NER = DATA / "zh" / "ner_zh_sample.conll"
SEQUENCE_LENGTH = 64
QA_OPTIONS = dict(doc_stride=24, max_query_length=16)
# The WordPiece graph's TF Text ops (all in TF Text 2.12.1, which TF Serving embeds).
WORDPIECE_OPS = {"NormalizeUTF8", "RegexSplitWithOffsets", "WordpieceTokenizeWithOffsets"}
BAD_QA = {
    "mixed": ("Café 的价格？", "ＷｉＦｉ免费，Crème brûlée 50元，cafe\u0301 30元。unbelievable 😀"),
    "control_and_spaces": ("多少钱？", "房价\x1b[32m 299元\x1b[m ，  早餐\u200b 免费\t\t。"),
    "invalid_utf8": (b"\xff\xfe\xe4\xb8\xad?", b"ab\xff \xe4\xb8\xad\xe6\x96\x87 \xc3 cd"),
    "empty_context": ("在哪里？", ""),
    "long_context": ("几分钟？", "房间干净，离地铁站步行5分钟。" * 1400),  # 21,000 characters
}
# Texts as a client sends them: unspaced Chinese (a word per ideograph), mixed with Latin
# words, numbers, punctuation, emoji, full-width forms, odd whitespace and control characters.
ODD_NER = [
    "北京欢迎你",
    "北 京 欢 迎 你",
    "我是10月20日入住的，国航Crème brûlée😀很好！ＡＢＣ（全角）",
    "  上海\t\t浦东\u3000机场\n\x1b[1m东方航空\u200b  ",
    b"\xff\xe5\x8c\x97\xe4\xba\xac\xc3 ok",
    "",
]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """`tools/finetune.py` runs of squad_v1 and ner with the WordPiece vocabulary."""
    root = tmp_path_factory.mktemp("wordpiece_tasks")
    config = root / "albert_config.json"
    AlbertConfig(
        vocabulary_size=21128, embedding_dim=16, hidden_dim=32, intermediate_dim=64,
        num_layers=1, num_heads=2, max_sequence_length=SEQUENCE_LENGTH,
    ).to_json(config)  # fmt: skip
    result = {}
    for task, data, flags in (
        ("squad_v1", SQUAD, ["--doc-stride", "24", "--max-query-length", "16"]),
        ("ner", NER, []),
    ):
        output_dir = root / task
        argv = ["--dataset", task, "--train-data", str(data), "--eval-data", str(data)]
        argv += ["--config", str(config), "--vocabulary", str(VOCABULARY), "--seed", "1"]
        argv += ["--sequence-length", str(SEQUENCE_LENGTH), "--train-steps", "30"]
        argv += ["--batch-size", "4", "--epochs", "1", "--learning-rate", "3e-3"]
        argv += ["--output-dir", str(output_dir), "--verbose", "0", *flags]
        assert runpy.run_path(str(TOOL))["main"](argv) == 0
        assert (output_dir / "vocab.txt").read_bytes() == VOCABULARY.read_bytes()
        metrics = json.loads((output_dir / "metrics.json").read_text(encoding="utf-8"))
        result[task] = {"dir": output_dir, "metrics": metrics}
    return root, result


def _log(model_name, inputs):
    request = serving_requests.predict_request(model_name, inputs, "serving_default")
    return prediction_log_pb2.PredictionLog(
        predict_log=prediction_log_pb2.PredictLog(request=request)
    )


def _bytes(text):
    return text if isinstance(text, bytes) else text.encode()


@pytest.fixture(scope="module")
def served(runs):
    root, result = runs
    examples = list(read_squad_examples(SQUAD))
    sentences = read_conll(NER)
    requests = {
        "squad": {
            "real": {
                "question": np.array([_bytes(e.question) for e in examples], dtype=object),
                "context": np.array([_bytes(e.context) for e in examples], dtype=object),
            },
            **{
                key: {
                    "question": np.array([_bytes(question)], dtype=object),
                    "context": np.array([_bytes(context)], dtype=object),
                }
                for key, (question, context) in BAD_QA.items()
            },
            "batch_of_0": {
                "question": np.array([], dtype=object),
                "context": np.array([], dtype=object),
            },
        },
        "ner": {
            # Words as the CoNLL file has them (a character each, Latin words and numbers
            # whole), separated by spaces: the export's words are the whitespace split.
            "real": {
                "text": np.array([" ".join(words).encode() for words in sentences.words], object)
            },
            # The same sentences unspaced: with WordPiece, the same words.
            "unspaced": {
                "text": np.array(["".join(words).encode() for words in sentences.words], object)
            },
            "odd": {"text": np.array([_bytes(text) for text in ODD_NER], object)},
        },
    }
    job = {"exports": [], "models_config": str(root / "saved_models" / "models.config")}
    paths = {}
    for name, task in (("squad", "squad_v1"), ("ner", "ner")):
        paths[name] = export_checkpoint(
            result[task]["dir"] / "best.keras",
            base_dir=root / "saved_models",
            name=name,
            max_sequence_length=SEQUENCE_LENGTH,
            # A SQuAD v1.1 model never learned to abstain: always the best span.
            task_options={"question_answering": dict(QA_OPTIONS, null_score_threshold=None)},
        )
        logs = [_log(name, inputs) for inputs in requests[name].values()]
        files = write_requests(root, name, logs)
        job["exports"].append({"path": paths[name], **files})
    report = run_harness(root, job)
    outputs = {}
    for name, export_job, export_report in zip(
        requests, job["exports"], report["exports"], strict=True
    ):
        responses = read_logs(export_job["responses"])
        assert export_report["request_errors"] == [None] * len(responses), name
        outputs[name] = dict(zip(requests[name], map(outputs_of, responses), strict=True))
    return {
        "outputs": outputs,
        "report": report,
        "requests": requests,
        "examples": examples,
        "sentences": sentences,
        "models": {
            name: keras.models.load_model(result[task]["dir"] / "best.keras")
            for name, task in (("squad", "squad_v1"), ("ner", "ner"))
        },
        "metrics": {name: result[task]["metrics"] for name, task in (("squad", "squad_v1"),)},
    }


def python_answers(model, tokenizer, examples):
    features = list(squad_features(examples, tokenizer, SEQUENCE_LENGTH, **QA_OPTIONS))
    inputs = {
        name: np.stack([getattr(f, name) for f in features])
        for name in ("token_ids", "segment_ids", "padding_mask")
    }
    # Token ids in: `best.keras` carries its preprocessor, whose `predict` takes text.
    outputs = predict_packed(model, inputs, batch_size=64, verbose=0)
    return decode_null_span(
        features, outputs["start_logits"], outputs["end_logits"], version_2=False
    )


def test_qa_served_answers_equal_the_python_post_processing(served):
    tokenizer = AlbertTokenizer(VOCABULARY)
    examples = served["examples"]
    expected = python_answers(served["models"]["squad"], tokenizer, examples)
    actual = served["outputs"]["squad"]["real"]
    assert len(examples) == 12
    for index, example in enumerate(examples):
        best = expected.best_span[example.qid]
        start, end = int(actual["answer_start"][index]), int(actual["answer_end"][index])
        assert actual["answer"][index].decode() == best["text"] == example.context[start:end]
        assert (start, end) == (best["answer_start"], best["answer_end"])
        np.testing.assert_allclose(actual["score"][index], best["score"], atol=1e-4)
    # Thirty steps on twelve questions: the fine-tuned model finds some of the answers.
    answers = [answer.decode() for answer in actual["answer"]]
    assert len(set(answers)) > 3
    assert served["metrics"]["squad"]["f1"] > 0


def test_qa_odd_inputs_equal_the_python_post_processing(served):
    tokenizer = AlbertTokenizer(VOCABULARY)
    paragraphs = [
        {
            "context": _bytes(context).decode("utf-8", "replace"),
            "qas": [
                {
                    "id": key,
                    "question": _bytes(question).decode("utf-8", "replace"),
                    "is_impossible": True,
                }
            ],
        }
        for key, (question, context) in BAD_QA.items()
    ]
    examples = list(read_squad_examples({"data": [{"paragraphs": paragraphs}]}))
    expected = python_answers(served["models"]["squad"], tokenizer, examples)
    for example in examples:
        actual = served["outputs"]["squad"][example.qid]
        best = expected.best_span[example.qid]
        assert actual["answer"][0].decode() == best["text"], example.qid
        span = (int(actual["answer_start"][0]), int(actual["answer_end"][0]))
        assert span == (best["answer_start"], best["answer_end"]), example.qid
        assert example.context[span[0] : span[1]] == best["text"]
    assert served["outputs"]["squad"]["empty_context"]["answer"][0] == b""
    empty = served["outputs"]["squad"]["batch_of_0"]
    assert all(value.shape[0] == 0 for value in empty.values())


def python_tags(model, sentences):
    """Tags and first-piece probabilities of every word: make_ner_dataset + Keras."""
    tokenizer = AlbertTokenizer(VOCABULARY)
    unlabeled = ConllSentences("x", sentences.words, None, sentences.line_numbers)
    tags, probabilities = [], []
    for features, positions in make_ner_dataset(
        unlabeled, tokenizer, model.labels, SEQUENCE_LENGTH, with_positions=True
    ):
        logits = np.asarray(model(features, training=False))
        tags += word_predictions(logits, positions.to_list(), model.labels)[0]
        soft = tf.nn.softmax(logits).numpy()
        probabilities += [[soft[row, p] for p in row_positions] for row, row_positions in
                          enumerate(positions.to_list())]  # fmt: skip
    return tags, probabilities


def check_ner(actual, texts, words, tags, probabilities):
    for row, row_words in enumerate(words):
        count = int(actual["num_words"][row])
        assert [word.decode() for word in actual["words"][row, :count]] == row_words
        text = _bytes(texts[row]).decode("utf-8", "replace")
        spans = zip(actual["word_start"][row, :count], actual["word_end"][row, :count], strict=True)
        assert [text[start:end] for start, end in spans] == row_words
        assert [tag.decode() for tag in actual["tags"][row, :count]] == tags[row]
        if count:
            np.testing.assert_allclose(
                actual["probabilities"][row, :count], np.array(probabilities[row]), atol=1e-5
            )


def test_ner_served_tags_equal_keras(served):
    sentences = served["sentences"]
    tags, probabilities = python_tags(served["models"]["ner"], sentences)
    actual = served["outputs"]["ner"]["real"]
    texts = served["requests"]["ner"]["real"]["text"]
    check_ner(actual, texts, sentences.words, tags, probabilities)
    assert len({tag for row in tags for tag in row}) > 1


def test_ner_unspaced_chinese_is_tagged_per_character(served):
    sentences = served["sentences"]
    tags, probabilities = python_tags(served["models"]["ner"], sentences)
    # The unspaced sentences give the words, tags and probabilities of the spaced ones.
    unspaced = served["requests"]["ner"]["unspaced"]["text"]
    actual = served["outputs"]["ner"]["unspaced"]
    check_ner(actual, unspaced, sentences.words, tags, probabilities)
    spaced = served["outputs"]["ner"]["real"]
    for name in ("words", "tags", "num_words"):
        np.testing.assert_array_equal(actual[name], spaced[name])
    # Client texts: the served words are text_sentences' (the Python side), tagged alike.
    odd = text_sentences(AlbertTokenizer(VOCABULARY), [
        _bytes(text).decode("utf-8", "replace") for text in ODD_NER
    ])  # fmt: skip
    assert odd.words[0] == odd.words[1] == list("北京欢迎你")
    assert odd.words[4] == ["北", "京", "ok"] and odd.words[5] == []
    odd_tags, odd_probabilities = python_tags(served["models"]["ner"], odd)
    actual = served["outputs"]["ner"]["odd"]
    check_ner(actual, ODD_NER, odd.words, odd_tags, odd_probabilities)
    assert actual["tags"][0].tolist() == actual["tags"][1].tolist()
    np.testing.assert_allclose(actual["probabilities"][0], actual["probabilities"][1], atol=1e-6)


def test_exports_use_only_servable_ops_and_carry_the_vocabulary(served):
    report = served["report"]
    core_ops = set(report["core_ops"])
    assert [m for m in report["modules"] if "keras_albert" in m] == []
    for export in report["exports"]:
        op_types = set(export["op_types"])
        assert WORDPIECE_OPS <= op_types
        assert op_types.isdisjoint(FORBIDDEN_OPS), op_types & FORBIDDEN_OPS
        assert op_types - core_ops <= WORDPIECE_OPS, op_types - core_ops
        assert export["must_compile"] == []
        assert export["integer_transposes"] == []
        assert export["variable_reads"] == []
        assert export["assets"] == ["vocab.txt"]
        assert export["warmup"]["count"] == 8
        assert export["warmup"]["errors"] == [None] * 8


def test_qa_export_refuses_a_tokenizer_without_offsets():
    tokenizer = AlbertTokenizer(ALBERT_MODEL, normalize_quotes=True)
    model = AlbertQuestionAnswerer(
        AlbertBackbone(
            vocabulary_size=30000, embedding_dim=8, hidden_dim=16, intermediate_dim=32,
            num_layers=1, num_heads=2, max_sequence_length=64,
        )
    )  # fmt: skip
    with pytest.raises(ValueError, match="must be a WordPiece tokenizer, or a SentencePiece"):
        QuestionAnsweringServingModule(model, tokenizer, **QA_OPTIONS)
