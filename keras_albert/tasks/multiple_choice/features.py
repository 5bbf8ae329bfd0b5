"""RACE multiple-choice reading comprehension: files → examples → packed `(batch, choices, seq)`.

The formatting is google-research/albert's `race_utils`:
- segment A is the article; for each option, segment B is the question with the option put in
  its blank when the question has one (`_`), else `question + " " + option`;
- segment B keeps its last `max_qa_length` tokens (`defaults.MAX_QA_LENGTH`, the original's);
  the article is cut (from its end) to what is left of `sequence_length - 3` ([CLS], [SEP], [SEP]).

Two deliberate differences, both documented where they act:
- a blank is a run of underscores: "went to ______." gets the option once. The original
  replaces every `_` character, so a run of six gets the option six times; on RACE's own
  files (one `_` per blank) the two agree. The rule is applied to normalized text (NFKD maps
  a full-width "＿" to "_"), as the original applies it after `preprocess_text`.
- segment B keeps at most `min(max_qa_length, (sequence_length - 3) // 2)` tokens, so that a
  short `sequence_length` still leaves half of it to the article (the original would cut the
  article to a negative length); at 512 this is the original's 128.

Files read (`read_race`): a RACE passage file (one JSON object: `article`, `questions`,
`options`, `answers` A–D, `id`), a JSON-lines file of such objects, a RACE+ file
(`{"version", "data": [passages]}`), a list of any of these, or a RACE split directory
(`dev/{middle,high}/*.txt`); the level (middle/high) is taken from the directory. Questions may
have different numbers of options (RACE+ has some with 2 or 3): a batch is padded to the
largest number of choices and the missing choices are all-padding rows, which
`AlbertMultipleChoice` scores -1e9 (never chosen, no loss).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from collections.abc import Sequence

import numpy as np
import tensorflow as tf

from keras_albert.tasks.multiple_choice.defaults import MAX_QA_LENGTH, SEQUENCE_LENGTH
from keras_albert.text.files import write_text_atomically
from keras_albert.text.pipeline import example_batches
from keras_albert.validation import require_int

LEVELS = ("middle", "high")
_BLANK = re.compile("_+")
_MARK = "\U0010ffff"


class RaceFormatError(ValueError):
    """A RACE file that cannot be read; the message names the file and the passage."""


@dataclasses.dataclass
class RaceExamples:
    """One entry per question.

    Attributes:
        ids: "<passage id>-<question index>" (the passage id alone is not unique).
        articles: the passage text of each question.
        questions: the question text.
        options: the options of each question (2 or more; RACE has 4).
        labels: int32 index of the gold option; `None` for an unlabeled file.
        levels: "middle", "high" or "" (unknown) per question.
        sources: the file each question came from.
    """

    ids: list[str]
    articles: list[str]
    questions: list[str]
    options: list[list[str]]
    labels: np.ndarray | None
    levels: list[str]
    sources: list[str]

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def max_choices(self) -> int:
        return max(len(options) for options in self.options)


# ---------------------------------------------------------------------------------------------
# Reading.


def _race_files(path: str) -> list[tuple[str, str]]:
    """(file, level) pairs of one path: a file, or a split directory with middle/ and high/."""
    if os.path.isfile(path):
        level = os.path.basename(os.path.dirname(os.path.abspath(path)))
        return [(path, level if level in LEVELS else "")]
    if not os.path.isdir(path):
        raise FileNotFoundError(f"RACE data not found: {path!r}")
    levels = [level for level in LEVELS if os.path.isdir(os.path.join(path, level))]
    if not levels:
        raise RaceFormatError(
            f"{path}: a RACE directory must hold 'middle/' and/or 'high/' (the layout "
            f"RACE/<train|dev|test>/<middle|high>/*.txt); found {sorted(os.listdir(path))}"
        )
    files = []
    for level in levels:
        directory = os.path.join(path, level)
        names = sorted(name for name in os.listdir(directory) if name.endswith(".txt"))
        files += [(os.path.join(directory, name), level) for name in names]
    if not files:
        raise RaceFormatError(f"{path}: no .txt passage files under {', '.join(levels)}/")
    return files


def _passages(path: str) -> list[dict]:
    with open(path, encoding="utf-8-sig") as file:
        text = file.read()
    if not text.strip():
        raise RaceFormatError(f"{path}: the file is empty; expected RACE passages (JSON)")
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        data = []
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                data.append(json.loads(line))
            except json.JSONDecodeError as error:
                raise RaceFormatError(
                    f"{path}:{number}: not RACE JSON (a passage object per file or per line): "
                    f"{error}"
                ) from None
    if isinstance(data, dict) and "data" in data and "article" not in data:
        data = data["data"]
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list) or not all(isinstance(item, dict) for item in data):
        raise RaceFormatError(
            f"{path}: expected a RACE passage object, a list of them, JSON lines, or "
            f'{{"data": [...]}}; found {type(data).__name__}'
        )
    return data


def _check_passage(passage: dict, where: str, labeled: bool) -> None:
    needed = ["article", "questions", "options"] + (["answers"] if labeled else [])
    missing = [key for key in needed if key not in passage]
    if missing:
        hint = (
            " (passages without answers are read as `test_data`)" if missing == ["answers"] else ""
        )
        raise RaceFormatError(f"{where}: missing {missing}; a RACE passage has {needed}{hint}")
    if not isinstance(passage["article"], str):
        raise RaceFormatError(f"{where}: `article` must be a string")
    questions, options = passage["questions"], passage["options"]
    counts = {"questions": len(questions), "options": len(options)}
    if labeled:
        counts["answers"] = len(passage["answers"])
    if len(set(counts.values())) != 1:
        raise RaceFormatError(f"{where}: one entry per question expected, found {counts}")
    for index, (question, choices) in enumerate(zip(questions, options, strict=True)):
        if not isinstance(question, str):
            raise RaceFormatError(f"{where} question {index}: not a string: {question!r}")
        if (
            not isinstance(choices, list)
            or len(choices) < 2
            or not all(isinstance(choice, str) for choice in choices)
        ):
            raise RaceFormatError(
                f"{where} question {index}: options must be a list of at least 2 strings. "
                f"Received: {choices!r}"
            )
        if labeled:
            answer = passage["answers"][index]
            letters = [chr(ord("A") + i) for i in range(len(choices))]
            if answer not in letters:
                raise RaceFormatError(
                    f"{where} question {index}: answer {answer!r} is not one of {letters} "
                    f"(it has {len(choices)} options)"
                )


def read_race(
    paths: str | os.PathLike | Sequence[str | os.PathLike], labeled: bool = True
) -> RaceExamples:
    """Reads RACE questions from files or split directories (see the module docstring).

    Args:
        paths: a file, a directory (`RACE/dev`), or a list of them.
        labeled: whether the passages carry `answers` (train/dev/test of RACE all do).

    Raises:
        RaceFormatError: naming the file and passage, for a missing field, counts of
            questions/options/answers that differ, fewer than 2 options, an answer that is
            not a letter of an option, or a file that is not JSON.
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    if not paths:
        raise ValueError("`paths` must name at least one RACE file or directory. Received: []")
    examples = RaceExamples([], [], [], [], [] if labeled else None, [], [])
    for path in paths:
        for file, level in _race_files(os.fspath(path)):
            for number, passage in enumerate(_passages(file)):
                passage_id = str(passage.get("id", f"{os.path.basename(file)}#{number}"))
                _check_passage(passage, f"{file} passage {passage_id!r}", labeled)
                for index, question in enumerate(passage["questions"]):
                    examples.ids.append(f"{passage_id}-{index}")
                    examples.articles.append(passage["article"])
                    examples.questions.append(question)
                    examples.options.append(list(passage["options"][index]))
                    examples.levels.append(level)
                    examples.sources.append(file)
                    if labeled:
                        examples.labels.append(ord(passage["answers"][index]) - ord("A"))
    if not examples.ids:
        raise RaceFormatError(f"No questions in {[os.fspath(p) for p in paths]}")
    if labeled:
        examples.labels = np.asarray(examples.labels, dtype=np.int32)
    return examples


# ---------------------------------------------------------------------------------------------
# Formatting: segment B of each choice.


def choice_text(question: str, option: str) -> str:
    """Segment B of one choice, from normalized text: the option in each blank, or appended."""
    if "_" in question:
        return _BLANK.sub(lambda _: option, question)
    return f"{question} {option}"


def choice_texts(tokenizer, question: str, options: Sequence[str]) -> list[str]:
    """Segment B of every option of a question, normalized as the tokenizer normalizes."""
    question = tokenizer.normalize(question)
    return [choice_text(question, tokenizer.normalize(option)) for option in options]


def choice_texts_graph(tokenizer, question: tf.Tensor, options: tf.Tensor) -> tf.Tensor:
    """`choice_texts` with TensorFlow ops: question `(batch,)`, options `(batch, choices)`.

    Returns `(batch, choices)` strings. (The noncharacter U+10FFFF marks blanks while they
    are filled; a question containing it is filled as if it were a blank.)
    """
    question = tokenizer.normalize_graph(question)
    options = tf.reshape(tokenizer.normalize_graph(tf.reshape(options, [-1])), tf.shape(options))
    question = tf.broadcast_to(question[:, tf.newaxis], tf.shape(options))
    has_blank = tf.strings.regex_full_match(question, "(?s).*_.*")
    # regex_replace takes one scalar rewrite, so blanks are marked, split around and refilled.
    marked = tf.strings.regex_replace(tf.reshape(question, [-1]), "_+", _MARK)
    parts = tf.strings.split(marked, sep=_MARK)  # (batch × choices, None)
    rows = parts.value_rowids()
    fill = tf.gather(tf.reshape(options, [-1]), rows)
    is_last = tf.ragged.range(parts.row_lengths()).flat_values == tf.gather(
        parts.row_lengths() - 1, rows
    )
    fill = tf.where(is_last, "", fill)
    filled = tf.strings.reduce_join(parts.with_flat_values(parts.flat_values + fill), axis=1)
    filled = tf.reshape(filled, tf.shape(options))
    appended = tf.strings.join([question, options], separator=" ")
    return tf.where(has_blank, filled, appended)


# ---------------------------------------------------------------------------------------------
# Packing and the tf.data pipeline.


def qa_budget(sequence_length: int, max_qa_length: int) -> int:
    """Tokens segment B may keep: `max_qa_length`, but at most half of the pair's room."""
    return min(max_qa_length, (sequence_length - 3) // 2)


def pack_choices(
    packer, article_ids, choice_ids, present, max_qa_length: int = MAX_QA_LENGTH
) -> dict:
    """`[CLS] article [SEP] choice [SEP]` for every choice, truncated as `race_utils`.

    Args:
        packer: an `AlbertPacker` (its `sequence_length` is the packed length).
        article_ids: `(batch, None)` ragged int token ids of the articles.
        choice_ids: `(batch, choices, None)` ragged int token ids of segment B per choice.
        present: `(batch, choices)` bool; absent choices become all-padding rows.
        max_qa_length: the most tokens segment B keeps (its last ones), see `qa_budget`.

    Returns:
        `token_ids`, `segment_ids`, `padding_mask`: int32 `(batch, choices, sequence_length)`.
    """
    sequence_length = packer.sequence_length
    num_choices = tf.shape(present, out_type=tf.int64)[1]
    qa = choice_ids.merge_dims(0, 1)  # (batch × choices, None)
    article = tf.gather(article_ids, tf.range(qa.nrows()) // num_choices)
    qa_length = qa.row_lengths()
    keep_qa = tf.minimum(qa_length, qa_budget(sequence_length, max_qa_length))
    qa = tf.ragged.boolean_mask(
        qa, tf.ragged.range(qa_length) >= tf.expand_dims(qa_length - keep_qa, 1)
    )  # the last tokens, as `ending_tokens[-max_qa_length:]`
    keep_article = sequence_length - 3 - keep_qa
    article = tf.ragged.boolean_mask(
        article, tf.ragged.range(article.row_lengths()) < tf.expand_dims(keep_article, 1)
    )
    packed = packer((article, qa))  # already fits: the packer cuts nothing more
    flat_present = tf.reshape(present, [-1, 1])
    shape = tf.stack([-1, num_choices, sequence_length])
    outputs = {
        "token_ids": tf.where(flat_present, packed["token_ids"], packer.pad_id),
        "segment_ids": tf.where(flat_present, packed["segment_ids"], 0),
        "padding_mask": tf.cast(packed["padding_mask"] & flat_present, tf.int32),
    }
    return {name: tf.reshape(value, tf.cast(shape, tf.int32)) for name, value in outputs.items()}


def encode_choices(
    tokenizer, packer, article, question, options, present, max_qa_length: int = MAX_QA_LENGTH
) -> dict:
    """The model inputs of `(batch,)` articles and questions and their `(batch, choices)`
    options: each choice formatted (`choice_texts_graph`), tokenized and packed
    (`pack_choices`). The one graph definition of the features: the training datasets
    (`make_race_dataset`), the string-in SavedModel and the preprocessor all call it.

    Returns:
        `token_ids`, `segment_ids`, `padding_mask`: int32 `(batch, choices, sequence_length)`.
    """
    texts = choice_texts_graph(tokenizer, question, options)
    return pack_choices(packer, tokenizer(article), tokenizer(texts), present, max_qa_length)


def padded_options(examples: RaceExamples, num_choices: int) -> tuple[np.ndarray, np.ndarray]:
    """Options `(questions, num_choices)` padded with "" and the `present` mask."""
    if examples.max_choices > num_choices:
        raise ValueError(
            f"`num_choices` must be at least the most options of a question "
            f"({examples.max_choices}). Received: num_choices={num_choices}"
        )
    options = np.full((len(examples), num_choices), "", dtype=object)
    present = np.zeros((len(examples), num_choices), dtype=bool)
    for row, choices in enumerate(examples.options):
        options[row, : len(choices)] = choices
        present[row, : len(choices)] = True
    return options, present


def make_race_dataset(
    examples: RaceExamples,
    tokenizer,
    sequence_length: int = SEQUENCE_LENGTH,
    batch_size: int = 32,
    max_qa_length: int = MAX_QA_LENGTH,
    num_choices: int | None = None,
    training: bool = False,
    seed: int | None = None,
    input_context: tf.distribute.InputContext | None = None,
) -> tf.data.Dataset:
    """Batches of `({"token_ids", "segment_ids", "padding_mask"}, label)`, `(batch, choices, seq)`.

    Tokenization, formatting (`choice_texts_graph`) and packing run in the graph. Training
    datasets are shuffled, repeated and drop the last partial batch; evaluation datasets keep
    every question in order. Unlabeled examples give the features only.

    Args:
        num_choices: the choice axis; by default the most options of any question.
        input_context: with one, each input pipeline reads its shard and `batch_size`
            (global) is divided among the replicas.
    """
    require_int("sequence_length", sequence_length, minimum=5)
    require_int("max_qa_length", max_qa_length, minimum=1)
    options, present = padded_options(examples, num_choices or examples.max_choices)
    features = (
        tf.constant(examples.articles, tf.string),
        tf.constant(examples.questions, tf.string),
        tf.constant(options.astype(str), tf.string),
        tf.constant(present),
    )
    labeled = examples.labels is not None
    dataset = example_batches(
        (features, examples.labels) if labeled else (features,),
        len(examples),
        batch_size,
        training,
        seed,
        input_context=input_context,
    )
    packer = tokenizer.packer(sequence_length)

    def encode(features, *label):
        packed = encode_choices(tokenizer, packer, *features, max_qa_length)
        return (packed, *label) if label else packed

    dataset = dataset.map(encode, num_parallel_calls=tf.data.AUTOTUNE)
    return dataset.prefetch(tf.data.AUTOTUNE)


# ---------------------------------------------------------------------------------------------
# Metrics and predictions.


def accuracy_by_level(examples: RaceExamples, predictions: np.ndarray) -> dict[str, float]:
    """`accuracy` over all questions, and `accuracy_middle` / `accuracy_high` when known."""
    if examples.labels is None:
        raise ValueError("Accuracy needs labeled examples (the file has no answers)")
    predictions = np.asarray(predictions)
    if predictions.shape != examples.labels.shape:
        raise ValueError(
            f"`predictions` must have one entry per question {examples.labels.shape}. "
            f"Received: shape {predictions.shape}"
        )
    correct = predictions == examples.labels
    metrics = {"accuracy": float(correct.mean())}
    levels = np.asarray(examples.levels)
    for level in LEVELS:
        if (levels == level).any():
            metrics[f"accuracy_{level}"] = float(correct[levels == level].mean())
    return metrics


def write_race_predictions(path, examples: RaceExamples, probabilities: np.ndarray) -> None:
    """One JSON line per question: its index (from 0), id, level, predicted letter, gold
    letter, probabilities."""
    probabilities = np.asarray(probabilities, dtype=np.float64)
    if probabilities.shape[0] != len(examples):
        raise ValueError(
            f"`probabilities` must have one row per question ({len(examples)}). "
            f"Received: shape {probabilities.shape}"
        )
    lines = []
    for row, example_id in enumerate(examples.ids):
        count = len(examples.options[row])
        scores = probabilities[row, :count]
        record = {
            "index": row,
            "id": example_id,
            "level": examples.levels[row],
            "prediction": chr(ord("A") + int(np.argmax(scores))),
            "probabilities": [round(float(p), 6) for p in scores],
        }
        if examples.labels is not None:
            record["label"] = chr(ord("A") + int(examples.labels[row]))
        lines.append(json.dumps(record, ensure_ascii=False))
    write_text_atomically(path, "\n".join(lines) + "\n")
