"""Random packed batches shared by the training-step benchmarks (one seed, so every script times
the same numbers)."""

import numpy as np


def pretraining_batch(batch_size: int, sequence_length: int, num_masked: int, vocabulary_size: int):
    """`(x, mask_ids, sop_labels)`: full-length rows of random ids (segment B from the middle),
    `num_masked` sorted positions per row in `x["mask_positions"]`, the ids there, and random
    sentence-order labels."""
    rng = np.random.default_rng(0)
    token_ids = rng.integers(5, vocabulary_size, (batch_size, sequence_length)).astype("int32")
    positions = np.stack(
        [np.sort(rng.choice(np.arange(1, sequence_length), num_masked, False)) for _ in token_ids]
    ).astype("int32")
    x = {
        "token_ids": token_ids,
        "segment_ids": (np.arange(sequence_length) >= sequence_length // 2)
        .astype("int32")[None]
        .repeat(batch_size, 0),
        "padding_mask": np.ones_like(token_ids),
        "mask_positions": positions,
    }
    mask_ids = np.take_along_axis(token_ids, positions, 1)
    sop_labels = rng.integers(0, 2, batch_size).astype("int32")
    return x, mask_ids, sop_labels


def pretraining_targets(batch) -> tuple:
    """`(x, labels, weights)` of a `pretraining_batch`: the labels and weights (all ones) keyed
    by the pretrainer's outputs, as the loop's `replica_fn` and `model.fit` take them."""
    x, mask_ids, sop_labels = batch
    labels = {"mlm_logits": mask_ids, "sop_logits": sop_labels}
    weights = {name: np.ones(value.shape, "float32") for name, value in labels.items()}
    return x, labels, weights
