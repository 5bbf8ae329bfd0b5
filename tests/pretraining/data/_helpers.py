"""Helpers shared by the pretraining data tests (independent of the library's own logic)."""

import os

from tests.text._paths import DATA_DIR

REPO = os.path.dirname(os.path.dirname(DATA_DIR))
# The embedded corpus (data/corpus/NOTICE.md), so tests do not need ../shared.
AUSTEN = os.path.join(REPO, "data", "corpus", "janeaustenr")


def as_text(ids):
    """Token ids as a string, one character per id, so `in` / `find` work on token sequences."""
    return "".join(chr(0x10000 + int(i)) for i in ids)


def segments(example, tokenizer):
    """(A, B) of the restored ``[CLS] A [SEP] B [SEP]``, checked against the segment ids."""
    tokens = example.original_token_ids()
    assert tokens[0] == tokenizer.cls_id and tokens[-1] == tokenizer.sep_id
    length_a = example.segment_ids.count(0) - 2
    assert example.segment_ids == [0] * (length_a + 2) + [1] * (len(tokens) - length_a - 2)
    assert tokens[length_a + 1] == tokenizer.sep_id
    return tokens[1 : length_a + 1], tokens[length_a + 2 : -1]


def word_ranges(token_ids, tokenizer):
    """[start, end) of every word: a word-start piece or the first piece after a special token.

    The grouping is done here again, independently of the library's."""
    words, previous_special = [], True
    for position, token_id in enumerate(token_ids):
        token_id = int(token_id)
        if token_id in tokenizer.special_ids:
            previous_special = True
            continue
        if previous_special or tokenizer.is_word_start(token_id):
            words.append([position, position + 1])
        else:
            words[-1][1] = position + 1
        previous_special = False
    return words
