"""N-gram whole-word masking of one example, as the examples are written (pure Python).

Differences from the original `create_pretraining_data.py`, on purpose: the masking budget is
`round(masked_lm_prob * non-special tokens)` (the original counts `[CLS]`/`[SEP]` too), n-gram
spans never cross a segment boundary, a span that would overshoot the budget is kept with
probability `remaining / span_size` (so the expected masked count equals the budget and long
spans are not systematically cut short), and a random replacement is never a special token.
The in-graph twin, for masking anew every epoch a batch at a time, is `dataset.dynamic_mask`.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

import numpy as np

from keras_albert.pretraining.data.config import PretrainingDataConfig
from keras_albert.pretraining.data.vocabulary import TokenTables


def mask_tokens(
    token_ids: Sequence[int],
    rng: random.Random,
    tables: TokenTables,
    config: PretrainingDataConfig,
) -> tuple[list[int], list[int], list[int], list[int]]:
    """N-gram whole-word masking of one `[CLS] A [SEP] B [SEP]` sequence.

    A word is a piece for which `is_word_start` holds plus the pieces that follow it (a word
    also starts after a special token). Spans of n words, n ~ p(n) ∝ 1/n, are placed uniformly
    among the runs of n still unmasked words of one segment until the budget
    `min(max_predictions_per_sequence, round(masked_lm_prob * non-special tokens))` is met; the span
    that would overshoot it is kept with probability `remaining / span_size`. Each masked token
    becomes `[MASK]` (80%), a random non-special token (10%) or stays (10%).

    Returns:
        `(masked_token_ids, mask_positions, mask_ids, span_lengths)`.
    """
    # words[k] = [first piece, end piece, block]; a block is the run between special tokens.
    words: list[list[int]] = []
    block = 0
    previous_special = True
    for position, token_id in enumerate(token_ids):
        if tables.special[token_id]:
            block += 1
            previous_special = True
            continue
        if previous_special or tables.word_start[token_id]:
            words.append([position, position + 1, block])
        else:
            words[-1][1] = position + 1
        previous_special = False
    num_candidates = sum(end - start for start, end, _ in words)
    budget = 0
    if config.masked_lm_prob > 0 and num_candidates:
        budget = max(1, math.floor(config.masked_lm_prob * num_candidates + 0.5))
    budget = min(budget, config.max_predictions_per_sequence)

    ngram_cumulative = [float(c) for c in np.cumsum(config.ngram_probabilities)]
    covered = bytearray(len(words))
    num_words = len(words)

    def fits(start: int, n: int) -> bool:
        end = start + n
        if end > num_words or words[start][2] != words[end - 1][2]:
            return False
        return not any(covered[start:end])

    def place(n: int) -> int | None:
        # Rejection sampling is uniform over the valid starts and cheap while most words are
        # free; the exhaustive scan is the rare fallback.
        for _ in range(32):
            start = rng.randrange(num_words)
            if fits(start, n):
                return start
        valid = [start for start in range(num_words) if fits(start, n)]
        return rng.choice(valid) if valid else None

    masked: list[int] = []
    span_lengths: list[int] = []
    while len(masked) < budget:
        draw = rng.random()
        n = next((k + 1 for k, c in enumerate(ngram_cumulative) if draw < c), config.max_ngram)
        start = place(n)
        while start is None and n > 1:
            n -= 1
            start = place(n)
        if start is None:
            break
        positions = [p for w in words[start : start + n] for p in range(w[0], w[1])]
        remaining = budget - len(masked)
        if len(positions) > remaining:
            keep = (
                len(masked) + len(positions) <= config.max_predictions_per_sequence
                and rng.random() * len(positions) < remaining
            )
            if not keep:
                break
        covered[start : start + n] = b"\x01" * n
        masked.extend(positions)
        span_lengths.append(n)
        if len(positions) > remaining:
            break

    masked.sort()
    output = list(token_ids)
    mask_ids = [token_ids[p] for p in masked]
    for position in masked:
        draw = rng.random()
        if draw < 0.8:
            output[position] = tables.mask_id
        elif draw < 0.9:
            output[position] = rng.choice(tables.replacements)
    return output, masked, mask_ids, span_lengths
