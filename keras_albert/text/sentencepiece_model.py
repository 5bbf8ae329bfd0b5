"""ALBERT's SentencePiece model: loading it, its special pieces, and the digit-comma re-split of
the pieces it encodes, in Python and inside the TensorFlow graph.

Steps 4 and 5 of the recipe `keras_albert.text.tokenizer` describes (google-research/albert
`tokenization.encode_pieces`): SentencePiece, then a piece that ends in "<digit>," is encoded
again without the comma, and the comma becomes a piece of its own. `split_digit_comma` is the
rule in Python; in the graph, `resplit_table` makes it a lookup per id where that is exact, and
`split_digit_comma_graph` re-splits piece text where it is not. `AlbertTokenizer` holds the
processor and the TF Text tokenizer and calls these; `keras_albert.text.offsets` calls
`split_digit_comma` too, to give each part of a re-split piece its characters.

`with_albert_normalization` writes steps 1-3 (`keras_albert.text.normalization`) into the
model's own normalizer, for tokenizers that run SentencePiece alone (keras-hub's).
"""

from __future__ import annotations

import collections
import functools
import os
import re
import sys
from typing import TYPE_CHECKING

import numpy as np
import sentencepiece as spm
from sentencepiece import sentencepiece_model_pb2

from keras_albert.text.normalization import digit_class, normalize_text

if TYPE_CHECKING:
    import tensorflow as tf
    import tensorflow_text as tf_text

SPIECE_UNDERLINE = "\u2581"

# Pieces the ALBERT model needs, by attribute name. They are looked up in the model, never assumed.
SPECIAL_PIECES = {
    "pad": "<pad>",
    "unk": "<unk>",
    "cls": "[CLS]",
    "sep": "[SEP]",
    "mask": "[MASK]",
}


def load_processor(model: bytes, proto: str | os.PathLike | bytes) -> spm.SentencePieceProcessor:
    """The SentencePiece processor of the serialized `model`; `proto` (the file it was read
    from, or the bytes) names it when `model` is not a SentencePiece model."""
    processor = spm.SentencePieceProcessor()
    try:
        processor.LoadFromSerializedProto(model)
    except (RuntimeError, OSError) as error:
        source = os.fspath(proto) if not isinstance(proto, bytes) else f"<{len(proto)} bytes>"
        # sentencepiece says only "ParseFromArray" failed: say what the file is not.
        detail = " ".join(str(error).split())
        raise ValueError(
            f"Could not load a SentencePiece model from {source!r}: it is not a "
            f"SentencePiece model file (a text file? cut short?) ({detail})"
        ) from None
    return processor


# A line of SentencePiece's text vocabulary (the `.vocab` written beside each `.model`).
_TEXT_VOCABULARY_LINE = re.compile(r"[^\t]+\t-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?")


def is_text_vocabulary(data: bytes) -> bool:
    """Whether `data` is SentencePiece's text vocabulary (`<piece>\\t<score>` per line, the
    `.vocab` the trainer writes beside the `.model`), which a tokenizer cannot load."""
    try:
        lines = [line for line in data.decode("utf-8").split("\n")[:1000] if line]
    except UnicodeDecodeError:
        return False
    return bool(lines) and all(_TEXT_VOCABULARY_LINE.fullmatch(line) for line in lines)


def special_piece_ids(processor: spm.SentencePieceProcessor) -> dict[str, int]:
    """The id of each of `SPECIAL_PIECES`, by attribute name; a `ValueError` if one is missing."""
    # piece_to_id answers the unk id for a missing piece, so "<unk>" itself is checked by
    # its type and every other special piece by not mapping to unk.
    special = {}
    unk_id = processor.unk_id()
    for attribute, piece in SPECIAL_PIECES.items():
        piece_id = processor.piece_to_id(piece)
        found = processor.id_to_piece(piece_id) == piece and (
            piece_id != unk_id or attribute == "unk"
        )
        if not found:
            raise ValueError(
                f"The SentencePiece model lacks the special piece {piece!r} needed for "
                f"ALBERT (expected {', '.join(SPECIAL_PIECES.values())})."
            )
        special[attribute] = piece_id
    return special


def split_digit_comma(processor: spm.SentencePieceProcessor, piece: str) -> list[str]:
    """The pieces a "<digit>," piece becomes: the number encoded again, then ","."""
    # Encoding the number again without the comma gives the pieces the model would have
    # chosen had the comma been absent; the leading "▁" it adds is kept only if the
    # original piece had one.
    parts = processor.encode(piece[:-1].replace(SPIECE_UNDERLINE, ""), out_type=str)
    if not piece.startswith(SPIECE_UNDERLINE) and parts[0].startswith(SPIECE_UNDERLINE):
        parts[0] = parts[0][1:]
        if not parts[0]:
            parts = parts[1:]
    return parts + [","]


def resplit_table(processor: spm.SentencePieceProcessor) -> tuple[np.ndarray, np.ndarray] | None:
    """Each id's ids after the digit-comma re-split, as ragged (values, row_splits).

    Exact when "," is a piece of its own: SentencePiece makes <unk> only of characters
    without a single-character piece, so no <unk> piece ends in a comma, every piece the
    rule matches is a vocabulary piece, and its re-split depends on its id alone. None when
    the model lacks that piece (the graph then re-splits piece text).
    """
    comma_id = processor.piece_to_id(",")
    if processor.id_to_piece(comma_id) != "," or (
        processor.is_unknown(comma_id)
        or processor.is_control(comma_id)
        or processor.is_unused(comma_id)
    ):
        return None
    rows = []
    for token_id in range(processor.get_piece_size()):
        piece = processor.id_to_piece(token_id)
        if len(piece) > 1 and piece[-1] == "," and piece[-2].isdigit():
            rows.append(processor.piece_to_id(split_digit_comma(processor, piece)))
        else:
            rows.append([token_id])
    values = np.array([token_id for row in rows for token_id in row], dtype=np.int32)
    row_splits = np.cumsum([0] + [len(row) for row in rows], dtype=np.int64)
    return values, row_splits


def split_digit_comma_graph(
    sentencepiece: tf_text.SentencepieceTokenizer, pieces: tf.RaggedTensor
) -> tf.RaggedTensor:
    """`split_digit_comma` on piece text with TensorFlow ops; `sentencepiece` gives pieces."""
    import tensorflow as tf  # the graph form only: the Python path needs no TensorFlow

    from keras_albert.text.packing import concat_rows

    # pieces: (num_texts, None) -> (num_texts, None) with "<digit>," pieces re-split.
    flat = pieces.flat_values  # (num_pieces,)
    num_pieces = tf.shape(flat, out_type=tf.int64)[0]
    match = tf.strings.regex_full_match(flat, "(?s).*" + digit_class() + ",")
    targets = tf.boolean_mask(flat, match)  # (num_matches,)
    num_matches = tf.shape(targets, out_type=tf.int64)[0]

    numbers = tf.strings.regex_replace(
        tf.strings.regex_replace(targets, ",$", ""), SPIECE_UNDERLINE, ""
    )
    parts = sentencepiece.tokenize(numbers)  # (num_matches, None)
    part_values = parts.flat_values
    part_rows = parts.value_rowids()
    is_first = tf.ragged.range(parts.row_lengths()).flat_values == 0
    target_has_underline = tf.strings.regex_full_match(targets, SPIECE_UNDERLINE + "(?s).*")
    strip = is_first & ~tf.gather(target_has_underline, part_rows)
    part_values = tf.where(
        strip, tf.strings.regex_replace(part_values, "^" + SPIECE_UNDERLINE, ""), part_values
    )
    keep = ~(strip & tf.equal(part_values, ""))
    parts = tf.RaggedTensor.from_value_rowids(
        tf.boolean_mask(part_values, keep), tf.boolean_mask(part_rows, keep), nrows=num_matches
    )
    commas = tf.RaggedTensor.from_tensor(tf.fill(tf.stack([num_matches, 1]), ","))
    replacements = concat_rows([parts, commas])  # (num_matches, None)

    # Every piece becomes a row: itself, or (for a match) its replacement.
    singles = tf.RaggedTensor.from_tensor(tf.expand_dims(flat, 1))  # (num_pieces, 1)
    rows = tf.concat([singles, replacements], axis=0)
    match_index = num_pieces + tf.cumsum(tf.cast(match, tf.int64)) - 1
    order = tf.where(match, match_index, tf.range(num_pieces))
    expanded = tf.gather(rows, order)  # (num_pieces, None)
    return pieces.with_flat_values(expanded).merge_dims(1, 2)


@functools.cache
def _normalized_characters(lowercase: bool, strip_accents: bool) -> dict[str, str]:
    """Every character that the original normalization changes → what it becomes (whitespace
    → " ", which SentencePiece's own whitespace rule then collapses as ours does)."""
    changed = {}
    for code_point in range(1, sys.maxunicode + 1):
        if 0xD800 <= code_point <= 0xDFFF:
            continue  # surrogates are no characters of UTF-8 text
        character = chr(code_point)
        normalized = (
            " "
            if character.isspace()
            else normalize_text(character, lowercase=lowercase, strip_accents=strip_accents)
        )
        if normalized != character:
            changed[character] = normalized
    return changed


def with_albert_normalization(
    model: bytes, lowercase: bool = True, strip_accents: bool = True
) -> bytes:
    """The serialized SentencePiece `model` with a normalizer that runs the original ALBERT
    normalization (whitespace, NFKD without combining characters, lowercasing, as `lowercase`
    and `strip_accents` say) before the model's own, so that a tokenizer that runs SentencePiece
    alone (keras-hub's `AlbertTokenizer`, TF Text's `SentencepieceTokenizer`) gives
    `AlbertTokenizer`'s pieces.

    SentencePiece's normalizer is a character map (the longest matching sequence first), then
    its whitespace rule. The new map sends each character to the model's normalization of ours
    of it, and each sequence the model's own map composes (a letter and its combining marks,
    Hangul jamo), also after a capital that lowercases to its first letter, to the model's
    normalization of ours of the sequence. Not expressible in a map, and so not written: the
    digit-comma re-split (a step after SentencePiece: "1999," stays one piece "▁1999,"),
    `str.lower`'s final sigma (a capital sigma that ends a word becomes "ς": it depends on the
    letters around it) and user-defined pieces written out in the text (SentencePiece matches
    them before its map, ours after lowercasing). The tests compare every character between
    two letters.
    """
    proto = sentencepiece_model_pb2.ModelProto()
    proto.ParseFromString(model)
    # The model's map alone: no dummy prefix, no escaped or collapsed whitespace (the new
    # normalizer keeps the model's whitespace rules and applies them once, after the map).
    own = spm.SentencePieceNormalizer(
        model_proto=model,
        add_dummy_prefix=False,
        escape_whitespaces=False,
        remove_extra_whitespaces=False,
    )
    own_map = dict(own.Decompile())
    characters = _normalized_characters(lowercase, strip_accents)

    def ours(text: str) -> str:
        return own.Normalize("".join(characters.get(character, character) for character in text))

    mapping = {key: value for key, value in own_map.items() if len(key) == 1}
    mapping.update((character, own.Normalize(text)) for character, text in characters.items())
    capitals = collections.defaultdict(list)  # "a" → ["A"]: what lowercases to one letter
    for character, text in characters.items():
        if len(text) == 1 and not text.isspace():
            capitals[text].append(character)
    for key in own_map:
        if len(key) > 1:
            for first in (key[0], *capitals[key[0]]):
                mapping[first + key[1:]] = ours(first + key[1:])
    spm.set_min_log_level(1)  # not the builder's INFO lines on stderr
    try:
        compiled = spm.SentencePieceNormalizer(
            norm_map=sorted((key, value) for key, value in mapping.items() if key != value)
        )
    finally:
        spm.set_min_log_level(0)  # SentencePiece's default
    normalizer = sentencepiece_model_pb2.NormalizerSpec()
    normalizer.ParseFromString(compiled.serialized_normalizer_spec())
    # The name says what the map does (SentencePiece reads only the map).
    steps = [
        name for name, on in (("lowercase", lowercase), ("strip_accents", strip_accents)) if on
    ]
    proto.normalizer_spec.name = "+".join([proto.normalizer_spec.name, "albert", *steps])
    proto.normalizer_spec.precompiled_charsmap = normalizer.precompiled_charsmap
    return proto.SerializeToString()
