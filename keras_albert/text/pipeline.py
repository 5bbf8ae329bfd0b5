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
    lengths=None,
) -> tf.data.Dataset:
    """Batches of the rows of `columns` (a structure of tensors or arrays, `num_examples` rows).

    Training datasets are shuffled (all rows), repeated forever and drop the last partial
    batch; evaluation datasets keep every row in order. With an `input_context`, each input
    pipeline reads its shard and `batch_size` (global) is divided among the replicas.
    `ragged=True` batches ragged rows (`ragged_batch`).

    `lengths` (training only; one number per row, e.g. its token count) groups rows of similar
    length: each window of `LENGTH_WINDOW` batches' worth of shuffled rows (at most one pass:
    fewer batches for a small set) is sorted by length and cut into batches, which are served
    in a shuffled order. The rows come round as often as without grouping, but a batch's rows
    differ little in length, so that with dynamic padding (`trim_padding`) a short-text task
    pads little. Windows are cut from the repeated stream, so a window that spans the end of
    one pass and the start of the next can hold a row twice, and sorting puts the two copies
    side by side (windows are sized from all `num_examples` rows, not one shard's).
    """
    require_int("batch_size", batch_size, minimum=1)
    if lengths is not None and (not training or ragged):
        raise ValueError("`lengths` (grouping by length) is for dense training batches only.")
    if lengths is not None:
        columns = (columns, tf.cast(lengths, tf.int32))
    dataset = tf.data.Dataset.from_tensor_slices(columns)
    if input_context is not None:
        dataset = dataset.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
        batch_size = input_context.get_per_replica_batch_size(batch_size)
    if training:
        dataset = dataset.shuffle(num_examples, seed=seed, reshuffle_each_iteration=True)
        dataset = dataset.repeat()
    if ragged:
        return dataset.ragged_batch(batch_size, drop_remainder=training)
    if lengths is not None:
        window = max(1, min(LENGTH_WINDOW, num_examples // batch_size))
        return _grouped_by_length(dataset, batch_size, window, seed)
    return dataset.batch(batch_size, drop_remainder=training)


# Batches per sorting window of `example_batches(lengths=...)` (Hugging Face's Trainer sorts
# windows of 50 batches too): wide enough that most batches hold rows of one length bucket,
# narrow enough that a window still mixes the data.
LENGTH_WINDOW = 50


def _grouped_by_length(
    dataset: tf.data.Dataset, batch_size: int, window: int, seed
) -> tf.data.Dataset:
    def sort_and_split(columns, lengths):
        order = tf.argsort(lengths, stable=True)
        return tf.nest.map_structure(
            lambda column: tf.reshape(
                tf.gather(column, order), [window, batch_size, *column.shape[1:]]
            ),
            columns,
        )

    windows = dataset.batch(batch_size * window, drop_remainder=True)
    batches = windows.map(sort_and_split).unbatch()
    return batches.shuffle(window, seed=seed)


def served_from_memory(dataset: tf.data.Dataset, batch_size: int) -> tf.data.Dataset:
    """Runs a finite (evaluation) `dataset` once and serves its tensors from memory, batched.

    A dataset evaluated every epoch then costs no tokenization, nor the ~1 s it takes
    TensorFlow to set up the tokenizer's kernels each time an iterator is created.
    """
    batches = list(dataset)
    # Concatenate the batches back into whole columns: (num_examples, ...).
    columns = tf.nest.map_structure(lambda *parts: tf.concat(parts, axis=0), *batches)
    return tf.data.Dataset.from_tensor_slices(columns).batch(batch_size)


def trim_padding(dataset: tf.data.Dataset, pad_to_multiple_of: int) -> tf.data.Dataset:
    """Dynamic padding: each batch of packed features (`token_ids`, `segment_ids`,
    `padding_mask`, alone or as `(x, y)`) cut to its longest example, rounded up to a
    multiple of `pad_to_multiple_of` (never past the packed length).

    Exact: the dropped positions are padding, which attention masks out, so the model's
    outputs at the kept positions are those of the full-length batch (with dropout inside the
    encoder, its masks are drawn for the cut shape: the same in distribution, not bit for bit).
    A short-text task then costs the length of its text, not of `sequence_length`; a compiled
    step sees at most `ceil(sequence_length / pad_to_multiple_of)` lengths (one XLA
    compilation each).
    """
    require_int("pad_to_multiple_of", pad_to_multiple_of, minimum=1)

    def trim(x, *label):
        mask = x["padding_mask"]
        longest = tf.reduce_max(tf.reduce_sum(tf.cast(mask, tf.int32), axis=1))
        rounded_up = -(-longest // pad_to_multiple_of) * pad_to_multiple_of
        length = tf.minimum(rounded_up, tf.shape(mask)[1])
        x = {name: value[:, :length] for name, value in x.items()}
        return (x, *label) if label else x

    return dataset.map(trim, num_parallel_calls=tf.data.AUTOTUNE)
