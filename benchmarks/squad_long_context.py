"""One SQuAD question over long contexts: our string-in export against Hugging Face's pipeline.

Run by hand (needs the test extra: transformers, torch CPU):
    python -m benchmarks.squad_long_context --rounds 5 --words 300,1000,3000

In ONE process, in interleaved rounds (every engine once per round and context length):
- our question-answering SavedModel of an ALBERT-base-shaped `AlbertQuestionAnswerer`
  (albert_base_v2, initial weights with small random offsets on every bias and LayerNorm γ/β,
  as `inference_precision.py`), max_sequence_length 384, doc_stride 128, at float32 and
  bfloat16, loaded with the TF1 session loader and run through `serving_default` — strings
  in, answer out: tokenization with character offsets, every window of the context in ONE
  model call, the n-best span search, all in the graph;
- the same weights through our HF converter → `AlbertForQuestionAnswering` + the same
  SentencePiece model (transformers' `AlbertTokenizer`, the Rust one), doing what
  `pipeline("question-answering")` did before transformers 5 removed it (`HuggingFace`), with
  the same window length, stride and question length, float32, under `torch.no_grad`.
The contexts are real SQuAD dev paragraphs joined to 300, 1,000 and 3,000 words (the question
is the first paragraph's first question). The answers can differ: transformers' Rust tokenizer
splits some punctuation differently from the original SentencePiece recipe ours follows (e.g.
"(gsp)"), which moves every later token and window. Prints the windows per context, medians,
the ratio to HF and to our float32; writes the raw times to `--results-json` and a plot beside it.
"""

import json
import os
import shutil
import statistics
import tempfile
import time

from benchmarks import prelude  # isort: skip  (first: sets the environment)

import numpy as np
import tensorflow_text  # noqa: F401

from benchmarks.inference_precision import Session
from keras_albert import AlbertBackbone
from keras_albert.convert.huggingface import write_hf_directory
from keras_albert.export import export_saved_model
from keras_albert.serving.precision import SERVING_PRECISIONS
from keras_albert.tasks.question_answering.model import AlbertQuestionAnswerer
from keras_albert.text.tokenizer import AlbertTokenizer

DATA = prelude.TEST_DATA
MAX_SEQUENCE_LENGTH = 384
DOC_STRIDE = 128
MAX_QUERY_LENGTH = 64
N_BEST = 20
MAX_ANSWER_LENGTH = 30


def squad_question_and_words() -> tuple[str, list[str]]:
    """The first question of the SQuAD dev sample and all its paragraphs' words, in order."""
    dataset = json.loads((DATA / "squad" / "expmrc-squad-dev-sample.json").read_text("utf-8"))
    paragraphs = [p for article in dataset["data"] for p in article["paragraphs"]]
    words = " ".join(p["context"] for p in paragraphs).split()
    return paragraphs[0]["qas"][0]["question"], words


def context_of(words: list[str], count: int) -> str:
    repeated = list(words)
    while len(repeated) < count:
        repeated += words
    return " ".join(repeated[:count])


def base_model() -> AlbertQuestionAnswerer:
    model = AlbertQuestionAnswerer(AlbertBackbone.from_preset_name("albert_base_v2"))
    offsets = np.random.default_rng(1)
    for weight in model.weights:
        if weight.path.endswith(("bias", "gamma", "beta")):
            weight.assign(weight.numpy() + offsets.normal(0.0, 0.02, weight.shape))
    return model


class Ours:
    def __init__(self, path: str):
        self.session = Session(path)

    def __call__(self, question: str, context: str) -> str:
        feed = {
            "question": np.array([question.encode()], dtype=object),
            "context": np.array([context.encode()], dtype=object),
        }
        return self.session.run("serving_default", feed)["answer"][0].decode()


class HuggingFace:
    """What `transformers.pipeline("question-answering")` did (transformers 5 removed that
    pipeline): the fast tokenizer cuts the context into the same windows (`stride`,
    overflowing tokens, offsets), `AlbertForQuestionAnswering` runs ALL windows in one batch
    (the pipeline ran them one at a time: this is the faster form), and the best span over the
    windows is searched as the pipeline did (top `N_BEST` starts × ends per window, context
    tokens only, start ≤ end, at most `MAX_ANSWER_LENGTH` tokens)."""

    def __init__(self, model, directory: str, vocabulary: str):
        import torch
        from transformers import AlbertForQuestionAnswering, AlbertTokenizer

        self.torch = torch
        write_hf_directory(model, directory)
        shutil.copy(vocabulary, os.path.join(directory, "spiece.model"))
        self.model = AlbertForQuestionAnswering.from_pretrained(directory).eval()
        self.tokenizer = AlbertTokenizer.from_pretrained(directory)  # the Rust (fast) one

    def __call__(self, question: str, context: str) -> str:
        question_ids = self.tokenizer(question, add_special_tokens=False)["input_ids"]
        question = self.tokenizer.decode(question_ids[:MAX_QUERY_LENGTH])
        features = self.tokenizer(
            question,
            context,
            truncation="only_second",
            max_length=MAX_SEQUENCE_LENGTH,
            stride=MAX_SEQUENCE_LENGTH - 3 - len(question_ids[:MAX_QUERY_LENGTH]) - DOC_STRIDE,
            return_overflowing_tokens=True,
            return_offsets_mapping=True,
            return_token_type_ids=True,
            padding="longest",
            return_tensors="pt",
        )
        with self.torch.no_grad():
            outputs = self.model(
                input_ids=features["input_ids"],
                attention_mask=features["attention_mask"],
                token_type_ids=features["token_type_ids"],
            )
        starts, ends = outputs.start_logits.numpy(), outputs.end_logits.numpy()
        best, best_span = -np.inf, (0, 0)
        for window in range(starts.shape[0]):
            is_context = np.array(features.sequence_ids(window)) == 1
            offsets = features["offset_mapping"][window].numpy()
            top_starts = np.argsort(-starts[window])[:N_BEST]
            top_ends = np.argsort(-ends[window])[:N_BEST]
            for start in top_starts:
                for end in top_ends:
                    if not (is_context[start] and is_context[end] and start <= end):
                        continue
                    if end - start + 1 > MAX_ANSWER_LENGTH:
                        continue
                    score = starts[window, start] + ends[window, end]
                    if score > best:
                        best, best_span = score, (offsets[start][0], offsets[end][1])
        return context[best_span[0] : best_span[1]]


def windows(tokenizer: AlbertTokenizer, question: str, context: str) -> int:
    """Windows the original's rule cuts the context into (as the export does)."""
    query = min(len(tokenizer.encode(question)), MAX_QUERY_LENGTH)
    length = MAX_SEQUENCE_LENGTH - query - 3
    stride = min(length, DOC_STRIDE)
    extra = max(len(tokenizer.encode(context)) - length, 0)
    return 1 + (extra + stride - 1) // stride


def main() -> None:
    parser = prelude.parser(__file__, __doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="interleaved timed rounds")
    parser.add_argument("--words", default="300,1000,3000", help="context lengths in words")
    parser.add_argument("--skip-hf", action="store_true", help="ours only")
    parser.add_argument("--exports-dir", help="keep the exports here between runs")
    args = parser.parse_args()
    prelude.header()
    lengths = [int(value) for value in args.words.split(",")]

    features = prelude.cpu()
    vocabulary = str(DATA / "30k-clean.model")
    tokenizer = AlbertTokenizer(vocabulary)
    question, words = squad_question_and_words()
    contexts = {count: context_of(words, count) for count in lengths}
    model = base_model()
    directory = args.exports_dir or tempfile.mkdtemp()
    engines = {}
    for precision in SERVING_PRECISIONS:
        path = os.path.join(directory, f"squad_base_{precision}")
        if not os.path.exists(path):
            export_saved_model(
                model,
                tokenizer,
                path,
                max_sequence_length=MAX_SEQUENCE_LENGTH,
                precision=precision,
                task_options={"doc_stride": DOC_STRIDE, "max_query_length": MAX_QUERY_LENGTH},
            )
        engines[f"ours {precision}"] = Ours(path)
    if not args.skip_hf:
        engines["HF fp32"] = HuggingFace(
            model, os.path.join(directory, "hf_squad_base"), vocabulary
        )

    answers = {}
    for name, engine in engines.items():  # warm; and what each answers
        answers[name] = {count: engine(question, contexts[count]) for count in lengths}
    times = {name: {count: [] for count in lengths} for name in engines}
    for round_index in range(args.rounds):
        for count in lengths:
            for name, engine in engines.items():
                start = time.perf_counter()
                engine(question, contexts[count])
                times[name][count].append(time.perf_counter() - start)
        load = prelude.load_average()
        print(f"  round {round_index + 1}/{args.rounds} (load {load})", flush=True)

    medians = {
        name: {count: statistics.median(values) for count, values in by_length.items()}
        for name, by_length in times.items()
    }
    reference = "HF fp32" if "HF fp32" in engines else "ours float32"
    print(f"\nquestion: {question!r}")
    for count in lengths:
        print(f"{count} words, {windows(tokenizer, question, contexts[count])} windows:")
        for name in engines:
            seconds = medians[name][count]
            print(
                f"  {name:18s} {seconds * 1e3:8.0f} ms  ×{medians[reference][count] / seconds:5.2f}"
                f" vs {reference}, ×{medians['ours float32'][count] / seconds:5.2f} vs ours "
                f"float32   answer {answers[name][count][:40]!r}"
            )
    result = {
        "cpu": features,
        "load_average_after": prelude.load_average(),
        "question": question,
        "windows": {count: windows(tokenizer, question, contexts[count]) for count in lengths},
        "seconds": times,
        "median_seconds": medians,
        "answers": answers,
    }
    prelude.write_results(args.results_json, result)
    plot(medians, lengths, os.path.splitext(args.results_json)[0] + ".png")


def plot(medians: dict, lengths: list[int], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(6, 4))
    for name, by_length in medians.items():
        axis.plot(lengths, [by_length[count] for count in lengths], marker="o", label=name)
    axis.set_xlabel("context words")
    axis.set_ylabel("latency of one question (s, median)")
    axis.set_title("SQuAD, ALBERT-base, max_seq 384, stride 128")
    axis.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    print(f"plot: {path}")


if __name__ == "__main__":
    main()
