"""Fill-mask features: a text holding the mask token → token ids, and a mask filled with a
token → text; in Python (`fill_mask`) and in the graph (the SavedModel), side by side.

The tokenizer reads the literal "[MASK]" in a text as text ("▁[", "mask", "]"), so the text is
split on the mask token (the tokenizer's own `[MASK]` piece, case-sensitive, as Hugging Face
matches its special tokens), each part is tokenized and the parts are joined by the mask id.

Deliberate departure from Hugging Face: a part that follows a mask with no whitespace between
them once normalized ("The sky is [MASK]." → "."; "[MASK]s are"; but not a combining accent
then " x": the accent goes) continues the masked word, so it is tokenized without
SentencePiece's dummy prefix (a second SentencePiece model, the same pieces with
`add_dummy_prefix` off): "." stays ".", as it was in the pretraining text ("▁blue", ".")
whose "▁blue" the mask replaced. Hugging Face tokenizes every part as a new text and gives
"▁", "." there, a word boundary the model never saw before a full stop. The digit-comma
re-split of the original recipe is applied to those parts too, with the ordinary model (as
the recipe does).

With a WordPiece vocabulary every part is tokenized on its own: a part glued to the mask
starts a word instead of continuing one ("##s"), which matters little for the unspaced Chinese
those vocabularies are for, where every ideograph is a word anyway.

A mask is filled with its token's piece: for SentencePiece "▁" becomes a space, dropped at the
start of the text or after whitespace ("The sky is [MASK]." + "▁blue" → "The sky is blue.");
for WordPiece a "##" continuation loses its "##". The other masks stay "[MASK]". Texts are
first made valid UTF-8 (invalid bytes become U+FFFD), as the tokenizer does.
"""

from __future__ import annotations

import tensorflow as tf
import tensorflow_text as tf_text

from keras_albert.tasks.fill_mask.python_features import (
    _WORD,
    WORDPIECE_CONTINUATION,
    PythonMaskedTextEncoder,
    pack,
    without_dummy_prefix,
)
from keras_albert.text.normalization import whitespace_class
from keras_albert.text.packing import concat_rows
from keras_albert.text.sentencepiece_model import SPIECE_UNDERLINE, split_digit_comma_graph
from keras_albert.text.tokenizer import AlbertTokenizer

# The Python half (no TensorFlow), named here too: the module is the features' one home.
__all__ = ["MaskedTextEncoder", "PythonMaskedTextEncoder", "pack", "without_dummy_prefix"]


def valid_utf8_graph(text: tf.Tensor) -> tf.Tensor:
    """`to_text` in the graph: invalid UTF-8 becomes U+FFFD."""
    return tf.strings.unicode_transcode(
        text, "UTF-8", "UTF-8", errors="replace", replacement_char=0xFFFD
    )


class MaskedTextEncoder(PythonMaskedTextEncoder, tf.Module):
    """Token ids of texts holding the mask token, and texts with a mask filled; the Python
    methods (`encode`, `filled_text`: `PythonMaskedTextEncoder`'s) and the graph ones
    (`encode_graph`, `filled_texts_graph`) give the same results (see the module docstring for
    the rules).

    Args:
        tokenizer: the model's `AlbertTokenizer`.
    """

    def __init__(self, tokenizer: AlbertTokenizer):
        tf.Module.__init__(self, name="masked_text_encoder")
        if not isinstance(tokenizer, AlbertTokenizer):
            raise TypeError(
                "`tokenizer` must be an AlbertTokenizer. "
                f"Received: tokenizer={type(tokenizer).__name__}"
            )
        PythonMaskedTextEncoder.__init__(self, tokenizer)
        if self.wordpiece:
            return
        model = tokenizer.serialized_model
        continuation = without_dummy_prefix(model)
        # The same two models in TF Text (their ids are the same: the same pieces).
        self._sentencepiece = tf_text.SentencepieceTokenizer(model=model, out_type=tf.string)
        self._continuation = tf_text.SentencepieceTokenizer(model=continuation, out_type=tf.string)

    # ----------------------------------------------------------------------------------------
    # Graph.

    def encode_graph(self, text: tf.Tensor) -> tf.RaggedTensor:
        """`encode` of a `tf.string [batch]`: ids `(batch, None)` int32."""
        parts = tf.strings.split(valid_utf8_graph(text), sep=self.mask_token)  # (batch, masks+1)
        flat = parts.flat_values  # (num_parts,)
        index_in_row, is_last = _part_places(parts)
        if self.wordpiece:
            ids = self.tokenizer(flat)  # (num_parts, None)
        else:
            after_word = tf.strings.substr(self.tokenizer.normalize_graph(_WORD + flat), 1, 1)
            continues = (index_in_row > 0) & ~tf.strings.regex_full_match(after_word, " ?")
            ordinary = self.tokenizer(tf.boolean_mask(flat, ~continues))
            continued = self._encode_continuation_graph(tf.boolean_mask(flat, continues))
            # Every part's ids: the ordinary rows first, then the continued ones, put back in
            # order (`tf.gather` of ragged rows; no integer Transpose).
            order = tf.where(
                continues,
                ordinary.nrows() + tf.cumsum(tf.cast(continues, tf.int64)) - 1,
                tf.cumsum(tf.cast(~continues, tf.int64)) - 1,
            )
            ids = tf.gather(tf.concat([ordinary, continued], axis=0), order)  # (num_parts, None)
        # The mask id after every part but the last of its text.
        masks = tf.RaggedTensor.from_row_lengths(
            tf.fill([tf.reduce_sum(tf.cast(~is_last, tf.int64))], self.mask_id),
            tf.cast(~is_last, tf.int64),
        )  # (num_parts, 0 or 1)
        return parts.with_flat_values(concat_rows([ids, masks])).merge_dims(1, 2)

    def _encode_continuation_graph(self, parts: tf.Tensor) -> tf.RaggedTensor:
        normalized = self.tokenizer.normalize_graph(parts)
        pieces = split_digit_comma_graph(
            self._sentencepiece, self._continuation.tokenize(normalized)
        )
        return tf.cast(self._continuation.string_to_id(pieces), tf.int32)  # (num_parts, None)

    def filled_texts_graph(self, text: tf.Tensor, pieces: tf.Tensor) -> tf.Tensor:
        """`filled_text` of a `tf.string [batch]` for `pieces` `(batch, max_masks, top_k)`: the
        `(batch, max_masks, top_k)` texts with mask m filled by `pieces[:, m, k]`. Masks past a
        text's own are filled at its end (the caller pads them)."""
        text = valid_utf8_graph(text)
        parts = tf.strings.split(text, sep=self.mask_token)  # (batch, masks+1)
        # Byte offset of each mask token: the bytes of the parts and masks before it.
        mask_length = len(self.mask_token.encode())
        lengths = tf.strings.length(parts.flat_values)  # (num_parts,), bytes
        row = parts.value_rowids()
        index_in_row, is_last = _part_places(parts)
        through_part = tf.cumsum(lengths) - tf.gather(
            tf.cumsum(lengths, exclusive=True), tf.gather(parts.row_starts(), row)
        )
        starts = through_part + tf.cast(index_in_row, tf.int32) * mask_length
        mask_starts = tf.RaggedTensor.from_value_rowids(
            tf.boolean_mask(starts, ~is_last), tf.boolean_mask(row, ~is_last), nrows=parts.nrows()
        )  # (batch, masks)
        max_masks = tf.shape(pieces, out_type=tf.int64)[1]
        text_length = tf.strings.length(text)[:, tf.newaxis]  # (batch, 1)
        # Masks past a text's own start at its end: filled there, padded by the caller.
        mask_starts = mask_starts.to_tensor(
            tf.int32.max, shape=tf.stack([parts.nrows(), max_masks])
        )
        mask_starts = tf.minimum(mask_starts, text_length)  # (batch, max_masks)
        texts = tf.broadcast_to(text[:, tf.newaxis], tf.shape(mask_starts))
        before = tf.strings.substr(texts, tf.zeros_like(mask_starts), mask_starts)
        after_start = tf.minimum(mask_starts + mask_length, text_length)
        after = tf.strings.substr(texts, after_start, text_length - after_start)

        if self.wordpiece:
            fill = tf.strings.regex_replace(pieces, "^" + WORDPIECE_CONTINUATION, "")
        else:
            fill = tf.strings.regex_replace(pieces, SPIECE_UNDERLINE, " ")
            after_space = tf.strings.regex_full_match(before, "(?s)(.*" + whitespace_class() + ")?")
            fill = tf.where(
                after_space[..., tf.newaxis], tf.strings.regex_replace(fill, "^ ", ""), fill
            )
        return before[..., tf.newaxis] + fill + after[..., tf.newaxis]


def _part_places(parts: tf.RaggedTensor) -> tuple[tf.Tensor, tf.Tensor]:
    """For the parts of texts split on the mask token `(batch, masks+1)`: each part's index in
    its text and whether it is the text's last (no mask after it), both `(num_parts,)`."""
    row = parts.value_rowids()
    index_in_row = tf.range(tf.size(row, out_type=row.dtype)) - tf.gather(parts.row_starts(), row)
    return index_in_row, index_in_row == tf.gather(parts.row_lengths(), row) - 1


# ------------------------------------------------------------------------------------------
# Packing: [CLS] ids [SEP], padded to the longest; the masks found by their id.


def pack_graph(ids: tf.RaggedTensor, tokenizer: AlbertTokenizer) -> dict[str, tf.Tensor]:
    """`pack` in the graph, without `mask_positions` (`mask_positions_graph` finds them)."""
    batch_size = ids.nrows()
    ones = tf.ones([batch_size], tf.int64)
    cls = tf.RaggedTensor.from_row_lengths(tf.fill([batch_size], tokenizer.cls_id), ones)
    sep = tf.RaggedTensor.from_row_lengths(tf.fill([batch_size], tokenizer.sep_id), ones)
    packed = concat_rows([cls, tf.cast(ids, tf.int32), sep])  # (batch, None)
    # At least 2 wide: a batch of 0 still gives the backbone a [CLS] column to pool.
    length = tf.maximum(tf.reduce_max(packed.row_lengths()), 2)
    token_ids = packed.to_tensor(tokenizer.pad_id, shape=tf.stack([batch_size, length]))
    padding_mask = tf.sequence_mask(packed.row_lengths(), length, dtype=tf.int32)
    return {
        "token_ids": token_ids,
        "segment_ids": tf.zeros_like(token_ids),
        "padding_mask": padding_mask,
    }


def pack_texts_graph(
    encoder: MaskedTextEncoder, text: tf.Tensor, max_sequence_length: int, caller: str
) -> dict[str, tf.Tensor]:
    """`[CLS] text [SEP]` token inputs of a `[batch]` string tensor (`encode_graph`, then
    `pack_graph`), padded to the longest: what the SavedModel and the preprocessor feed the
    model. A text longer than `max_sequence_length` is an InvalidArgumentError that names
    `caller` and gives the length (never truncated: a mask could be cut off)."""
    ids = encoder.encode_graph(text)  # (batch, None)
    # A batch of 0 gives the int64 minimum, which passes.
    longest = tf.reduce_max(ids.row_lengths()) + 2
    check = tf.debugging.Assert(
        longest <= max_sequence_length,
        [
            f"{caller}: a text is longer than max_sequence_length={max_sequence_length} tokens "
            "with [CLS] and [SEP]; its length:",
            longest,
        ],
    )
    with tf.control_dependencies([check]):
        return pack_graph(ids, encoder.tokenizer)


def mask_positions_graph(
    token_ids: tf.Tensor, padding_mask: tf.Tensor, mask_id: int, max_masks: int | None = None
):
    """The positions of the mask id in packed `token_ids`: `(batch, max_masks)` int32 padded
    with 0 (by default `max_masks` is the most masks of a row; a row with more than a given
    `max_masks` is an InvalidArgumentError), and the number of masks per row `(batch,)` int32."""
    found = tf.where(tf.equal(token_ids, mask_id) & tf.not_equal(padding_mask, 0))  # (n, 2)
    positions = tf.RaggedTensor.from_value_rowids(
        tf.cast(found[:, 1], tf.int32), found[:, 0], nrows=tf.shape(token_ids, tf.int64)[0]
    )
    num_masks = tf.cast(positions.row_lengths(), tf.int32)
    if max_masks is None:
        return positions.to_tensor(0), num_masks
    check = tf.debugging.Assert(
        tf.reduce_all(num_masks <= max_masks),
        [f"a text holds more than mask_selection_length={max_masks} masks; its masks:", num_masks],
    )
    with tf.control_dependencies([check]):
        return positions.to_tensor(0, shape=[None, max_masks]), num_masks
