"""Held-out intrinsic evaluation of a pretrainer: MLM accuracy and sentence-pair accuracy (SOP
or NSP, whichever the records hold) over every record of a set.

Used for the paper's Table 5 in miniature (Lan et al. 2020: NSP-trained models score 52.0 on
SOP, SOP-trained ones 78.9 on NSP and 86.5 on SOP): `evaluate_sentence_pairs` on the held-out
sets of `keras_albert.pretraining.data.intrinsic_sets`. The pretrainer's one binary head
answers both tasks: label 1 is "swapped" for SOP and "B from another document" for NSP.
"""

from __future__ import annotations

import os

import numpy as np

PAPER_TABLE_5 = {
    "nsp_trained": {"nsp": 0.905, "sop": 0.520},
    "sop_trained": {"nsp": 0.789, "sop": 0.865},
}


def load_pretrainer(path: str):
    """An `AlbertPretrainer` from a pretraining output directory or a `.keras` file."""
    import keras

    import keras_albert.models  # noqa: F401  (registers the serializable classes)

    if os.path.isdir(path):
        path = os.path.join(path, "pretrainer.keras")
    if not os.path.isfile(path):
        raise ValueError(
            "`pretrainer` must be a pretraining output directory holding `pretrainer.keras` or "
            f"a `.keras` file. Received: pretrainer={path!r}"
        )
    return keras.models.load_model(path, compile=False)


def evaluate_sentence_pairs(pretrainer, records: str, batch_size: int = 128) -> dict:
    """Accuracy of the sentence-pair head and of the MLM head on every record of `records`.

    Args:
        pretrainer: an `AlbertPretrainer`, or a path for `load_pretrainer`.
        records: a glob (or comma-separated globs) of pretraining TFRecords (static masks).
        batch_size: examples per forward pass.

    Returns:
        `{"pair_accuracy", "mlm_accuracy", "examples", "positive_share"}`: `positive_share` is
        the share of label 1 (the accuracy of always answering 1).
    """
    from keras_albert.pretraining.data.dataset import make_pretraining_dataset
    from keras_albert.pretraining.data.records import inspect_records
    from keras_albert.validation import require_positive_int

    require_positive_int("batch_size", batch_size)
    if isinstance(pretrainer, (str, os.PathLike)):
        pretrainer = load_pretrainer(os.fspath(pretrainer))
    layout = inspect_records(records, "records")
    dataset = make_pretraining_dataset(
        list(layout.files),
        batch_size,
        layout.sequence_length,
        layout.max_predictions_per_sequence,
        shuffle=False,
        drop_remainder=False,
    )
    pair_correct = mlm_correct = mlm_count = examples = positives = 0
    for x, y, weights in dataset:
        outputs = pretrainer(x, training=False)
        pair_labels = y["sop"].numpy()
        pair_predicted = np.argmax(outputs["sop_logits"].numpy(), axis=-1)
        pair_correct += int(np.sum(pair_predicted == pair_labels))
        positives += int(np.sum(pair_labels == 1))
        examples += len(pair_labels)
        mlm_weights = weights["mlm"].numpy() > 0
        mlm_predicted = np.argmax(outputs["mlm_logits"].numpy(), axis=-1)
        mlm_correct += int(np.sum((mlm_predicted == y["mlm"].numpy()) & mlm_weights))
        mlm_count += int(np.sum(mlm_weights))
    if not examples:
        raise ValueError(f"`records` must hold examples. Received: records={records!r} (none)")
    return {
        "pair_accuracy": pair_correct / examples,
        "mlm_accuracy": mlm_correct / mlm_count if mlm_count else None,
        "examples": examples,
        "positive_share": positives / examples,
    }
