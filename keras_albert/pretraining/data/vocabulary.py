"""What example creation needs from a tokenizer, and the per-vocabulary lookups built from it."""

from __future__ import annotations

from typing import Protocol, runtime_checkable


@runtime_checkable
class TokenizerLike(Protocol):
    """What example creation needs from a tokenizer (`keras_albert.text.tokenizer`'s has it).

    `encode` applies ALBERT's normalization and SentencePiece; `is_word_start(i)` is true for
    a piece that begins with "▁". The object must be picklable to be used with `num_workers > 1`.
    """

    vocabulary_size: int
    pad_id: int
    unk_id: int
    cls_id: int
    sep_id: int
    mask_id: int
    special_ids: set[int]

    def encode(self, text: str) -> list[int]: ...

    def id_to_piece(self, i: int) -> str: ...

    def piece_to_id(self, p: str) -> int: ...

    def is_word_start(self, i: int) -> bool: ...


class TokenTables:
    """Per-vocabulary lookups, built once per process."""

    def __init__(self, tokenizer: TokenizerLike):
        size = tokenizer.vocabulary_size
        self.special = bytearray(size)
        for i in tokenizer.special_ids:
            self.special[i] = 1
        self.word_start = bytearray(1 if tokenizer.is_word_start(i) else 0 for i in range(size))
        self.replacements = [i for i in range(size) if not self.special[i]]
        self.cls_id = tokenizer.cls_id
        self.sep_id = tokenizer.sep_id
        self.mask_id = tokenizer.mask_id
