"""The pretraining driver's input streams: the layout the options ask of the records, the
first-batch check against the model, the resumable training stream and the held-out batches."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import tensorflow as tf

from keras_albert.config import AlbertConfig
from keras_albert.pretraining.data.dataset import DynamicMasking, make_pretraining_dataset
from keras_albert.pretraining.data.records import RecordLayout, count_records
from keras_albert.pretraining.options import PretrainingOptions
from keras_albert.training.loop import replica_share

# The dataset's label keys → the model's output names (what `compile` matches them to).
_OUTPUT_OF_LABEL = {"mlm": "mlm_logits", "sop": "sop_logits"}
# More passes over the training data than any run makes.
_MAX_PASSES = 1 << 40


def layout_for_options(layout: RecordLayout, options: PretrainingOptions) -> RecordLayout:
    """The layout the input pipeline produces: the options may check the records' sequence
    length, and dynamic masking may choose its own prediction count."""
    if options.sequence_length is not None and options.sequence_length != layout.sequence_length:
        raise ValueError(
            f"`sequence_length` must be the records' sequence length, {layout.sequence_length} "
            f"(or not given). Received: sequence_length={options.sequence_length}"
        )
    wanted = options.max_predictions_per_sequence
    if not options.dynamic_masking:
        if wanted is not None and wanted != layout.max_predictions_per_sequence:
            raise ValueError(
                "`max_predictions_per_sequence` must be the records' count, "
                f"{layout.max_predictions_per_sequence}, without dynamic masking (or not "
                f"given). Received: max_predictions_per_sequence={wanted}"
            )
        return layout
    count = layout.max_predictions_per_sequence if wanted is None else wanted
    if count < 1:
        raise ValueError(
            "`max_predictions_per_sequence` must be >= 1 with dynamic masking: the records "
            f"hold no predictions to take the count from. Received: "
            f"max_predictions_per_sequence={wanted}"
        )
    return dataclasses.replace(layout, max_predictions_per_sequence=count)


def require_same_layout(train: RecordLayout, eval_: RecordLayout) -> None:
    if (train.sequence_length, train.max_predictions_per_sequence) != (
        eval_.sequence_length,
        eval_.max_predictions_per_sequence,
    ):
        raise ValueError(
            f"eval_data holds sequences of {eval_.sequence_length} tokens with "
            f"{eval_.max_predictions_per_sequence} predictions; train_data holds "
            f"{train.sequence_length} and {train.max_predictions_per_sequence}."
        )


def dynamic_masking_for(options: PretrainingOptions) -> DynamicMasking | None:
    if not options.dynamic_masking:
        return None
    from keras_albert.text.tokenizer import AlbertTokenizer

    tokenizer = AlbertTokenizer(
        options.vocabulary, lowercase=options.lowercase, strip_accents=options.strip_accents
    )
    return DynamicMasking.from_tokenizer(tokenizer, options.masked_lm_prob, options.max_ngram)


def check_first_batch(
    options: PretrainingOptions,
    pattern: str,
    layout: RecordLayout,
    config: AlbertConfig,
    name: str,
) -> None:
    """Ids in the first (unshuffled) batch must fit the model's tables."""
    dataset = make_pretraining_dataset(
        list(layout.files),
        1,  # rebatched below: a file shorter than a batch must still give one
        layout.sequence_length,
        layout.max_predictions_per_sequence,
        shuffle=False,
        seed=options.seed,
        dynamic_masking=dynamic_masking_for(options),
    )
    dataset = dataset.unbatch().batch(64)
    x, y, _ = next(iter(dataset))
    for key, values, limit, what in (
        ("token_ids", x["token_ids"], config.vocabulary_size, "vocabulary_size"),
        ("masked token ids", y["mlm"], config.vocabulary_size, "vocabulary_size"),
        ("segment_ids", x["segment_ids"], config.num_segments, "num_segments"),
    ):
        largest = int(tf.reduce_max(values))
        smallest = int(tf.reduce_min(values))
        if largest >= limit or smallest < 0:
            raise ValueError(
                f"The first batch of `{name}` ({pattern!r}) has {key} in [{smallest}, {largest}] "
                f"but the model's {what} is {limit}: the data and the config do not match "
                "(made with another vocabulary?)."
            )


def to_model_labels(x, y, sample_weight):
    """Renames the dataset's `mlm` / `sop` label and weight keys to the model's outputs."""
    rename = lambda tree: {_OUTPUT_OF_LABEL[key]: value for key, value in tree.items()}
    return x, rename(y), rename(sample_weight)


def make_datasets(
    options: PretrainingOptions,
    layout: RecordLayout,
    masking: DynamicMasking | None = None,
    start_step: int = 0,
    input_context: tf.distribute.InputContext | None = None,
) -> tf.data.Dataset:
    """The training stream from global batch `start_step` on, keyed for `compile_pretrainer`.

    With `input_context` (`distribute_datasets_from_function`), this pipeline's replicas'
    shares of each global batch (`loop.replica_share`): the replicas together train on the
    batches one device would, so a run resumes on any number of replicas.

    Deterministic for a given `options.seed`: batch `k` is the same whatever `start_step`
    the stream was made with, and however often the stream has been iterated before (Keras
    starts an iterator of its own to build the model). So each pass over the data is a new
    pipeline seeded with `(seed, pass)`: a `shuffle(reshuffle_each_iteration=True)` repeated
    in place would draw each pass's order from a generator that every iterator of the dataset
    advances, prefetching ones included. Batches do not straddle passes (each pass drops its
    remainder). Skipping reads (and, with dynamic masking, masks) the skipped records, so a
    resume at step s costs a pass over s batches of input, not of training.

    `options.input_sharding="files"`: each input pipeline reads its own files and makes its
    own stream (seeded apart from the others) of `batch_size / pipelines` rows per step, split
    among its replicas; each host then reads only its share of the data.
    """

    files, batch_size, seed_offset = list(layout.files), options.batch_size, 0
    share_context = input_context
    if options.input_sharding == "files" and input_context is not None:
        pipelines, pipeline = input_context.num_input_pipelines, input_context.input_pipeline_id
        if len(files) < pipelines:
            raise ValueError(
                f"`input_sharding='files'` needs at least one file per input pipeline: "
                f"{len(files)} file(s) for {pipelines} pipelines. Received: "
                f"train_data={options.train_data!r}"
            )
        files = files[pipeline::pipelines]
        local = input_context.num_replicas_in_sync // pipelines
        batch_size = input_context.get_per_replica_batch_size(options.batch_size) * local
        seed_offset = pipeline << 40  # above every pass index: streams of their own
        # This pipeline's batches are split among its own replicas only.
        share_context = tf.distribute.InputContext(1, 0, local)

    def one_pass(index):
        return make_pretraining_dataset(
            files,
            batch_size,
            layout.sequence_length,
            layout.max_predictions_per_sequence,
            shuffle=True,
            shuffle_buffer_size=options.shuffle_buffer_size,
            seed=_pass_seed(options.seed, index) + seed_offset,
            dynamic_masking=masking,
        )

    passes = tf.data.Dataset.range(_MAX_PASSES).flat_map(one_pass)
    stream = passes.skip(start_step).map(to_model_labels)
    if share_context is not None:
        stream = replica_share(stream, batch_size, share_context)
    return stream.prefetch(tf.data.AUTOTUNE)


def _pass_seed(seed: int, index):
    # (seed, pass) → one int64 seed; a large odd multiplier keeps seeds of nearby runs apart.
    return tf.cast(seed, tf.int64) * 1_000_003 + index


def eval_dataset(
    options: PretrainingOptions,
    layout: RecordLayout,
    masking: DynamicMasking | None,
    strategy: tf.distribute.Strategy,
) -> tuple[Callable, dict]:
    """The held-out batches (a dataset function; with an `InputContext`, the replicas'
    shares of each batch) and how many records they hold (and leave out).

    Every record is evaluated: the last batch is a partial one, except on a TPU, whose shapes
    must be static — there the remainder is left out and counted. The dataset's cardinality is
    set: Keras then stops after the last batch instead of calling the test step once more to
    find the end (with static batch shapes and without XLA, that extra call adds a phantom
    batch to Keras's mean `loss`: measured with Keras 3.15 and TensorFlow 2.21).
    """
    files = list(layout.files)
    num_records = count_records(files)
    static = isinstance(strategy, tf.distribute.TPUStrategy)
    num_batches = (num_records // options.batch_size if static
                   else math.ceil(num_records / options.batch_size))  # fmt: skip
    if options.eval_steps is not None:
        num_batches = min(num_batches, options.eval_steps)
    if num_batches == 0:
        raise ValueError(
            f"eval_data holds {num_records} records: not one batch of {options.batch_size}"
            + (" (a TPU evaluates full batches only)." if num_records else ".")
        )

    def dataset_fn(input_context: tf.distribute.InputContext | None = None) -> tf.data.Dataset:
        dataset = make_pretraining_dataset(
            files,
            options.batch_size,
            layout.sequence_length,
            layout.max_predictions_per_sequence,
            shuffle=False,
            seed=options.seed,
            dynamic_masking=masking,
            drop_remainder=static,
        ).map(to_model_labels)
        dataset = dataset.take(num_batches)
        dataset = dataset.apply(tf.data.experimental.assert_cardinality(num_batches))
        if input_context is not None:
            dataset = replica_share(dataset, options.batch_size, input_context)
        return dataset

    evaluated = min(num_records, num_batches * options.batch_size)
    counts = {"eval_records": num_records, "eval_records_evaluated": evaluated}
    return dataset_fn, counts
