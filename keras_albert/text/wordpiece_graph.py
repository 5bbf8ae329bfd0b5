"""`Wordpiece`: `wordpiece.PythonWordpiece` plus the same recipe in the TensorFlow graph
(TensorFlow Text's `WordpieceTokenizer` over a `StaticHashTable`), a `tf.Module` so that an
export keeps its table. The recipe, the Python path and the known differences between the two:
`keras_albert.text.wordpiece`, which imports no TensorFlow.
"""

from __future__ import annotations

import tensorflow as tf
import tensorflow_text as tf_text

from keras_albert.text.wordpiece import (
    MAX_CHARACTERS_PER_WORD,
    SUFFIX_INDICATOR,
    PythonWordpiece,
    nonspacing_mark_class,
    prepare_graph,
    word_split_patterns,
)


class Wordpiece(PythonWordpiece, tf.Module):
    """BERT's basic tokenization and WordPiece over a vocabulary, in Python and in the graph.

    Used by `AlbertTokenizer` for a vocabulary file. Args: as `PythonWordpiece`, and `name`
    (the `tf.Module`'s).
    """

    def __init__(
        self,
        tokens: list[str],
        lowercase: bool = True,
        strip_accents: bool = True,
        name: str | None = None,
    ):
        tf.Module.__init__(self, name=name)
        PythonWordpiece.__init__(self, tokens, lowercase=lowercase, strip_accents=strip_accents)
        self._table = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(
                tf.constant(self.tokens, tf.string),
                tf.range(len(self.tokens), dtype=tf.int64),
            ),
            default_value=-1,
        )
        self._wordpiece = tf_text.WordpieceTokenizer(
            self._table,
            suffix_indicator=SUFFIX_INDICATOR,
            # Every word that reaches it has at most 200 characters of at most 4 bytes.
            max_bytes_per_word=4 * MAX_CHARACTERS_PER_WORD,
            token_out_type=tf.int64,
            unknown_token=self.unk_token,
        )

    # ----------------------------------------------------------------------------------------
    # Graph path.

    def words_graph(self, text: tf.Tensor) -> tf.RaggedTensor:
        """`words` elementwise over a (num_texts,) `tf.string` tensor, as a
        (num_texts, None) ragged tensor of words."""
        text = tf.strings.unicode_transcode(
            text, "UTF-8", "UTF-8", errors="replace", replacement_char=0xFFFD
        )
        normalized = self.lower_and_strip_graph(prepare_graph(text))
        return tf_text.regex_split(normalized, *word_split_patterns())

    def lower_and_strip_graph(self, text: tf.Tensor) -> tf.Tensor:
        """`lower_and_strip` with this tokenizer's options, elementwise over `tf.string` text
        without NUL (`prepare_graph`'s)."""
        if self.lowercase:
            text = tf.strings.lower(text, encoding="utf-8")  # no NUL left to stop it
        if self.strip_accents:
            text = tf_text.normalize_utf8(text, "NFD")
            text = tf.strings.regex_replace(text, nonspacing_mark_class() + "+", "")
        return text

    def tokenize_graph(self, text: tf.Tensor) -> tf.RaggedTensor:
        """Token ids of a (num_texts,) `tf.string` tensor, (num_texts, None) int32."""
        words = self.words_graph(text)  # (num_texts, None)
        ids, _, _ = self.split_words_graph(words.flat_values)  # (num_words, None)
        return tf.cast(words.with_flat_values(ids).merge_dims(1, 2), tf.int32)

    def split_words_graph(self, words: tf.Tensor) -> tuple[tf.RaggedTensor, ...]:
        """`split_word` of a (num_words,) `tf.string` tensor of `words_graph`'s words: the
        int64 ids and each token's `[begin, end)` byte offsets in its word, (num_words, None);
        `[UNK]` spans its whole word."""
        # A word longer than the limit is [UNK]; WordPiece spells the token "[UNK]" (a word
        # with brackets never reaches it: they are punctuation) as the [UNK] id.
        long = tf.strings.length(words, unit="UTF8_CHAR") > MAX_CHARACTERS_PER_WORD
        ids, begins, ends = self._wordpiece.tokenize_with_offsets(
            tf.where(long, self.unk_token, words)
        )
        unknown = ids.flat_values == self.token_to_id[self.unk_token]
        word_bytes = tf.gather(tf.cast(tf.strings.length(words), tf.int64), ids.value_rowids())
        begins = tf.where(unknown, tf.zeros_like(word_bytes), begins.flat_values)
        ends = tf.where(unknown, word_bytes, ends.flat_values)
        return ids, ids.with_flat_values(begins), ids.with_flat_values(ends)
