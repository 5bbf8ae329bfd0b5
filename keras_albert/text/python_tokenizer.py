"""ALBERT's tokenizer in Python: `PythonTokenizer`, the vocabulary and the Python path of
`keras_albert.text.tokenizer.AlbertTokenizer` (which adds the TensorFlow graph path), and no
TensorFlow imported: what processes that only encode text load (the pretraining data's
workers, `keras_albert.pretraining.data`). The recipe: `keras_albert.text.tokenizer`.

A path to the model is read with `tf.io.gfile` where TensorFlow is installed (any file system
it reads), so it imports TensorFlow; without TensorFlow, as a local file. The model's bytes
(`read_vocabulary_file`) need none.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable

import numpy as np

from keras_albert._startup import tensorflow_installed
from keras_albert.text.normalization import normalize_text
from keras_albert.text.sentencepiece_model import (
    SPIECE_UNDERLINE,
    is_text_vocabulary,
    load_processor,
    special_piece_ids,
    split_digit_comma,
)
from keras_albert.text.wordpiece import (
    SPECIAL_TOKENS,
    PythonWordpiece,
    is_vocabulary,
    missing_special_tokens,
    parse_vocabulary,
)

# google-research/albert `create_pretraining_data._is_start_piece`: besides "▁"-pieces, pieces
# starting with "<" and single ASCII punctuation pieces begin a word for whole-word masking.
_WORD_START_PUNCTUATION = frozenset('!"#$%&"()*+,-./:;?@[\\]^_`{|}~')


def read_vocabulary_file(proto: str | os.PathLike | bytes) -> bytes:
    """The bytes of a SentencePiece model or WordPiece vocabulary file (anything `tf.io.gfile`
    reads; a local file where TensorFlow is not installed), or `proto` itself when it is bytes:
    what to ship to workers instead of a path."""
    if isinstance(proto, bytes):
        return proto
    if not isinstance(proto, (str, os.PathLike)):
        raise TypeError(
            "`proto` must be a path to a SentencePiece model or WordPiece vocabulary file, or "
            "its bytes. "
            f"Received: proto={proto!r} ({type(proto).__name__})"
        )
    path = os.fspath(proto)
    if tensorflow_installed():  # tf.io.gfile: gs://, hdfs://, ... (bytes need no TensorFlow)
        import tensorflow as tf

        exists, isdir, open_file = tf.io.gfile.exists, tf.io.gfile.isdir, tf.io.gfile.GFile
    else:  # local files only
        exists, isdir, open_file = os.path.exists, os.path.isdir, open
    if not exists(path):
        raise FileNotFoundError(f"SentencePiece model or vocabulary file not found: {path!r}")
    if isdir(path):
        raise ValueError(
            f"`proto` (the SentencePiece model or WordPiece vocabulary) must be a file, not a "
            "directory. "
            f"Received: proto={path!r}"
        )
    with open_file(path, "rb") as file:
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
        import tensorflow as tf  # tf.io.gfile, as `read_vocabulary_file`

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


class PythonTokenizer:
    """ALBERT's SentencePiece (or WordPiece) tokenizer with the original text normalization, in
    Python only: `AlbertTokenizer` without its graph path, and no TensorFlow imported.

    The same ids as `AlbertTokenizer.encode` (it is `AlbertTokenizer`'s base class). Args: as
    `AlbertTokenizer`'s, but `name`.

    Example:
    >>> from keras_albert.text.python_tokenizer import PythonTokenizer, read_vocabulary_file
    >>> tokenizer = PythonTokenizer(read_vocabulary_file("tests/data/30k-clean.model"))
    >>> tokenizer.encode("I was born in 92000, and this is falsé.")
    [31, 23, 386, 19, 561, 3050, 15, 17, 48, 25, 4997, 9]
    """

    # The WordPiece tokenizer of a vocabulary file (`AlbertTokenizer`'s also runs in the graph).
    _wordpiece_class = PythonWordpiece

    def __init__(
        self,
        proto: str | os.PathLike | bytes,
        lowercase: bool = True,
        strip_accents: bool = True,
        normalize_quotes: bool = False,
        wordpiece: bool | None = None,
    ):
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
        self._wordpiece = self._wordpiece_class(
            tokens, lowercase=self.lowercase, strip_accents=self.strip_accents
        )
        self._processor = None
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
