"""The front of every fine-tuning input pipeline: in-memory columns → shard, shuffle, repeat,
batch (GLUE, RACE, CoNLL and SQuAD alike), and the evaluation cache."""

from __future__ import annotations

import tensorflow as tf

from keras_albert.validation import require_int


def example_batches(
    columns,
    num_examples: int,
    batch_size: int,
    training: bool = False,
    seed: int | None = None,
    input_context: tf.distribute.InputContext | None = None,
    ragged: bool = False,
) -> tf.data.Dataset:
    """Batches of the rows of `columns` (a structure of tensors or arrays, `num_examples` rows).

    Training datasets are shuffled (all rows), repeated forever and drop the last partial
    batch; evaluation datasets keep every row in order. With an `input_context`, each input
    pipeline reads its shard and `batch_size` (global) is divided among the replicas.
    `ragged=True` batches ragged rows (`ragged_batch`).
    """
    require_int("batch_size", batch_size, minimum=1)
    dataset = tf.data.Dataset.from_tensor_slices(columns)
    if input_context is not None:
        dataset = dataset.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
        batch_size = input_context.get_per_replica_batch_size(batch_size)
    if training:
        dataset = dataset.shuffle(num_examples, seed=seed, reshuffle_each_iteration=True)
        dataset = dataset.repeat()
    if ragged:
        return dataset.ragged_batch(batch_size, drop_remainder=training)
    return dataset.batch(batch_size, drop_remainder=training)


def served_from_memory(dataset: tf.data.Dataset, batch_size: int) -> tf.data.Dataset:
    """Runs a finite (evaluation) `dataset` once and serves its tensors from memory, batched.

    A dataset evaluated every epoch then costs no tokenization, nor the ~1 s it takes
    TensorFlow to set up the tokenizer's kernels each time an iterator is created.
    """
    batches = list(dataset)
    # Concatenate the batches back into whole columns: (num_examples, ...).
    columns = tf.nest.map_structure(lambda *parts: tf.concat(parts, axis=0), *batches)
    return tf.data.Dataset.from_tensor_slices(columns).batch(batch_size)
