"""Held-out intrinsic-task sets: the same held-out text written as SOP examples and as NSP
examples, for the paper's Table 5 comparison (an NSP-trained and an SOP-trained model, each
evaluated on both tasks).

Both sets come from one text file with one `PretrainingDataConfig` that differs only in `task`,
so the two tasks see the same documents, lengths and masks' scheme. The text must be held out of
pretraining (`task_corpus.build_task_corpus` writes such a file).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable

from keras_albert.pretraining.data.config import PretrainingDataConfig
from keras_albert.pretraining.data.vocabulary import TokenizerLike
from keras_albert.pretraining.data.writer import create_pretraining_data

SENTENCE_PAIR_TASKS = ("sop", "nsp")


def write_intrinsic_sets(
    held_out_text: str,
    output_dir: str,
    tokenizer: TokenizerLike | Callable[[], TokenizerLike],
    config: PretrainingDataConfig,
) -> dict:
    """Writes `output_dir/{sop,nsp}-00000-of-00001.tfrecord` from `held_out_text`.

    Args:
        held_out_text: a text file held out of pretraining.
        output_dir: where the two record files go.
        tokenizer: the pretraining tokenizer (or a factory of one).
        config: how examples are made; its `task` is replaced by each of "sop" and "nsp".

    Returns:
        `{"sop": {"files": [...], "examples": n, "label_balance": ...}, "nsp": {...}}`.
    """
    sets = {}
    for task in SENTENCE_PAIR_TASKS:
        summary = create_pretraining_data(
            [held_out_text],
            os.path.join(output_dir, task),
            tokenizer,
            dataclasses.replace(config, task=task),
            progress=False,
        )
        if not summary.output_files:
            raise ValueError(
                "`held_out_text` must hold text that makes sentence pairs. "
                f"Received: held_out_text={held_out_text!r} (no {task} example was made)"
            )
        sets[task] = {"files": list(summary.output_files), "examples": summary.num_examples}
    return sets
