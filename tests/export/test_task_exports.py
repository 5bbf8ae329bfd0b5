"""The task exports (question answering, RACE, NER), served in a fresh process, against Python.

One module-scoped fixture exports a tiny `AlbertQuestionAnswerer`, `AlbertMultipleChoice` and
`AlbertTokenClassifier` (hidden 32, one layer, 128 positions) through `export_for_serving`,
writes the requests (real SQuAD, RACE and WNUT 2017 inputs, and bad inputs), and runs
`serving_harness.py` once in a new Python process without keras_albert. The answers must equal
what the in-process Python path gives: `squad_features` + Keras + `decode_null_span` for QA,
`make_race_dataset` + Keras for RACE, `make_ner_dataset` + Keras + `word_predictions` for NER.
"""

import json

import keras
import numpy as np
import pytest
import tensorflow as tf
import tensorflow_text as tf_text
from tensorflow_serving.apis import prediction_log_pb2

from keras_albert import AlbertBackbone
from keras_albert.export.serving_layout import export_for_serving
from keras_albert.serving import requests as serving_requests
from keras_albert.tasks.multiple_choice.features import RaceExamples, make_race_dataset, read_race
from keras_albert.tasks.multiple_choice.model import AlbertMultipleChoice
from keras_albert.tasks.multiple_choice.serving import MultipleChoiceServingModule
from keras_albert.tasks.question_answering.features import read_squad_examples, squad_features
from keras_albert.tasks.question_answering.model import AlbertQuestionAnswerer
from keras_albert.tasks.question_answering.postprocess import decode_answer_class, decode_null_span
from keras_albert.tasks.question_answering.serving import QuestionAnsweringServingModule
from keras_albert.tasks.token_classification.features import (
    ConllSentences,
    label_list,
    make_ner_dataset,
    read_conll,
    word_predictions,
)
from keras_albert.tasks.token_classification.model import AlbertTokenClassifier
from keras_albert.text.offsets import tokenize_with_offsets, tokenize_with_offsets_graph
from keras_albert.text.tokenizer import AlbertTokenizer
from tests.export.conftest import read_logs, run_harness, write_requests
from tests.export.serving_harness import integer_transposes
from tests.export.test_serving_export import (
    ALLOWED_TF_TEXT_OPS,
    FORBIDDEN_OPS,
    outputs_of,
)
from tests.text.text_data import ALBERT_MODEL, DATA

SIZES = dict(
    vocabulary_size=30000,
    embedding_dim=8,
    hidden_dim=32,
    intermediate_dim=64,
    num_layers=1,
    num_heads=2,
    max_sequence_length=128,
)
QA_OPTIONS = dict(doc_stride=48, max_query_length=32)
SQUAD_FILES = (
    DATA / "squad" / "expmrc-squad-dev-sample.json",
    DATA / "squad" / "dev-v2.0-small.json",
)
LONG_CONTEXT = "word " * 20_000  # 100,000 characters
BAD_QA = {
    "empty_question": (b"", b"The cat sat on the mat."),
    "empty_context": (b"Where did the cat sit?", b""),
    "both_empty": (b"", b""),
    "long_context": (b"Which word?", LONG_CONTEXT.encode()),
    "invalid_utf8": (b"wh\xffo?", b"ab\xff\xfe cd \xc3 the cat"),
    "long_question": (("why " * 200).encode(), b"Because the cat sat on the mat."),
}
BAD_RACE = {
    "empty_article": (b"", b"What is it?", [b"a", b"b", b"c", b"d"]),
    "empty_options": (b"Some article.", b"Which?", [b"yes", b"no", b"", b""]),
    "invalid_utf8": (b"art\xff icle", b"q\xfe?", [b"a\xc3", b"b", b"c", b"d"]),
    "long_article": (LONG_CONTEXT.encode(), b"Which?", [b"a", b"b", b"c", b"d"]),
}
BAD_NER = {
    "empty": b"",
    "whitespace": b" \t\n ",
    "long": LONG_CONTEXT.encode(),
    "invalid_utf8": b"ab\xff\xfe cd \xc3",
}


def squad_examples():
    examples = []
    for path in SQUAD_FILES:
        examples += list(read_squad_examples(path))
    return examples


def race_examples():
    examples = read_race(str(DATA / "race" / "expmrc-race-dev-sample.json"))
    return examples


def ner_sentences():
    sentences = read_conll(DATA / "ner" / "wnut17_dev.conll")
    return sentences


def _log(model_name, inputs, signature="serving_default"):
    request = serving_requests.predict_request(model_name, inputs, signature)
    return prediction_log_pb2.PredictionLog(
        predict_log=prediction_log_pb2.PredictLog(request=request)
    )


def _strings(values):
    values = list(values)
    if values and isinstance(values[0], list):
        array = np.empty((len(values), len(values[0])), dtype=object)
        for row, items in enumerate(values):
            array[row, :] = items
        return array
    return np.array(values, dtype=object)


@pytest.fixture(scope="module")
def task_served(tmp_path_factory):
    keras.utils.set_random_seed(11)
    tokenizer = AlbertTokenizer(ALBERT_MODEL)
    ner = ner_sentences()
    labels = label_list(ner.tags)
    models = {
        "squad": AlbertQuestionAnswerer(AlbertBackbone(**SIZES)),
        "race": AlbertMultipleChoice(AlbertBackbone(**SIZES)),
        "ner": AlbertTokenClassifier(
            AlbertBackbone(**SIZES), num_classes=len(labels), labels=labels
        ),
    }
    # Random heads give near-uniform outputs; larger head weights make the answers differ.
    for model in models.values():
        for variable in model.trainable_variables:
            if (
                "kernel" in variable.path
                and len(variable.shape) == 2
                and "backbone" not in variable.path
            ):
                variable.assign(variable * 50.0)
    options = {"squad": QA_OPTIONS}
    root = tmp_path_factory.mktemp("task_serving")
    base_dir = root / "saved_models"
    requests = {name: {} for name in models}
    squad = squad_examples()
    questions = squad[::4][:24]
    requests["squad"]["real"] = {
        "question": _strings([e.question.encode() for e in questions]),
        "context": _strings([e.context.encode() for e in questions]),
    }
    for key, (question, context) in BAD_QA.items():
        requests["squad"][key] = {"question": _strings([question]), "context": _strings([context])}
    requests["squad"]["batch_of_0"] = {"question": _strings([]), "context": _strings([])}
    race = race_examples()
    race_rows = list(range(min(8, len(race))))
    requests["race"]["real"] = {
        "article": _strings([race.articles[i].encode() for i in race_rows]),
        "question": _strings([race.questions[i].encode() for i in race_rows]),
        "options": _strings(
            [
                [o.encode() for o in race.options[i]] + [b""] * (4 - len(race.options[i]))
                for i in race_rows
            ]
        ),
    }
    for key, (article, question, opts) in BAD_RACE.items():
        requests["race"][key] = {
            "article": _strings([article]),
            "question": _strings([question]),
            "options": _strings([opts]),
        }
    requests["race"]["wrong_length"] = {
        "article": _strings([b"a"]),
        "question": _strings([b"q"]),
        "options": _strings([[b"a", b"b", b"c"]]),
    }
    sentences = [" ".join(words) for words in ner.words[:16]]
    requests["ner"]["real"] = {"text": _strings([s.encode() for s in sentences])}
    for key, text in BAD_NER.items():
        requests["ner"][key] = {"text": _strings([text])}
    requests["ner"]["all_bad"] = {
        "text": _strings([text for key, text in BAD_NER.items() if key != "long"])
    }

    job = {"exports": [], "models_config": str(base_dir / "models.config")}
    paths, keys = {}, {}
    for name, model in models.items():
        paths[name] = export_for_serving(
            model,
            tokenizer,
            base_dir=base_dir,
            name=name,
            max_sequence_length=128,
            task_options=options.get(name),
        )
        keys[name] = list(requests[name])
        logs = [_log(name, inputs) for inputs in requests[name].values()]
        files = write_requests(root, name, logs)
        job["exports"].append({"path": paths[name], **files})
    report = run_harness(root, job)
    print("harness seconds:", [export["seconds"] for export in report["exports"]])
    served = {}
    for (name, export_job), export_report in zip(
        zip(models, job["exports"], strict=True), report["exports"], strict=True
    ):
        responses = read_logs(export_job["responses"])
        served[name] = {
            "report": export_report,
            "outputs": {
                key: (outputs_of(log), error)
                for key, log, error in zip(
                    keys[name], responses, export_report["request_errors"], strict=True
                )
            },
            "path": paths[name],
            "model": models[name],
            "warmup": read_logs(export_job["warmup_responses"]),
        }
    return {
        "exports": served,
        "report": report,
        "tokenizer": tokenizer,
        "labels": labels,
        "questions": questions,
        "race": race,
        "race_rows": race_rows,
        "sentences": sentences,
        "requests": requests,
    }


def _ok(served, name, key):
    outputs, error = served["exports"][name]["outputs"][key]
    assert error is None, error
    return outputs


def python_answers(model, tokenizer, questions, max_sequence_length=128):
    """The in-process path: Python features, Keras logits, Python decoding."""
    features = list(
        squad_features(questions, tokenizer, sequence_length=max_sequence_length, **QA_OPTIONS)
    )
    inputs = {
        name: np.stack([getattr(f, name) for f in features])
        for name in ("token_ids", "segment_ids", "padding_mask")
    }
    outputs = model.predict(inputs, batch_size=64, verbose=0)
    return decode_null_span(
        features,
        outputs["start_logits"],
        outputs["end_logits"],
        version_2=True,
        null_score_threshold=None,
    )


def test_qa_answers_equal_the_python_post_processing(task_served):
    export = task_served["exports"]["squad"]
    tokenizer = task_served["tokenizer"]
    questions = [
        q.__class__(str(i), q.question, q.context, q.answers, q.is_impossible)
        for i, q in enumerate(task_served["questions"])
    ]
    expected = python_answers(export["model"], tokenizer, questions)
    actual = _ok(task_served, "squad", "real")
    answers = [a.decode() for a in actual["answer"]]
    assert answers == [expected.best_span[str(i)]["text"] for i in range(len(questions))]
    assert len(set(answers)) > len(answers) // 2  # not one answer for all
    for i, question in enumerate(questions):
        best = expected.best_span[str(i)]
        start, end = int(actual["answer_start"][i]), int(actual["answer_end"][i])
        assert (start, end) == (best["answer_start"], best["answer_end"])
        assert question.context[start:end] == answers[i]
        np.testing.assert_allclose(actual["score"][i], best["score"], atol=1e-4)
        np.testing.assert_allclose(actual["null_odds"][i], expected.null_odds[str(i)], atol=1e-4)
    np.testing.assert_allclose(
        actual["no_answer_probability"], 1 / (1 + np.exp(-actual["null_odds"])), rtol=1e-5
    )
    # Some of these contexts need several windows at 128 positions.
    windows = [len(list(squad_features([q], tokenizer, 128, **QA_OPTIONS))) for q in questions]
    assert max(windows) >= 3


def test_graph_offsets_equal_python_on_every_squad_context(task_served):
    """Measured: every context of both SQuAD files gets the Python path's ids and spans."""
    tokenizer = task_served["tokenizer"]
    contexts = list(dict.fromkeys(example.context for example in squad_examples()))
    sentencepiece = tf_text.SentencepieceTokenizer(
        model=tokenizer.serialized_model, out_type=tf.int32
    )
    graph = tokenize_with_offsets_graph(tokenizer, sentencepiece, tf.constant(contexts))
    differ = []
    for index, context in enumerate(contexts):
        python = tokenize_with_offsets(tokenizer, context)
        got = [graph[key][index].numpy().tolist() for key in ("ids", "starts", "ends")]
        if got != [python.ids, python.starts, python.ends]:
            differ.append(index)
    assert len(contexts) == 57 and differ == []


def test_qa_bad_inputs_give_defined_outputs(task_served):
    """Each bad input gets what the Python path answers for the same (U+FFFD-decoded) text:
    an empty question or context, 100,000 characters (hundreds of windows), invalid UTF-8 and a
    question longer than the window (cut to max_query_length tokens)."""
    paragraphs = [
        {
            "context": context.decode("utf-8", "replace"),
            "qas": [
                {"id": key, "question": question.decode("utf-8", "replace"), "is_impossible": True}
            ],
        }
        for key, (question, context) in BAD_QA.items()
    ]
    examples = list(read_squad_examples({"data": [{"paragraphs": paragraphs}]}))
    model = task_served["exports"]["squad"]["model"]
    expected = python_answers(model, task_served["tokenizer"], examples)
    for key in BAD_QA:
        actual = _ok(task_served, "squad", key)
        best = expected.best_span[key]
        assert actual["answer"][0].decode() == best["text"], key
        assert (int(actual["answer_start"][0]), int(actual["answer_end"][0])) == (
            best["answer_start"],
            best["answer_end"],
        ), key
        if best["text"] == "":
            assert actual["score"][0] == -np.inf and actual["no_answer_probability"][0] == 1.0
        else:
            np.testing.assert_allclose(actual["score"][0], best["score"], atol=1e-4)
    assert _ok(task_served, "squad", "empty_context")["answer"][0] == b""
    empty = _ok(task_served, "squad", "batch_of_0")
    assert all(value.shape[0] == 0 for value in empty.values())


def _race_rows(task_served):
    """(key, row) of every RACE request checked against Keras: real questions, then bad ones."""
    race, rows = task_served["race"], task_served["race_rows"]
    examples = [("real", (race.articles[i], race.questions[i], race.options[i])) for i in rows]
    for key, (article, question, options) in BAD_RACE.items():
        decoded = [o.decode("utf-8", "replace") for o in options]
        examples.append(
            (
                key,
                (
                    article.decode("utf-8", "replace"),
                    question.decode("utf-8", "replace"),
                    [o for o in decoded if o],
                ),
            )
        )
    return examples


@pytest.fixture(scope="module")
def race_keras_probabilities(task_served):
    """The in-process path for every RACE request at once: make_race_dataset + Keras."""
    rows = _race_rows(task_served)
    examples = RaceExamples(
        [str(i) for i in range(len(rows))],
        [row[1][0] for row in rows],
        [row[1][1] for row in rows],
        [row[1][2] for row in rows],
        None,
        [""] * len(rows),
        [""] * len(rows),
    )
    model = task_served["exports"]["race"]["model"]
    dataset = make_race_dataset(
        examples, task_served["tokenizer"], 128, batch_size=16, num_choices=4
    )
    logits = np.concatenate([np.asarray(model(f, training=False)) for f in dataset])
    probabilities = tf.nn.softmax(logits).numpy()
    keys = [key for key, _ in rows]
    return {
        key: probabilities[[i for i, k in enumerate(keys) if k == key]]
        for key in dict.fromkeys(keys)
    }


def test_race_equals_keras(task_served, race_keras_probabilities):
    actual = _ok(task_served, "race", "real")
    probabilities = race_keras_probabilities["real"]
    np.testing.assert_allclose(actual["probabilities"], probabilities, atol=1e-5)
    np.testing.assert_array_equal(actual["answer_index"], probabilities.argmax(-1))
    assert [a.decode() for a in actual["answer"]] == ["ABCD"[i] for i in probabilities.argmax(-1)]
    assert len(set(actual["answer_index"].tolist())) > 1


def test_race_bad_inputs(task_served, race_keras_probabilities):
    for key in BAD_RACE:
        actual = _ok(task_served, "race", key)
        np.testing.assert_allclose(
            actual["probabilities"], race_keras_probabilities[key], atol=1e-5, err_msg=key
        )
    assert _ok(task_served, "race", "empty_options")["probabilities"][0, 2:].tolist() == [0, 0]
    _, error = task_served["exports"]["race"]["outputs"]["wrong_length"]
    assert "InvalidArgumentError" in error and "num_choices=4" in error


@pytest.fixture(scope="module")
def ner_keras(task_served):
    """The in-process path for every NER text at once: make_ner_dataset + Keras + word tags."""
    texts = list(task_served["requests"]["ner"]["real"]["text"]) + list(BAD_NER.values())
    words = [text.decode("utf-8", "replace").split() for text in texts]
    sentences = ConllSentences("x", words, None, [0] * len(words))
    labels = task_served["labels"]
    model = task_served["exports"]["ner"]["model"]
    tags, probabilities = [], []
    for features, positions in make_ner_dataset(
        sentences, task_served["tokenizer"], labels, 128, batch_size=32, with_positions=True
    ):
        logits = np.asarray(model(features, training=False))
        batch_tags, _ = word_predictions(logits, positions.to_list(), labels)
        tags += batch_tags
        soft = tf.nn.softmax(logits).numpy()
        for row, row_positions in enumerate(positions.to_list()):
            probabilities.append(
                [soft[row, p] if p >= 0 else np.zeros(len(labels)) for p in row_positions]
            )
    return {text: (words[i], tags[i], probabilities[i]) for i, text in enumerate(texts)}


def _check_ner(actual, expected, texts):
    for row, text in enumerate(texts):
        words, tags, probabilities = expected[text]
        count = int(actual["num_words"][row])
        assert count == len(words)
        decoded = text.decode("utf-8", "replace")
        assert [w.decode() for w in actual["words"][row, :count]] == words
        spans = zip(actual["word_start"][row, :count], actual["word_end"][row, :count], strict=True)
        assert [decoded[s:e] for s, e in spans] == words
        assert [t.decode() for t in actual["tags"][row, :count]] == tags
        if count:
            np.testing.assert_allclose(
                actual["probabilities"][row, :count], np.array(probabilities), atol=1e-5
            )
        assert (actual["word_start"][row, count:] == -1).all()
        assert all(t == b"" for t in actual["tags"][row, count:])


def test_ner_equals_keras(task_served, ner_keras):
    texts = task_served["requests"]["ner"]["real"]["text"]
    actual = _ok(task_served, "ner", "real")
    _check_ner(actual, ner_keras, texts)
    assert len({t for row in actual["tags"] for t in row}) > 2


def test_ner_bad_inputs(task_served, ner_keras):
    for key in [*BAD_NER, "all_bad"]:
        texts = task_served["requests"]["ner"][key]["text"]
        _check_ner(_ok(task_served, "ner", key), ner_keras, texts)
    long = _ok(task_served, "ner", "long")
    assert int(long["num_words"][0]) == 20_000
    assert (long["tags"][0, 200:] == b"O").all()  # past the packed length: "O"


def test_op_allow_list_warmup_and_no_keras_albert(task_served):
    core_ops = set(task_served["report"]["core_ops"])
    assert [m for m in task_served["report"]["modules"] if "keras_albert" in m] == []
    for name, export in task_served["exports"].items():
        report = export["report"]
        op_types = set(report["op_types"])
        assert {"SentencepieceOp", "SentencepieceTokenizeOp"} <= op_types
        assert op_types.isdisjoint(FORBIDDEN_OPS), op_types & FORBIDDEN_OPS
        # The offsets op is registered by the same TF Text kernel file (sentencepiece_kernels.cc)
        # as SentencepieceTokenizeOp.
        allowed = ALLOWED_TF_TEXT_OPS | {"SentencepieceTokenizeWithOffsetsOp"}
        assert op_types - core_ops <= allowed, (name, op_types - core_ops)
        assert report["must_compile"] == []
        assert report["integer_transposes"] == [], name
        assert report["variable_reads"] == [], name
        assert report["assets"] == ["sentencepiece.model"]
        warmup = report["warmup"]
        assert warmup["count"] == 8 and warmup["errors"] == [None] * 8
        assert set(warmup["signatures"]) == {"serving_default", "serve_token_ids"}
    signatures = task_served["exports"]["squad"]["report"]["signatures"]["serving_default"]
    assert {k: v["dtype"] for k, v in signatures["outputs"].items()} == {
        "answer": "string",
        "answer_start": "int32",
        "answer_end": "int32",
        "score": "float32",
        "null_odds": "float32",
        "no_answer_probability": "float32",
    }
    config = {entry["name"] for entry in task_served["report"]["models_config"]}
    assert config == {"squad", "race", "ner"}


def test_answer_class_head_answers_equal_the_python_decoding(task_served):
    """The original v2 head (top-k starts × ends, answerability logit), decoded in the graph,
    against `decode_answer_class` on the same Python features and Keras outputs."""
    # Not seeded here: seeding resets TensorFlow's eager resources, the shared tokenizer's
    # SentencePiece model among them. The check compares two paths on the same weights.
    tokenizer = task_served["tokenizer"]
    model = AlbertQuestionAnswerer(AlbertBackbone(**SIZES), answerability="answer_class")
    for variable in model.trainable_variables:
        if "kernel" in variable.path and "backbone" not in variable.path:
            variable.assign(variable * 20.0)
    # The best span of every question (no threshold), as `best_span` below.
    module = QuestionAnsweringServingModule(
        model, tokenizer, 128, null_score_threshold=None, **QA_OPTIONS
    )
    # The harness's exports use the null-span head; this one's graph is checked here.
    graph = module.endpoints["serving_default"].graph.as_graph_def()
    assert integer_transposes(graph) == []
    questions = [
        example.__class__(str(i), example.question, example.context, (), False)
        for i, example in enumerate(squad_examples()[1::7][:8])
    ]
    actual = module.endpoints["serving_default"](
        question=tf.constant([q.question for q in questions]),
        context=tf.constant([q.context for q in questions]),
    )
    features = list(squad_features(questions, tokenizer, 128, **QA_OPTIONS))
    inputs = {
        name: np.stack([getattr(f, name) for f in features])
        for name in ("token_ids", "segment_ids", "padding_mask")
    }
    outputs = model.predict(inputs, verbose=0)
    expected = decode_answer_class(features, outputs, null_score_threshold=None)
    for i in range(len(questions)):
        best = expected.best_span[str(i)]
        assert actual["answer"][i].numpy().decode() == best["text"]
        assert int(actual["answer_start"][i]) == best["answer_start"]
        np.testing.assert_allclose(float(actual["score"][i]), best["score"], atol=1e-4)
        np.testing.assert_allclose(
            float(actual["null_odds"][i]), expected.null_odds[str(i)], atol=1e-5
        )
    # With the defaults on both sides, the one null threshold of evaluation and export: the
    # served answers are the evaluated predictions ("" where the null odds exceed it).
    thresholded = QuestionAnsweringServingModule(model, tokenizer, 128, **QA_OPTIONS)
    served = thresholded.endpoints["serving_default"](
        question=tf.constant([q.question for q in questions]),
        context=tf.constant([q.context for q in questions]),
    )
    evaluated = decode_answer_class(features, outputs)
    answers = [answer.decode() for answer in served["answer"].numpy()]
    assert answers == [evaluated.predictions[str(i)] for i in range(len(questions))]


def test_client_sends_task_inputs_over_rest(task_served):
    """`send_inputs` (and the tool's --fields) build the task requests TF Serving's REST API
    takes; a local server answering with the session loader gives the harness's answers."""
    import http.server
    import threading

    from keras_albert.commands import command_module
    from keras_albert.export.client import send_inputs
    from tests.export.serving_harness import Servable

    fields_columns = command_module("client").fields_columns

    servables = {name: Servable(task_served["exports"][name]["path"]) for name in ("squad", "race")}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            servable = servables[self.path.split("/")[3].split(":")[0]]
            outputs = servable.run("serving_default", servable.rest_inputs("serving_default", body))
            outputs = {
                name: [v.decode() if isinstance(v, bytes) else v for v in value.tolist()]
                for name, value in outputs.items()
            }
            answer = json.dumps({"outputs": outputs}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        port = server.server_address[1]
        requests = task_served["requests"]
        real = requests["squad"]["real"]
        for rest_format in ("instances", "inputs"):
            columns = {name: list(values[:3]) for name, values in real.items()}
            outputs = send_inputs(columns, "squad", rest_port=port, rest_format=rest_format)
            expected = _ok(task_served, "squad", "real")["answer"][:3]
            assert [a.encode() for a in outputs["answer"]] == list(expected)
        race = requests["race"]["real"]
        texts = []
        for row in range(2):
            texts += [race["article"][row].decode(), race["question"][row].decode()]
            texts += [option.decode() for option in race["options"][row]]
        columns = fields_columns("article,question,options,options,options,options", texts)
        outputs = send_inputs(columns, "race", rest_port=port, rest_format="instances")
        np.testing.assert_allclose(
            outputs["probabilities"],
            _ok(task_served, "race", "real")["probabilities"][:2],
            atol=1e-6,
        )
    finally:
        server.shutdown()
    assert "multiple of 2" in fields_columns("question,context", ["a", "b", "c"])


def test_inputs_of_different_batch_sizes_are_refused_naming_both():
    """Checked on the endpoints in process: the check is an Assert op of the signature."""
    tokenizer = AlbertTokenizer(ALBERT_MODEL)
    backbone = AlbertBackbone(**SIZES)
    qa = QuestionAnsweringServingModule(
        AlbertQuestionAnswerer(backbone), tokenizer, 128, **QA_OPTIONS
    )
    with pytest.raises(tf.errors.InvalidArgumentError) as error:
        qa.endpoints["serving_default"](
            question=tf.constant(["Who?", "Where?"]), context=tf.constant(["Jane wrote it."] * 3)
        )
    message = " ".join(error.value.message.split())
    assert "serving_default: `question` and `context` must have the same batch size" in message
    assert "[`question` batch size:] [2] [`context` batch size:] [3]" in message

    race = MultipleChoiceServingModule(AlbertMultipleChoice(backbone), tokenizer, 64)
    options = tf.constant([["a", "b", "c", "d"]] * 2)
    for article, question, other in (
        (["Some text."] * 3, ["Which?"] * 2, "question"),
        (["Some text."] * 2, ["Which?"] * 1, "question"),
        (["Some text."] * 1, ["Which?"] * 1, "options"),
    ):
        with pytest.raises(tf.errors.InvalidArgumentError) as error:
            race.endpoints["serving_default"](
                article=tf.constant(article), question=tf.constant(question), options=options
            )
        message = " ".join(error.value.message.split())
        assert f"`article` and `{other}` must have the same batch size" in message
    # Agreeing batches still answer.
    answered = race.endpoints["serving_default"](
        article=tf.constant(["Some text."] * 2), question=tf.constant(["Which?"] * 2),
        options=options,
    )  # fmt: skip
    assert answered["probabilities"].shape == (2, 4)
