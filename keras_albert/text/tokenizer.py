"""ALBERT's tokenizer (SentencePiece, or WordPiece), in Python and inside the TensorFlow graph.

The recipe is the one google-research/albert used to create its pretraining and fine-tuning
data (`tokenization.preprocess_text` + `tokenization.encode_pieces`):

1.-3. the text normalization of `keras_albert.text.normalization` (whitespace collapse, NFKD
   without combining characters, lowercasing);
4. SentencePiece (the model's own `nmt_nfkc` normalizer runs inside it);
5. a piece that ends in "<digit>," is encoded again without the comma, and the comma becomes a
   piece of its own (so "92000," gives "▁9", "2000", ","); steps 4 and 5, in Python and in the
   graph, are `keras_albert.text.sentencepiece_model`.

`AlbertTokenizer.encode` runs it in Python (offline data creation; `python_tokenizer.py`, which
imports no TensorFlow: `PythonTokenizer` is the same without the graph path); calling the
tokenizer on a string tensor runs the same recipe with TensorFlow and TensorFlow Text ops
only, so it works inside `tf.data` and in an exported SavedModel. Both give the same ids; the
tests prove it against Hugging Face's sentencepiece-based implementation of the recipe.

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

import os

import tensorflow as tf
import tensorflow_text as tf_text

from keras_albert.text.normalization import normalize_text_graph
from keras_albert.text.packing import AlbertPacker
from keras_albert.text.python_tokenizer import PythonTokenizer
from keras_albert.text.sentencepiece_model import resplit_table, split_digit_comma_graph
from keras_albert.text.wordpiece_graph import Wordpiece


class AlbertTokenizer(PythonTokenizer, tf.Module):
    """ALBERT's SentencePiece (or WordPiece) tokenizer with the original text normalization.

    The Python methods (`normalize`, `encode`, `encode_pieces`, `decode`, ...: those of
    `PythonTokenizer`, which imports no TensorFlow) serve offline data creation; calling the
    tokenizer on a `tf.string` tensor runs the same recipe in the graph (TensorFlow Text, no
    `tf.py_function`) and returns the same ids as a `tf.RaggedTensor` with one more dimension
    than the input. The tokenizer is a `tf.Module`, so a SavedModel that keeps
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
    >>> import tensorflow as tf
    >>> from keras_albert import AlbertTokenizer
    >>> tokenizer = AlbertTokenizer("tests/data/30k-clean.model")
    >>> tokenizer.encode("I was born in 92000, and this is falsé.")
    [31, 23, 386, 19, 561, 3050, 15, 17, 48, 25, 4997, 9]
    >>> tokenizer(tf.constant(["The quick brown fox."])).to_list()
    [[14, 2231, 886, 2385, 9]]

    Reference: Lan et al., 2020, "ALBERT: A Lite BERT for Self-supervised Learning of Language
    Representations", arXiv:1909.11942; google-research/albert `tokenization.py`.
    """

    # A vocabulary file's WordPiece tokenizer, in Python and in the graph.
    _wordpiece_class = Wordpiece

    def __init__(
        self,
        proto: str | os.PathLike | bytes,
        lowercase: bool = True,
        strip_accents: bool = True,
        normalize_quotes: bool = False,
        wordpiece: bool | None = None,
        name: str | None = None,
    ):
        tf.Module.__init__(self, name=name)
        PythonTokenizer.__init__(
            self, proto, lowercase, strip_accents, normalize_quotes, wordpiece=wordpiece
        )
        if self._wordpiece is not None:  # its graph path is its own (`Wordpiece`)
            self._resplit_table = self._sentencepiece = None
            return
        # The in-graph path: SentencePiece to ids, then the digit-comma re-split as a lookup in
        # a per-id table; or, for a model where that is not exact, to pieces and the re-split
        # on piece text, as the original does.
        self._resplit_table = resplit_table(self._processor)
        self._sentencepiece = tf_text.SentencepieceTokenizer(
            model=self._model_bytes,
            out_type=tf.string if self._resplit_table is None else tf.int32,
            name="sentencepiece",
        )

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
