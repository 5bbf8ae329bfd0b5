"""Exported ALBERT-base classifier through the TF1 session path (as TF Serving runs it).

Run by hand: `python -m benchmarks.serving_latency [--rounds 30] [--fixed-rounds 3]`.
Exports a randomly initialized albert_base_v2 classifier (2 classes, the real 30k-clean
SentencePiece model) twice: padded to the longest in the batch (the default) and padded to a
fixed 512. Each is loaded with `tf.compat.v1.saved_model.loader.load` and run by tensor names.
Prints the median latency at batch 1 (a 10-word sentence), the throughput at batch 32 (SST-2
dev sentences), and the share of `serving_default`'s latency spent in tokenization: the
median time of a SavedModel holding only the same in-graph tokenization and packing, run the
same way, over that of `serving_default`. `serve_token_ids` (the same ids, given) is timed too.

`--tasks` times the task exports instead (randomly initialized albert_base_v2 heads, same
session path), in interleaved rounds, and writes the raw times as JSON (`--results-json`):
one SQuAD question over a ~300-word and a ~3,000-word context (`max_sequence_length` 384,
`doc_stride` 128: 2 and 28 windows), one RACE question with 4 options at 512 tokens, and one
30-word NER sentence at 128 tokens.
"""

import json
import os
import statistics
import tempfile
import time

from benchmarks import prelude  # isort: skip  (first: sets the environment)

import numpy as np
import tensorflow as tf
import tensorflow_text  # noqa: F401

from keras_albert import AlbertBackbone, AlbertClassifier
from keras_albert.export import export_saved_model
from keras_albert.text.tokenizer import AlbertTokenizer

DATA = prelude.TEST_DATA
TEN_WORDS = "the film is a charming and often affecting little journey"


class Session:
    def __init__(self, path: str):
        self.session = tf.compat.v1.Session(graph=tf.Graph())
        meta_graph = tf.compat.v1.saved_model.loader.load(self.session, ["serve"], path)
        self.signatures = meta_graph.signature_def

    def run(self, signature_name: str, inputs: dict):
        signature = self.signatures[signature_name]
        feed = {signature.inputs[name].name: value for name, value in inputs.items()}
        fetch = {name: info.name for name, info in signature.outputs.items()}
        return self.session.run(fetch, feed)


def median_seconds(function, rounds: int) -> float:
    function()  # warm
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def export_tokenization(module, path: str) -> None:
    """A SavedModel of `module`'s in-graph tokenization and packing alone."""
    holder = tf.Module()
    holder.tokenizer = module.tokenizer
    pack = tf.function(lambda text: module.pack(text), autograph=False)
    signature = pack.get_concrete_function(text=tf.TensorSpec([None], tf.string))
    tf.saved_model.save(holder, path, signatures={"serving_default": signature})


def measure(session: Session, tokenization: Session, module, texts, rounds: int) -> dict:
    strings = np.array([text.encode() for text in texts], dtype=object)
    packed = {name: value.numpy() for name, value in module.pack(tf.constant(strings)).items()}
    text_time = median_seconds(lambda: session.run("serving_default", {"text": strings}), rounds)
    ids_time = median_seconds(lambda: session.run("serve_token_ids", packed), rounds)
    tokenize_time = median_seconds(
        lambda: tokenization.run("serving_default", {"text": strings}), rounds
    )
    return {
        "seconds": text_time,
        "token_ids_seconds": ids_time,
        "sequence_length": packed["token_ids"].shape[1],
        "tokenization_share": tokenize_time / text_time,
        "tokenization_seconds": tokenize_time,
    }


def _squad_contexts() -> tuple[str, str, str]:
    """A real SQuAD question and contexts of about 300 and 3,000 words (paragraphs joined)."""
    dataset = json.loads((DATA / "squad" / "expmrc-squad-dev-sample.json").read_text("utf-8"))
    paragraphs = [p for article in dataset["data"] for p in article["paragraphs"]]
    question = paragraphs[0]["qas"][0]["question"]
    words = " ".join(p["context"] for p in paragraphs).split()
    while len(words) < 3000:
        words += words
    return question, " ".join(words[:300]), " ".join(words[:3000])


def task_latency(rounds: int) -> dict:
    """Median latency of one request to each task export, interleaved rounds; the raw times."""
    from keras_albert.export.serving_layout import export_for_serving
    from keras_albert.tasks.multiple_choice.model import AlbertMultipleChoice
    from keras_albert.tasks.question_answering.model import AlbertQuestionAnswerer
    from keras_albert.tasks.token_classification.model import AlbertTokenClassifier

    tokenizer = AlbertTokenizer(DATA / "30k-clean.model")

    def backbone():
        return AlbertBackbone.from_preset_name("albert_base_v2")

    question, short_context, long_context = _squad_contexts()
    race = json.loads((DATA / "race" / "expmrc-race-dev-sample.json").read_text("utf-8"))
    passage = race["data"][0]
    ner_words = (DATA / "ner" / "wnut17_dev.conll").read_text("utf-8").split()[::2][:30]
    exports = {
        "squad": (AlbertQuestionAnswerer(backbone()), 384, {"doc_stride": 128}),
        "race": (AlbertMultipleChoice(backbone()), 512, None),
        "ner": (AlbertTokenClassifier(backbone(), num_classes=13), 128, None),
    }
    requests = {
        "squad 300 words": ("squad", {"question": [question], "context": [short_context]}),
        "squad 3000 words": ("squad", {"question": [question], "context": [long_context]}),
        "race 4 options, 512": (
            "race",
            {
                "article": [passage["article"]],
                "question": [passage["questions"][0]],
                "options": [passage["options"][0]],
            },
        ),
        "ner 30 words": ("ner", {"text": [" ".join(ner_words)]}),
    }
    with tempfile.TemporaryDirectory() as directory:
        sessions = {}
        for name, (model, length, options) in exports.items():
            start = time.perf_counter()
            path = export_for_serving(
                model,
                tokenizer,
                directory,
                name,
                max_sequence_length=length,
                task_options=options,
            )
            print(f"{name}: exported in {time.perf_counter() - start:.1f} s")
            sessions[name] = Session(path)
        feeds = {
            label: (
                name,
                {
                    key: np.array(
                        [
                            v.encode() if isinstance(v, str) else [o.encode() for o in v]
                            for v in values
                        ],
                        dtype=object,
                    )
                    for key, values in inputs.items()
                },
            )
            for label, (name, inputs) in requests.items()
        }
        for name, feed in feeds.values():  # warm: tracing, allocator
            sessions[name].run("serving_default", feed)
        times = {label: [] for label in feeds}
        for _ in range(rounds):
            for label, (name, feed) in feeds.items():
                start = time.perf_counter()
                sessions[name].run("serving_default", feed)
                times[label].append(time.perf_counter() - start)
    medians = {label: statistics.median(values) for label, values in times.items()}
    for label, value in medians.items():
        spread = f"{min(times[label]) * 1e3:.0f}-{max(times[label]) * 1e3:.0f}"
        print(f"  {label:20s} {value * 1e3:9.1f} ms median (rounds {spread} ms)")
    return {"rounds": rounds, "seconds": times, "median_seconds": medians}


def main() -> None:
    parser = prelude.parser(__file__, __doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30, help="timed runs, dynamic padding")
    parser.add_argument("--fixed-rounds", type=int, default=3, help="timed runs, fixed 512")
    parser.add_argument("--tasks", action="store_true", help="time the task exports instead")
    args = parser.parse_args()
    prelude.header()
    if args.tasks:
        prelude.write_results(args.results_json, {"tasks": task_latency(args.rounds)})
        return

    tokenizer = AlbertTokenizer(DATA / "30k-clean.model")
    classifier = AlbertClassifier(AlbertBackbone.from_preset_name("albert_base_v2"), 2)
    lines = (DATA / "sst2_dev.tsv").read_text(encoding="utf-8").splitlines()[1:33]
    batch = [line.rsplit("\t", 1)[0] for line in lines]
    print(f"10-word sentence: {len(tokenizer.encode(TEN_WORDS)) + 2} tokens packed")
    with tempfile.TemporaryDirectory() as directory:
        results = {}
        for label, pad, rounds in (("dynamic", False, args.rounds), ("fixed512", True, None)):
            path = os.path.join(directory, label)
            start = time.perf_counter()
            module = export_saved_model(classifier, tokenizer, path, pad_to_max_length=pad)
            print(f"{label}: exported in {time.perf_counter() - start:.1f} s")
            session = Session(path)
            export_tokenization(module, path + "_tokenization")
            tokenization = Session(path + "_tokenization")
            rounds = rounds or args.fixed_rounds
            results[label] = {
                "batch 1": measure(session, tokenization, module, [TEN_WORDS], rounds),
                "batch 32": measure(session, tokenization, module, batch, rounds),
            }
        for label, by_batch in results.items():
            one, many = by_batch["batch 1"], by_batch["batch 32"]
            for batch_label, result in (("batch 1", one), ("batch 32", many)):
                print(
                    f"{label:9s} {batch_label:8s}: "
                    f"serving_default {result['seconds'] * 1e3:8.1f} ms"
                    f" | serve_token_ids {result['token_ids_seconds'] * 1e3:8.1f} ms"
                    f" | tokenization+packing {result['tokenization_seconds'] * 1e3:6.2f} ms"
                    f" ({result['tokenization_share']:.1%}) | seq {result['sequence_length']}"
                )
            print(f"{label:9s} throughput at batch 32: {32 / many['seconds']:.1f} sentences/s")
        dynamic, fixed = results["dynamic"], results["fixed512"]
        print(
            "fixed-512 / dynamic time: batch 1 "
            f"{fixed['batch 1']['seconds'] / dynamic['batch 1']['seconds']:.1f}x, batch 32 "
            f"{fixed['batch 32']['seconds'] / dynamic['batch 32']['seconds']:.1f}x"
        )
    prelude.write_results(args.results_json, {"args": vars(args), "latency": results})


if __name__ == "__main__":
    main()
