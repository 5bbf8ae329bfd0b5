"""Fill-mask features in Python, no TensorFlow imported: a text holding the mask token → token
ids (`PythonMaskedTextEncoder`), a mask filled with a token → text, and the packing of encoded
texts (`pack`). `features.py` adds the graph path (`MaskedTextEncoder`) and documents the rules;
this half is what the fill-mask preprocessor runs where TensorFlow is not installed.
"""

from __future__ import annotations

import numpy as np
from sentencepiece import sentencepiece_model_pb2

from keras_albert.text.normalization import to_text
from keras_albert.text.python_tokenizer import PythonTokenizer
from keras_albert.text.sentencepiece_model import (
    SPIECE_UNDERLINE,
    load_processor,
    split_digit_comma,
)

WORDPIECE_CONTINUATION = "##"
# A one-letter word that normalizes to itself and joins no neighbour (see `_continues`).
_WORD = "x"


def without_dummy_prefix(model: bytes) -> bytes:
    """The serialized SentencePiece `model` with `add_dummy_prefix` off (same pieces, same ids):
    it tokenizes "s are" as "s", "▁are", not "▁s", "▁are"."""
    proto = sentencepiece_model_pb2.ModelProto()
    proto.ParseFromString(model)
    proto.normalizer_spec.add_dummy_prefix = False
    return proto.SerializeToString()


class PythonMaskedTextEncoder:
    """Token ids of texts holding the mask token (`encode`), and texts with a mask filled
    (`filled_text`), in Python (see `keras_albert.tasks.fill_mask.features` for the rules).

    Args:
        tokenizer: the model's tokenizer (`PythonTokenizer`, or `AlbertTokenizer`).
    """

    def __init__(self, tokenizer: PythonTokenizer):
        if not isinstance(tokenizer, PythonTokenizer):
            raise TypeError(
                "`tokenizer` must be an AlbertTokenizer. "
                f"Received: tokenizer={type(tokenizer).__name__}"
            )
        self.tokenizer = tokenizer
        self.mask_id = tokenizer.mask_id
        self.mask_token = tokenizer.id_to_piece(tokenizer.mask_id)  # "[MASK]"
        self.wordpiece = tokenizer.wordpiece
        if self.wordpiece:
            return
        model = tokenizer.serialized_model
        continuation = without_dummy_prefix(model)
        # The continuation model's pieces, re-split with the ordinary model's.
        self._processor = load_processor(model, model)
        self._continuation_processor = load_processor(continuation, continuation)

    def encode(self, text: str | bytes) -> list[int]:
        """Token ids of `text` (no [CLS]/[SEP]), the mask id for every mask token."""
        ids = []
        for index, part in enumerate(to_text(text).split(self.mask_token)):
            if index:
                ids.append(self.mask_id)
            if index and self._continues(part):
                ids += self._encode_continuation(part)
            else:
                ids += self.tokenizer.encode(part)
        return ids

    def _continues(self, part: str) -> bool:
        # Whether the part, after a mask, begins with what normalizes to no whitespace: a
        # letter normalized after a stand-in for the masked word is not followed by a space.
        # (Not on the raw text: after "[MASK]", U+0301 + " café" loses the accent, starts a word.)
        return not self.wordpiece and self.tokenizer.normalize(_WORD + part)[1:2] not in ("", " ")

    def _encode_continuation(self, part: str) -> list[int]:
        pieces = []
        for piece in self._continuation_processor.encode(
            self.tokenizer.normalize(part), out_type=str
        ):
            if len(piece) > 1 and piece[-1] == "," and piece[-2].isdigit():
                pieces += split_digit_comma(self._processor, piece)
            else:
                pieces.append(piece)
        return self._processor.piece_to_id(pieces) if pieces else []

    def fill(self, piece: str) -> str:
        """What a mask becomes when filled with `piece` (before the space rule)."""
        if self.wordpiece:
            return piece.removeprefix(WORDPIECE_CONTINUATION)
        return piece.replace(SPIECE_UNDERLINE, " ")

    def filled_text(self, text: str | bytes, mask_index: int, piece: str) -> str:
        """`text` with its `mask_index`-th mask token replaced by `piece`, the others kept."""
        parts = to_text(text).split(self.mask_token)
        before = self.mask_token.join(parts[: mask_index + 1])
        after = self.mask_token.join(parts[mask_index + 1 :])
        fill = self.fill(piece)
        if fill.startswith(" ") and (before == "" or before[-1].isspace()):
            fill = fill[1:]
        return before + fill + after


# ------------------------------------------------------------------------------------------
# Packing: [CLS] ids [SEP], padded to the longest; the masks found by their id.


def pack(
    rows: list[list[int]], tokenizer: PythonTokenizer, max_masks: int | None = None
) -> dict[str, np.ndarray]:
    """The model inputs of encoded texts (`PythonMaskedTextEncoder.encode`), padded to the
    longest, `mask_positions` padded with 0 (the [CLS] position, whose prediction is ignored)
    to the most masks of a row, or to `max_masks` (a row with more is an error)."""
    sequences = [[tokenizer.cls_id, *ids, tokenizer.sep_id] for ids in rows]
    length = max(len(sequence) for sequence in sequences)
    token_ids = np.full((len(rows), length), tokenizer.pad_id, np.int32)
    padding_mask = np.zeros((len(rows), length), np.int32)
    positions = [[i for i, t in enumerate(s) if t == tokenizer.mask_id] for s in sequences]
    most = max(len(p) for p in positions)
    if max_masks is not None and most > max_masks:
        index = next(i for i, found in enumerate(positions) if len(found) == most)
        raise ValueError(
            f"`texts` must each hold at most mask_selection_length={max_masks} masks. "
            f"Received: texts[{index}] with {most}"
        )
    mask_positions = np.zeros((len(rows), most if max_masks is None else max_masks), np.int32)
    for row, (sequence, found) in enumerate(zip(sequences, positions, strict=True)):
        token_ids[row, : len(sequence)] = sequence
        padding_mask[row, : len(sequence)] = 1
        mask_positions[row, : len(found)] = found
    return {
        "token_ids": token_ids,
        "segment_ids": np.zeros_like(token_ids),
        "padding_mask": padding_mask,
        "mask_positions": mask_positions,
    }
