"""Named entities: CoNLL column files → word-aligned pieces, and entity-level scores.

Files: one token per line, the token in the first column and its tag in the last (columns
separated by tabs, or by spaces when the line has no tab), a blank line between sentences,
`-DOCSTART-` lines skipped. Tags are BIO (IOB2): `O`, `B-<type>`, `I-<type>`. A line holding
only a byte-order mark counts as blank (WNUT 2017's dev file ends with one); invalid UTF-8
becomes U+FFFD, as the tokenizer treats it.

Alignment (the standard recipe): each word is tokenized on its own; its first piece carries
the word's tag, the other pieces get `IGNORE_LABEL` (-100), which the loss and the evaluation
skip. A word that tokenizes to no piece at all (only characters the normalizer removes)
gets one `<unk>` piece, so every word has a first piece. Words whose first piece falls past
`sequence_length - 2` are cut: they are counted (`num_cut_words`) and predicted `O`.

Raw texts (what the NER export serves) become sentences with `text_sentences`: their words are
`keras_albert.text.offsets.words_with_offsets`, the whitespace split for SentencePiece and, for
WordPiece, BERT's basic tokenization (each CJK ideograph and punctuation character a word, as
in the character-per-line Chinese NER files), the one definition the export's graph follows.

Scores (`entity_scores`) are conlleval's: a chunk starts at `B-X`, or at `I-X` after `O` or
after a chunk of another type; precision, recall and F1 count exact (type, start, end) matches,
per type and micro-averaged. The tests check them against `seqeval` on real files.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Sequence

import numpy as np
import tensorflow as tf

from keras_albert.tasks.token_classification.defaults import SEQUENCE_LENGTH
from keras_albert.text.files import write_text_atomically
from keras_albert.text.offsets import words_with_offsets
from keras_albert.text.packing import concat_rows
from keras_albert.text.pipeline import example_batches
from keras_albert.validation import require_int, require_not_directory

IGNORE_LABEL = -100
OUTSIDE = "O"
_TAG = re.compile(r"^(?:O|[BI]-\S+)$")


class ConllFormatError(ValueError):
    """A CoNLL file that cannot be read; the message names the file and line."""


@dataclasses.dataclass
class ConllSentences:
    """Sentences of a CoNLL file: `words[i][j]`, `tags[i][j]` (`None` when unlabeled), and the
    1-based line of each sentence's first word."""

    path: str
    words: list[list[str]]
    tags: list[list[str]] | None
    line_numbers: list[int]

    def __len__(self) -> int:
        return len(self.words)


def read_conll(path: str | os.PathLike, labeled: bool = True, name: str = "path") -> ConllSentences:
    """Reads a CoNLL column file (see the module docstring).

    Args:
        path: the file.
        labeled: the last column is the tag; `False` reads the first column only.
        name: what errors call `path` (the option it came from: "train_data", ...).

    Raises:
        ConllFormatError: "<path>:<line>: ..." for a labeled line without a tag, a tag that
            is not BIO, or a file without sentences.
    """
    path = os.fspath(path)
    require_not_directory(name, path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"CoNLL file not found: {path!r}")
    sentences = ConllSentences(path, [], [] if labeled else None, [])
    words: list[str] = []
    tags: list[str] = []
    start = 0

    def end_sentence():
        if words:
            sentences.words.append(list(words))
            sentences.line_numbers.append(start)
            if labeled:
                sentences.tags.append(list(tags))
        words.clear()
        tags.clear()

    with open(path, encoding="utf-8", errors="replace") as file:
        for number, line in enumerate(file, 1):
            line = line.rstrip("\r\n")
            if not line.replace("\ufeff", "").strip():
                end_sentence()
                continue
            fields = line.split("\t") if "\t" in line else line.split()
            if fields[0].lstrip("\ufeff") == "-DOCSTART-":
                end_sentence()
                continue
            if number == 1:
                fields[0] = fields[0].lstrip("\ufeff")
            if labeled:
                if len(fields) < 2:
                    raise ConllFormatError(
                        f"{path}:{number}: expected a token and its tag, found {line!r} (a "
                        "file of words only is read as `test_data`)"
                    )
                tag = fields[-1].strip()
                if not _TAG.match(tag):
                    raise ConllFormatError(
                        f"{path}:{number}: tag {tag!r} is not BIO (O, B-<type>, I-<type>)"
                    )
                tags.append(tag)
            if not words:
                start = number
            words.append(fields[0])
    end_sentence()
    if not sentences.words:
        raise ConllFormatError(f"{path}: no sentences in the file")
    return sentences


def text_sentences(tokenizer, texts: Sequence[str]) -> ConllSentences:
    """Unlabeled sentences of raw `texts`, their words split as the NER export splits them
    (`words_with_offsets`); "line" `i + 1` is text `i`."""
    words = [words_with_offsets(tokenizer, text).words for text in texts]
    return ConllSentences("<texts>", words, None, list(range(1, len(words) + 1)))


def label_list(tag_sequences: Sequence[Sequence[str]]) -> list[str]:
    """`O`, then `B-X`, `I-X` for every entity type X seen (sorted): the model's label order."""
    types = sorted({tag[2:] for tags in tag_sequences for tag in tags if tag != OUTSIDE})
    return [OUTSIDE] + [f"{prefix}-{kind}" for kind in types for prefix in ("B", "I")]


def tag_ids(sentences: ConllSentences, labels: Sequence[str]) -> list[list[int]]:
    """The tags as indices in `labels`; a tag not in it is an error naming file and line."""
    index = {label: i for i, label in enumerate(labels)}
    ids = []
    for sentence, tags in enumerate(sentences.tags):
        unknown = [tag for tag in tags if tag not in index]
        if unknown:
            raise ConllFormatError(
                f"{sentences.path}:{sentences.line_numbers[sentence]}: tag {unknown[0]!r} is "
                f"not in the label list {list(labels)} (taken from the training file)"
            )
        ids.append([index[tag] for tag in tags])
    return ids


# ---------------------------------------------------------------------------------------------
# Alignment of words to pieces (TensorFlow ops, for tf.data and serving alike).


def encode_words(tokenizer, words: tf.RaggedTensor, sequence_length: int) -> dict:
    """Packs `[CLS] pieces of every word [SEP]` and says where each word starts.

    Args:
        tokenizer: an `AlbertTokenizer`.
        words: `(batch, None)` ragged `tf.string`, one entry per word.
        sequence_length: the packed length.

    Returns:
        `token_ids`, `segment_ids`, `padding_mask` (int32, `(batch, sequence_length)`) and
        `word_positions`, ragged int32 `(batch, None)`: the position of each word's first piece,
        or -1 for a word cut by `sequence_length`.
    """
    pieces = tokenizer(words.flat_values)  # (num_words, None)
    empty = pieces.row_lengths() == 0
    unknown = tf.RaggedTensor.from_row_lengths(
        tf.fill([tf.reduce_sum(tf.cast(empty, tf.int32))], tf.constant(tokenizer.unk_id, tf.int32)),
        tf.cast(empty, tf.int64),
    )
    pieces = concat_rows([pieces, unknown])  # every word has at least one piece
    lengths = pieces.row_lengths()  # (num_words,)
    per_sentence = words.with_flat_values(lengths)  # (batch, None)
    starts = 1 + tf.math.cumsum(per_sentence, axis=1, exclusive=True)  # after [CLS]
    starts = tf.ragged.map_flat_values(
        lambda start: tf.where(start <= sequence_length - 2, start, tf.constant(-1, start.dtype)),
        starts,
    )
    sentence_pieces = words.with_flat_values(pieces).merge_dims(1, 2)  # (batch, None)
    packed = tokenizer.packer(sequence_length)(sentence_pieces)
    return {
        "token_ids": packed["token_ids"],
        "segment_ids": packed["segment_ids"],
        "padding_mask": tf.cast(packed["padding_mask"], tf.int32),
        "word_positions": tf.cast(starts, tf.int32),
    }


def piece_labels(word_positions: tf.RaggedTensor, word_labels: tf.RaggedTensor, sequence_length):
    """`(batch, sequence_length)` int32: each word's label at its first piece, -100 elsewhere."""
    positions = word_positions.flat_values
    keep = positions >= 0
    rows = tf.boolean_mask(word_positions.value_rowids(), keep)
    indices = tf.stack([tf.cast(rows, tf.int32), tf.boolean_mask(positions, keep)], axis=1)
    batch = tf.cast(word_positions.nrows(), tf.int32)
    return tf.tensor_scatter_nd_update(
        tf.fill(tf.stack([batch, sequence_length]), IGNORE_LABEL),
        indices,
        tf.boolean_mask(tf.cast(word_labels.flat_values, tf.int32), keep),
    )


def make_ner_dataset(
    sentences: ConllSentences,
    tokenizer,
    labels: Sequence[str],
    sequence_length: int = SEQUENCE_LENGTH,
    batch_size: int = 32,
    training: bool = False,
    seed: int | None = None,
    with_positions: bool = False,
    input_context: tf.distribute.InputContext | None = None,
) -> tf.data.Dataset:
    """Batches of `(features, piece_labels)` for `AlbertTokenClassifier`.

    Training datasets are shuffled, repeated and drop the last partial batch. With
    `with_positions=True` (evaluation) each element is `(features, piece_labels,
    word_positions)`, what `word_predictions` needs; an unlabeled file gives `features` (and
    `word_positions`) only. With an `input_context`, each input pipeline reads its shard and
    `batch_size` (global) is divided among the replicas.
    """
    require_int("sequence_length", sequence_length, minimum=3)
    words = tf.ragged.constant(sentences.words, dtype=tf.string)
    columns = (words,)
    if sentences.tags is not None:
        columns += (tf.ragged.constant(tag_ids(sentences, labels), dtype=tf.int32),)
    dataset = example_batches(
        columns, len(sentences), batch_size, training, seed, input_context, ragged=True
    )

    def encode(batch_words, *batch_labels):
        encoded = encode_words(tokenizer, batch_words, sequence_length)
        positions = encoded.pop("word_positions")
        element = [encoded]
        if batch_labels:
            element.append(piece_labels(positions, batch_labels[0], sequence_length))
        if with_positions:
            element.append(positions)
        return tuple(element) if len(element) > 1 else element[0]

    return dataset.map(encode, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)


def word_predictions(
    logits: np.ndarray, word_positions: Sequence[Sequence[int]], labels: Sequence[str]
) -> tuple[list[list[str]], int]:
    """Each word's tag from the logits at its first piece; cut words (-1) get `O`.

    Returns the tags per sentence and the number of cut words.
    """
    tags, cut = [], 0
    best = np.argmax(np.asarray(logits), axis=-1)  # (sentences, sequence_length)
    for row, positions in enumerate(word_positions):
        sentence = []
        for position in positions:
            if position < 0:
                sentence.append(OUTSIDE)
                cut += 1
            else:
                sentence.append(labels[int(best[row, position])])
        tags.append(sentence)
    return tags, cut


# ---------------------------------------------------------------------------------------------
# Scores and predictions.


def entity_chunks(tags: Sequence[str]) -> set[tuple[str, int, int]]:
    """conlleval's chunks of one sentence: `(type, first word, last word)`."""
    chunks = set()
    kind, start = None, None
    for position, tag in enumerate([*tags, OUTSIDE]):
        prefix, tag_kind = (tag[0], tag[2:]) if tag != OUTSIDE else (OUTSIDE, None)
        begins = prefix == "B" or (prefix == "I" and tag_kind != kind)
        if kind is not None and (prefix == OUTSIDE or begins):
            chunks.add((kind, start, position - 1))
            kind = None
        if begins:
            kind, start = tag_kind, position
    return chunks


def entity_scores(
    gold: Sequence[Sequence[str]], predicted: Sequence[Sequence[str]]
) -> dict[str, dict[str, float]]:
    """Entity-level precision, recall, F1 and support, per type and `micro` over all.

    Returns `{"micro": {...}, "<type>": {...}}` with keys `precision`, `recall`, `f1`,
    `support` (gold entities) and `predicted`. A score without entities to divide by is 0.
    """
    if len(gold) != len(predicted):
        raise ValueError(
            f"`predicted` must have one tag sequence per sentence ({len(gold)}). "
            f"Received: {len(predicted)}"
        )
    true_chunks, pred_chunks = set(), set()
    for index, (gold_tags, predicted_tags) in enumerate(zip(gold, predicted, strict=True)):
        if len(gold_tags) != len(predicted_tags):
            raise ValueError(
                f"Sentence {index} has {len(gold_tags)} gold tags but "
                f"{len(predicted_tags)} predicted ones"
            )
        true_chunks |= {(index, *chunk) for chunk in entity_chunks(gold_tags)}
        pred_chunks |= {(index, *chunk) for chunk in entity_chunks(predicted_tags)}
    kinds = sorted({chunk[1] for chunk in true_chunks | pred_chunks})
    scores = {"micro": _scores(true_chunks, pred_chunks)}
    for kind in kinds:
        scores[kind] = _scores(
            {c for c in true_chunks if c[1] == kind}, {c for c in pred_chunks if c[1] == kind}
        )
    return scores


def _scores(true_chunks: set, pred_chunks: set) -> dict[str, float]:
    correct = len(true_chunks & pred_chunks)
    precision = correct / len(pred_chunks) if pred_chunks else 0.0
    recall = correct / len(true_chunks) if true_chunks else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "support": len(true_chunks),
        "predicted": len(pred_chunks),
    }


def write_conll_predictions(
    path, sentences: ConllSentences, predicted: Sequence[Sequence[str]]
) -> None:
    """CoNLL columns `word<TAB>gold<TAB>predicted` (no gold column when unlabeled)."""
    if len(predicted) != len(sentences):
        raise ValueError(
            f"`predicted` must have one tag sequence per sentence ({len(sentences)}). "
            f"Received: {len(predicted)}"
        )
    blocks = []
    for index, words in enumerate(sentences.words):
        if len(predicted[index]) != len(words):
            raise ValueError(
                f"Sentence {index} has {len(words)} words but {len(predicted[index])} tags"
            )
        rows = []
        for position, word in enumerate(words):
            columns = [word]
            if sentences.tags is not None:
                columns.append(sentences.tags[index][position])
            columns.append(predicted[index][position])
            rows.append("\t".join(columns))
        blocks.append("\n".join(rows))
    write_text_atomically(path, "\n\n".join(blocks) + "\n")
