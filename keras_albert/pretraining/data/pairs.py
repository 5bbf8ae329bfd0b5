"""Sentence pairs: a tokenized document → `[CLS] A [SEP] B [SEP]` examples (SOP or NSP), masked.

As the original `create_pretraining_data.py`'s `create_instances_from_document`: target length
`sequence_length - 3`, with probability `short_seq_prob` a shorter target drawn once per
document and pass (`short_seq_draw="document"`, the original; "chunk" draws anew per chunk),
sentences gathered into a chunk until the target is reached, the chunk split at a random
sentence boundary into A and B.

Difference from the original, on purpose: a one-sentence chunk in SOP mode is split at a random
whole-word boundary inside the sentence (A = first part, B = rest). The original pairs it with a
random other document's text while still calling it "swapped", which mixes NSP negatives into
the SOP task.
"""

from __future__ import annotations

import collections
import random

from keras_albert.pretraining.data.config import PretrainingDataConfig
from keras_albert.pretraining.data.masking import mask_tokens
from keras_albert.pretraining.data.records import PretrainingExample
from keras_albert.pretraining.data.vocabulary import TokenTables


def _truncate_pair(
    tokens_a: list[int], tokens_b: list[int], max_num_tokens: int, rng: random.Random
) -> None:
    """Trim the longer segment from a random end until the pair fits (as the original)."""
    while len(tokens_a) + len(tokens_b) > max_num_tokens:
        longer = tokens_a if len(tokens_a) > len(tokens_b) else tokens_b
        if rng.random() < 0.5:
            del longer[0]
        else:
            longer.pop()


def _split_sentence(sentence: list[int], rng: random.Random, tables: TokenTables):
    """A and B from one sentence, cut at a random word start; None for a one-word sentence."""
    cuts = [i for i in range(1, len(sentence)) if tables.word_start[sentence[i]]]
    if not cuts:
        return None
    cut = rng.choice(cuts)
    return sentence[:cut], sentence[cut:]


def create_examples_from_document(
    sentences: list[list[int]],
    rng: random.Random,
    tables: TokenTables,
    config: PretrainingDataConfig,
    partner: list[list[int]] | None = None,
    skipped: collections.Counter | None = None,
) -> list[PretrainingExample]:
    """One pass (of `dupe_factor`) over a tokenized document, as the original's
    `create_instances_from_document`.

    Sentences are gathered into a chunk until the target length is reached; the chunk is split
    at a random sentence boundary into A and B (inside the sentence, at a word start, when the
    chunk is one sentence). SOP: with probability 0.5 A and B are swapped (label 1). NSP: with
    probability 0.5 B is taken from `partner` instead (label 1) and the unused sentences of the
    chunk go back to the document.

    The target length is drawn once per call (`short_seq_draw="document"`: every chunk of this
    pass aims at it, as the original) or anew after every chunk (`"chunk"`).
    """
    skipped = collections.Counter() if skipped is None else skipped
    max_num_tokens = config.sequence_length - 3

    def new_target() -> int:
        if rng.random() < config.short_seq_prob:
            return rng.randint(2, max_num_tokens)
        return max_num_tokens

    examples: list[PretrainingExample] = []
    target = new_target()
    chunk: list[list[int]] = []
    chunk_length = 0
    i = 0
    while i < len(sentences):
        chunk.append(sentences[i])
        chunk_length += len(sentences[i])
        if i == len(sentences) - 1 or chunk_length >= target:
            a_end = rng.randint(1, len(chunk) - 1) if len(chunk) >= 2 else 1
            random_b = config.task == "nsp" and partner and rng.random() < 0.5
            cut_inside_sentence = False
            if random_b:
                tokens_a = [t for s in chunk[:a_end] for t in s]
                target_b = max(1, target - len(tokens_a))
                tokens_b = []
                for sentence in partner[rng.randrange(len(partner)) :]:
                    tokens_b.extend(sentence)
                    if len(tokens_b) >= target_b:
                        break
                i -= len(chunk) - a_end
                label = 1
            else:
                if len(chunk) >= 2:
                    tokens_a = [t for s in chunk[:a_end] for t in s]
                    tokens_b = [t for s in chunk[a_end:] for t in s]
                else:
                    pair = _split_sentence(chunk[0], rng, tables)
                    if pair is None:
                        skipped["one-word chunk (cannot form a pair)"] += 1
                        tokens_a = tokens_b = None
                    else:
                        tokens_a, tokens_b = list(pair[0]), list(pair[1])
                        cut_inside_sentence = True
                label = 0
                if tokens_a is not None and config.task == "sop" and rng.random() < 0.5:
                    tokens_a, tokens_b = tokens_b, tokens_a
                    label = 1
            if tokens_a is not None:
                _truncate_pair(tokens_a, tokens_b, max_num_tokens, rng)
                token_ids = [tables.cls_id, *tokens_a, tables.sep_id, *tokens_b, tables.sep_id]
                segment_ids = [0] * (len(tokens_a) + 2) + [1] * (len(tokens_b) + 1)
                token_boundary = [
                    1 if tables.special[t] or tables.word_start[t] else 0 for t in token_ids
                ]
                masked_ids, positions, mask_ids, spans = mask_tokens(token_ids, rng, tables, config)
                examples.append(
                    PretrainingExample(
                        masked_ids,
                        segment_ids,
                        token_boundary,
                        positions,
                        mask_ids,
                        label,
                        spans,
                        cut_inside_sentence,
                    )
                )
            chunk = []
            chunk_length = 0
            if config.short_seq_draw == "chunk":
                target = new_target()
        i += 1
    return examples
