"""ALBERT's tokenizer (SentencePiece, or WordPiece), in Python and inside the TensorFlow graph.

The recipe is the one google-research/albert used to create its pretraining and fine-tuning
data (`tokenization.preprocess_text` + `tokenization.encode_pieces`):

1.-3. the text normalization of `keras_albert.text.normalization` (whitespace collapse, NFKD
   without combining characters, lowercasing);
4. SentencePiece (the model's own `nmt_nfkc` normalizer runs inside it);
5. a piece that ends in "<digit>," is encoded again without the comma, and the comma becomes a
   piece of its own (so "92000," gives "▁9", "2000", ","); steps 4 and 5, in Python and in the
   graph, are `keras_albert.text.sentencepiece_model`.

`AlbertTokenizer.encode` runs it in Python (offline data creation); calling the tokenizer on a
string tensor runs the same recipe with TensorFlow and TensorFlow Text ops only, so it works
inside `tf.data` and in an exported SavedModel. Both give the same ids; the tests prove it against
Hugging Face's sentencepiece-based implementation of the recipe.

Invalid UTF-8 (bytes given to `encode`, lone surrogates in a `str`, bytes in a `tf.string`) is
replaced by U+FFFD, one per maximal invalid subsequence, in both paths; it is never an error.

Given a WordPiece vocabulary (the Chinese ALBERT releases' `vocab_chinese.txt`) instead of a
SentencePiece model, the tokenizer runs the original's BERT recipe instead: see
`keras_albert.text.wordpiece`.

Known differences between the two paths (both measured by the tests):
- `tf.strings.lower` lacks the ~40 lowercase mappings Unicode 14 added (Vithkuqi, a few
  Glagolitic and Latin Extended-D letters) that Python 3.11's `str.lower` has; characters that
  Python's Unicode database does not know may also normalize differently under TF's newer ICU.
- The sentencepiece library compiled into tensorflow-text breaks exact score ties of the
  unigram search as the Python package did up to 0.1.99 (and so as in the original ALBERT data),
  while the Python package 0.2.x, used by the Python path and by Hugging Face, breaks them the
  other way: "rated eee" gives "ee", "e" in the graph and "e", "ee" in Python (same pieces, same
  score). Such ties need repeated pieces in a row: 5 of the 67,349 SST-2 train sentences.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable

import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text

from keras_albert.text.normalization import normalize_text, normalize_text_graph
from keras_albert.text.packing import AlbertPacker
from keras_albert.text.sentencepiece_model import (
    SPIECE_UNDERLINE,
    is_text_vocabulary,
    load_processor,
    resplit_table,
    special_piece_ids,
    split_digit_comma,
    split_digit_comma_graph,
)
from keras_albert.text.wordpiece import (
    SPECIAL_TOKENS,
    Wordpiece,
    is_vocabulary,
    missing_special_tokens,
    parse_vocabulary,
)

# google-research/albert `create_pretraining_data._is_start_piece`: besides "▁"-pieces, pieces
# starting with "<" and single ASCII punctuation pieces begin a word for whole-word masking.
_WORD_START_PUNCTUATION = frozenset('!"#$%&"()*+,-./:;?@[\\]^_`{|}~')


def read_vocabulary_file(proto: str | os.PathLike | bytes) -> bytes:
    """The bytes of a SentencePiece model or WordPiece vocabulary file (anything `tf.io.gfile`
    reads), or `proto` itself when it is bytes: what to ship to workers instead of a path."""
    if isinstance(proto, bytes):
        return proto
    if not isinstance(proto, (str, os.PathLike)):
        raise TypeError(
            "`proto` must be a path to a SentencePiece model or WordPiece vocabulary file, or "
            "its bytes. "
            f"Received: proto={proto!r} ({type(proto).__name__})"
        )
    path = os.fspath(proto)
    if not tf.io.gfile.exists(path):
        raise FileNotFoundError(f"SentencePiece model or vocabulary file not found: {path!r}")
    if tf.io.gfile.isdir(path):
        raise ValueError(
            f"`proto` (the SentencePiece model or WordPiece vocabulary) must be a file, not a "
            "directory. "
            f"Received: proto={path!r}"
        )
    with tf.io.gfile.GFile(path, "rb") as file:
        return file.read()


def _listed(names) -> str:
    names = list(names)
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _not_a_vocabulary(model: bytes, proto) -> ValueError:
    """What a file that is neither a SentencePiece model nor a WordPiece vocabulary is instead."""
    source = os.fspath(proto) if not isinstance(proto, bytes) else f"<{len(proto)} bytes>"
    missing = missing_special_tokens(model)
    if not model:
        why = "an empty file"
    elif missing is None:
        why = "a binary file that SentencePiece cannot read (cut short?)"
    elif is_text_vocabulary(model):
        model_file = os.path.splitext(source)[0] + ".model"
        beside = not isinstance(proto, bytes) and tf.io.gfile.exists(model_file)
        why = (
            "SentencePiece's text vocabulary (a piece and its score per line), not its model: "
            + (
                f"did you mean the .model beside it, {model_file!r}?"
                if beside
                else "give the .model file SentencePiece wrote with it"
            )
        )
    elif len(missing) == len(SPECIAL_TOKENS):
        why = "text with none of the special tokens of a WordPiece vocabulary"
    else:
        why = f"a WordPiece vocabulary without {_listed(missing)}"
    return ValueError(
        "`vocabulary` must be a SentencePiece model (a binary .model file) or a WordPiece "
        "vocabulary (UTF-8 text, one token per line, with "
        f"{_listed(SPECIAL_TOKENS.values())}). Received: vocabulary={source!r}, {why}"
    )


class AlbertTokenizer(tf.Module):
    """ALBERT's SentencePiece (or WordPiece) tokenizer with the original text normalization.

    The Python methods (`normalize`, `encode`, `encode_pieces`, `decode`, ...) serve offline data
    creation; calling the tokenizer on a `tf.string` tensor runs the same recipe in the graph
    (TensorFlow Text, no `tf.py_function`) and returns the same ids as a `tf.RaggedTensor` with
    one more dimension than the input. The tokenizer is a `tf.Module`, so a SavedModel that keeps
    it as an attribute keeps the SentencePiece model (or the vocabulary's lookup table) with it.

    Args:
        proto: path to a SentencePiece model file or a WordPiece vocabulary file (anything
            `tf.io.gfile` reads), or the file's bytes. A SentencePiece model must contain
            `<pad>`, `<unk>`, `[CLS]`, `[SEP]` and `[MASK]`; a vocabulary (UTF-8 text, one token
            per line, as BERT's `vocab.txt`) `[PAD]`, `[UNK]`, `[CLS]`, `[SEP]` and `[MASK]`.
        lowercase: lowercase the text (the released English ALBERT models are uncased; with a
            vocabulary, the original's `do_lower_case`).
        strip_accents: for SentencePiece, apply NFKD and drop combining characters, as the
            original recipe always does; `False` keeps accents (Hugging Face's
            `keep_accents=True`): no NFKD either. For WordPiece, NFD and drop nonspacing marks,
            as the original does with `do_lower_case=True` (give `False` with
            `lowercase=False` for a cased vocabulary).
        normalize_quotes: replace "``" and "''" by '"' after collapsing whitespace. The original
            recipe does not; Hugging Face's `AlbertTokenizer` does. Off by default, and only
            for SentencePiece.
        wordpiece: whether `proto` is a WordPiece vocabulary. `None` tells them apart from the
            bytes: UTF-8 text without NUL that lists the five special tokens is a vocabulary,
            anything else a SentencePiece model.

    Example:
    >>> tokenizer = AlbertTokenizer("tests/data/30k-clean.model")
    >>> tokenizer.encode("I was born in 92000, and this is falsé.")
    [31, 23, 386, 19, 561, 3050, 15, 17, 48, 25, 4997, 9]
    >>> tokenizer(tf.constant(["The quick brown fox."])).to_list()
    [[14, 2231, 886, 2385, 9]]

    Reference: Lan et al., 2020, "ALBERT: A Lite BERT for Self-supervised Learning of Language
    Representations", arXiv:1909.11942; google-research/albert `tokenization.py`.
    """

    def __init__(
        self,
        proto: str | os.PathLike | bytes,
        lowercase: bool = True,
        strip_accents: bool = True,
        normalize_quotes: bool = False,
        wordpiece: bool | None = None,
        name: str | None = None,
    ):
        super().__init__(name=name)
        for argument, value in (
            ("lowercase", lowercase),
            ("strip_accents", strip_accents),
            ("normalize_quotes", normalize_quotes),
        ):
            if not isinstance(value, bool):
                raise TypeError(f"`{argument}` must be a bool. Received: {argument}={value!r}")
        self.lowercase = lowercase
        self.strip_accents = strip_accents
        self.normalize_quotes = normalize_quotes
        if wordpiece is not None and not isinstance(wordpiece, bool):
            raise TypeError(
                f"`wordpiece` must be a bool or None. Received: wordpiece={wordpiece!r}"
            )

        model = read_vocabulary_file(proto)
        self._model_bytes = model
        self.wordpiece = is_vocabulary(model) if wordpiece is None else wordpiece
        if self.wordpiece:
            self._init_wordpiece(proto)
            return
        self._wordpiece = None
        try:
            self._processor = load_processor(model, proto)
        except ValueError:
            if wordpiece is not None:  # the caller said which kind: its own error
                raise
            raise _not_a_vocabulary(model, proto) from None
        special = special_piece_ids(self._processor)
        self.pad_id = special["pad"]
        self.unk_id = special["unk"]
        self.cls_id = special["cls"]
        self.sep_id = special["sep"]
        self.mask_id = special["mask"]

        # The in-graph path: SentencePiece to ids, then the digit-comma re-split as a lookup in
        # a per-id table; or, for a model where that is not exact, to pieces and the re-split
        # on piece text, as the original does.
        self._resplit_table = resplit_table(self._processor)
        self._sentencepiece = tf_text.SentencepieceTokenizer(
            model=model,
            out_type=tf.string if self._resplit_table is None else tf.int32,
            name="sentencepiece",
        )

    def _init_wordpiece(self, proto) -> None:
        if self.normalize_quotes:
            raise ValueError(
                "`normalize_quotes` must be False with a WordPiece vocabulary (the original BERT "
                "recipe has no such step). Received: normalize_quotes=True"
            )
        try:
            tokens = parse_vocabulary(self._model_bytes)
        except UnicodeDecodeError as error:
            source = proto if not isinstance(proto, bytes) else f"<{len(proto)} bytes>"
            raise ValueError(
                f"Could not read a WordPiece vocabulary from {source!r}: {error}"
            ) from None
        self._wordpiece = Wordpiece(
            tokens, lowercase=self.lowercase, strip_accents=self.strip_accents, name="wordpiece"
        )
        self._processor = None
        self._resplit_table = None
        self._sentencepiece = None
        token_to_id = self._wordpiece.token_to_id
        self.pad_id = token_to_id[SPECIAL_TOKENS["pad"]]
        self.unk_id = token_to_id[SPECIAL_TOKENS["unk"]]
        self.cls_id = token_to_id[SPECIAL_TOKENS["cls"]]
        self.sep_id = token_to_id[SPECIAL_TOKENS["sep"]]
        self.mask_id = token_to_id[SPECIAL_TOKENS["mask"]]

    # ----------------------------------------------------------------------------------------
    # Vocabulary.

    @property
    def vocabulary_size(self) -> int:
        if self._wordpiece is not None:
            return len(self._wordpiece.tokens)
        return self._processor.get_piece_size()

    @property
    def special_ids(self) -> set[int]:
        """Ids of `<pad>`, `[CLS]`, `[SEP]` and `[MASK]`; `<unk>` is not included.

        `<unk>` stands for real text (an unknown character), so it may be masked and predicted
        like any other token; the others are only ever inserted by packing and masking.
        """
        return {self.pad_id, self.cls_id, self.sep_id, self.mask_id}

    def id_to_piece(self, token_id: int) -> str:
        self._check_id(token_id)
        if self._wordpiece is not None:
            return self._wordpiece.tokens[int(token_id)]
        return self._processor.id_to_piece(int(token_id))

    def piece_to_id(self, piece: str) -> int:
        """The id of `piece`; the `<unk>` (`[UNK]`) id for a piece not in the vocabulary."""
        if not isinstance(piece, str):
            raise TypeError(
                f"`piece` must be a str. Received: piece={piece!r} ({type(piece).__name__})"
            )
        if self._wordpiece is not None:
            return self._wordpiece.token_to_id.get(piece, self.unk_id)
        return self._processor.piece_to_id(piece)

    def is_word_start(self, token_id: int) -> bool:
        """Whether the piece begins a word for whole-word (n-gram) masking.

        As google-research/albert's `_is_start_piece`: the piece starts with "▁" or "<", or is
        a single ASCII punctuation character (so "," after a word is a word of its own). With a
        WordPiece vocabulary, as its `_is_start_piece_bert`: the piece does not start with "##".
        """
        piece = self.id_to_piece(token_id)
        if self._wordpiece is not None:
            return not piece.startswith("##")
        return (
            piece.startswith(SPIECE_UNDERLINE)
            or piece.startswith("<")
            or piece in _WORD_START_PUNCTUATION
        )

    @functools.cached_property
    def word_start_table(self) -> np.ndarray:
        """`is_word_start` for every id, shape (vocabulary_size,), bool; for `tf.gather`."""
        return np.array([self.is_word_start(i) for i in range(self.vocabulary_size)], dtype=bool)

    @property
    def serialized_model(self) -> bytes:
        """The SentencePiece model (or WordPiece vocabulary) bytes this tokenizer was built
        from."""
        return self._model_bytes

    def _check_id(self, token_id) -> None:
        if isinstance(token_id, bool) or not isinstance(token_id, (int, np.integer)):
            raise TypeError(f"`token_id` must be an integer. Received: token_id={token_id!r}")
        if not 0 <= token_id < self.vocabulary_size:
            raise ValueError(
                f"Token id {token_id} is out of range: expected 0 <= id < {self.vocabulary_size}"
            )

    # ----------------------------------------------------------------------------------------
    # Python path.

    def normalize(self, text: str | bytes) -> str:
        """The original ALBERT text normalization (before SentencePiece); for WordPiece, the
        words of BERT's basic tokenization joined by spaces."""
        if self._wordpiece is not None:
            return " ".join(self._wordpiece.words(text))
        return normalize_text(
            text,
            lowercase=self.lowercase,
            strip_accents=self.strip_accents,
            normalize_quotes=self.normalize_quotes,
        )

    def encode_pieces(self, text: str | bytes) -> list[str]:
        if self._wordpiece is not None:
            return self._wordpiece.tokenize(text)
        pieces = self._processor.encode(self.normalize(text), out_type=str)
        result = []
        for piece in pieces:
            if len(piece) > 1 and piece[-1] == "," and piece[-2].isdigit():
                result.extend(split_digit_comma(self._processor, piece))
            else:
                result.append(piece)
        return result

    def encode(self, text: str | bytes) -> list[int]:
        """Token ids of `text` (no [CLS]/[SEP]; see `packer`)."""
        pieces = self.encode_pieces(text)
        if self._wordpiece is not None:
            return [self._wordpiece.token_to_id[piece] for piece in pieces]
        return self._processor.piece_to_id(pieces) if pieces else []

    def decode(self, ids: Iterable[int]) -> str:
        """Text of `ids`; control pieces (`<pad>`, `[CLS]`, `[SEP]`, `[MASK]`) are dropped."""
        ids = [int(i) for i in np.asarray(ids).reshape(-1)]
        for token_id in ids:
            self._check_id(token_id)
        if self._wordpiece is not None:
            control = {self.pad_id, self.cls_id, self.sep_id, self.mask_id}
            pieces = [self.id_to_piece(i) for i in ids if i not in control]
            return " ".join(pieces).replace(" ##", "")
        return self._processor.decode(ids)

    # ----------------------------------------------------------------------------------------
    # Graph path.

    def normalize_graph(self, text: tf.Tensor) -> tf.Tensor:
        """`normalize` with TensorFlow ops, elementwise over a `tf.string` tensor."""
        if self._wordpiece is not None:
            flat = tf.reshape(text, [-1])
            words = self._wordpiece.words_graph(flat)  # (num_texts, None)
            joined = tf.strings.reduce_join(words, axis=-1, separator=" ")
            return tf.reshape(joined, tf.shape(text))
        return normalize_text_graph(
            text,
            lowercase=self.lowercase,
            strip_accents=self.strip_accents,
            normalize_quotes=self.normalize_quotes,
        )

    def __call__(self, inputs) -> tf.RaggedTensor:
        """Token ids of a `tf.string` tensor or ragged tensor of any shape, int32.

        The result is ragged with one more dimension than `inputs`; a scalar gives a 1-D
        tensor of ids.
        """
        inputs = _as_string_tensor(inputs)
        if isinstance(inputs, tf.RaggedTensor):
            return inputs.with_flat_values(self._tokenize_flat(inputs.flat_values))
        rank = inputs.shape.rank
        if rank is None:
            raise ValueError(
                "`inputs` must be a string tensor of known rank. Received: inputs of unknown rank"
            )
        if rank == 0:
            return self._tokenize_flat(tf.reshape(inputs, [1]))[0]
        if rank == 1:
            return self._tokenize_flat(inputs)
        ragged = tf.RaggedTensor.from_tensor(inputs, ragged_rank=rank - 1)
        return ragged.with_flat_values(self._tokenize_flat(ragged.flat_values))

    def _tokenize_flat(self, text: tf.Tensor) -> tf.RaggedTensor:
        # text: (num_texts,) -> (num_texts, None) int32 ids.
        if self._wordpiece is not None:
            return self._wordpiece.tokenize_graph(text)
        normalized = self.normalize_graph(text)
        if self._resplit_table is None:
            pieces = split_digit_comma_graph(
                self._sentencepiece, self._sentencepiece.tokenize(normalized)
            )
            return tf.cast(self._sentencepiece.string_to_id(pieces), tf.int32)
        ids = self._sentencepiece.tokenize(normalized)  # (num_texts, None)
        values, row_splits = self._resplit_table
        table = tf.RaggedTensor.from_row_splits(
            tf.constant(values), tf.constant(row_splits), validate=False
        )  # (vocabulary_size, None)
        expanded = tf.gather(table, ids.flat_values)  # (num_pieces, None)
        return tf.cast(ids.with_flat_values(expanded).merge_dims(1, 2), tf.int32)

    def packer(self, sequence_length: int) -> AlbertPacker:
        """An `AlbertPacker` with this model's (or vocabulary's) [CLS], [SEP] and <pad> ids."""
        return AlbertPacker(
            sequence_length=sequence_length,
            cls_id=self.cls_id,
            sep_id=self.sep_id,
            pad_id=self.pad_id,
        )


def _as_string_tensor(inputs):
    if isinstance(inputs, tf.RaggedTensor):
        values = inputs
    else:
        try:
            values = tf.convert_to_tensor(inputs)
        except (TypeError, ValueError) as error:
            raise TypeError(
                "`inputs` must be a tf.string tensor (or str / list of str). "
                f"Received: inputs={inputs!r}"
            ) from error
    if values.dtype != tf.string:
        raise TypeError(f"`inputs` must be a tf.string tensor. Received: dtype={values.dtype.name}")
    return values
