"""The pretraining driver: MLM + SOP over `model.fit`, under any strategy, resumable.

`pretrain(PretrainingOptions(...))` checks its inputs, builds the strategy, the model, `Lamb`
with `WarmupPolynomialDecay` and the datasets under `strategy.scope()`, resumes from the last
checkpoint in `output_dir` if there is one (else initializes from `init_checkpoint` if given),
trains with `model.fit` and writes a summary.

What `output_dir` holds:

    run.json               the options that fix the run (a rerun must match them)
    checkpoints/ckpt-N     tf.train.Checkpoint of the model and optimizer at step N
    logs/train, logs/validation   TensorBoard, x-axis = optimizer step
    history.csv            one row per `log_every_steps` steps (appended across restarts)
    pretrainer.keras       the final model
    summary.json           the final summary (also printed)

Resume: the optimizer's `iterations` variable is the step, and the checkpoint holds it with the
weights and the optimizer's slots, so the schedule (a function of `iterations`) resumes where it
stopped. The data position is a function of the step: the input stream is deterministic for a
given `seed` (each pass over the files is its own pipeline seeded with (seed, pass): file and
record shuffles, in-graph masking), so a restart skips the `step` global batches already
consumed (see `make_datasets`). A checkpoint is written to a fresh file and then
registered atomically (`tf.train.CheckpointManager`), so a process killed at any moment
(SIGKILL) leaves the previous complete checkpoint in place; the same command resumes from it.

Strategies: `model.fit` runs under every strategy `build_strategy` makes except
`"multi_worker"`: Keras 3.15's `fit` fails under `MultiWorkerMirroredStrategy`
(keras-team/keras#20585), so that name is refused with an explanation; see `pretrain`.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import time
import uuid

import keras
import numpy as np
import tensorflow as tf

from keras_albert.config import AlbertConfig, get_preset
from keras_albert.models import AlbertBackbone, AlbertPretrainer
from keras_albert.text.pretraining_dataset import (
    DynamicMasking,
    count_records,
    make_pretraining_dataset,
)
from keras_albert.training.lamb import Lamb
from keras_albert.training.losses import MaskedLMLoss, sentence_order_loss
from keras_albert.training.schedule import WarmupPolynomialDecay
from keras_albert.training.strategy import build_strategy, choose_precision_policy

# The dataset's label keys → the model's output names (what `compile` matches them to).
_OUTPUT_OF_LABEL = {"mlm": "mlm_logits", "sop": "sop_logits"}
# Keras's log names → ours. The losses logged per task are the exact weighted means of the
# `*_mean_loss` metrics (the original's eval metrics: `tf.metrics.mean(loss, weights)`), not
# Keras's per-output loss trackers, which average batches equally whatever their size.
_LOG_NAMES = {
    "mlm_logits_mlm_mean_loss": "mlm_loss",
    "sop_logits_sop_mean_loss": "sop_loss",
    "mlm_logits_mlm_accuracy": "mlm_accuracy",
    "sop_logits_sop_accuracy": "sop_accuracy",
}
_DROPPED_LOGS = ("mlm_logits_loss", "sop_logits_loss")
# Record features (the original names) and their length: sequence or predictions.
_SEQUENCE_FEATURES = ("input_ids", "input_mask", "segment_ids")
_PREDICTION_FEATURES = ("masked_lm_positions", "masked_lm_ids", "masked_lm_weights")
# More passes over the training data than any run makes.
_MAX_PASSES = 1 << 40
# Options that fix the data stream and the schedule: a resumed run must not change them.
_RUN_DEFINING_OPTIONS = (
    "train_data",
    "total_steps",
    "batch_size",
    "learning_rate",
    "warmup_steps",
    "end_learning_rate",
    "dynamic_masking",
    "seed",
    "shuffle_buffer_size",
)


@dataclasses.dataclass(frozen=True)
class PretrainingOptions:
    """Everything one pretraining run needs; `tools/pretrain.py` maps its flags onto these.

    Args:
        train_data: glob (or comma-separated globs) of pretraining TFRecords in the original
            layout (`keras_albert.text.pretraining_data`); the sequence length and the
            predictions per sequence are read from the records.
        output_dir: where checkpoints, logs and the summary go (see the module docstring).
            Rerunning with the same `output_dir` resumes.
        total_steps: optimizer steps of the whole run (sets the schedule).
        batch_size: global batch size (split over the replicas).
        preset: a `keras_albert.PRESETS` name, or
        config: path to an ALBERT config JSON (ours, `albert_config.json` or HF `config.json`);
            exactly one of the two, or neither when `init_checkpoint` says the architecture.
        init_checkpoint: weights to start from (continued pretraining): a `.keras` file of an
            `AlbertPretrainer` or `AlbertBackbone`, a `.weights.h5` of an `AlbertPretrainer`,
            or anything `keras_albert.convert.load_checkpoint` reads (HF directory, original
            TF1 checkpoint). A backbone-only checkpoint leaves the heads freshly initialized.
            Ignored when `output_dir` already holds a checkpoint (resume wins).
        eval_data: glob of held-out TFRecords; evaluated every `eval_every_steps` and at the
            end.
        eval_steps: batches per evaluation; `None` is the whole eval set.
        eval_every_steps: defaults to `checkpoint_every_steps`; a multiple of
            `log_every_steps`.
        learning_rate: peak learning rate. Defaults to ALBERT's 0.00176.
        warmup_steps: linear warmup steps; `None` is 2.5% of `total_steps` (ALBERT's
            3125 of 125000).
        end_learning_rate: rate at `total_steps`.
        weight_decay_rate: LAMB's decay (LayerNorm parameters and biases excluded).
        sentence_order_loss_weight: the SOP loss's weight in the total loss; 1.0 is the
            original's plain sum `masked_lm_loss + sentence_order_loss`.
        strategy: a `build_strategy` name.
        tpu_address: for the "tpu" strategy.
        precision: a Keras dtype policy; `None` chooses per device (`choose_precision_policy`).
        dynamic_masking: mask anew every epoch in-graph instead of using the records' masks;
            needs `vocabulary`.
        vocabulary: the SentencePiece model the data was made with (for dynamic masking).
        masked_lm_prob, max_ngram: dynamic masking parameters.
        max_predictions_per_seq: prediction slots per sequence with dynamic masking; `None`
            takes the records' count (which must then be > 0). Without dynamic masking the
            records' count is used and this must be `None` or equal to it.
        steps_per_execution: train steps per `tf.function` call.
        jit_compile: `True`, `False` or `"auto"` (Keras's choice), for the train step.
        log_every_steps: one Keras epoch: logs, TensorBoard, history rows.
        checkpoint_every_steps: a multiple of `log_every_steps`.
        keep_checkpoints: how many checkpoints to keep.
        shuffle_buffer_size: records in the shuffle buffer.
        seed: seed of weights initialization, shuffles and dynamic masking. Resume relies on it.
        deterministic: `tf.config.experimental.enable_op_determinism()` (for the whole
            process): bit-reproducible runs, slower input pipelines.
        verbose: Keras `fit` verbosity (0, 1 or 2).
    """

    train_data: str
    output_dir: str
    total_steps: int
    batch_size: int
    preset: str | None = None
    config: str | None = None
    init_checkpoint: str | None = None
    eval_data: str | None = None
    eval_steps: int | None = None
    eval_every_steps: int | None = None
    learning_rate: float = 0.00176
    warmup_steps: int | None = None
    end_learning_rate: float = 0.0
    weight_decay_rate: float = 0.01
    sentence_order_loss_weight: float = 1.0
    strategy: str = "auto"
    tpu_address: str | None = None
    precision: str | None = None
    dynamic_masking: bool = False
    vocabulary: str | None = None
    masked_lm_prob: float = 0.15
    max_ngram: int = 3
    max_predictions_per_seq: int | None = None
    steps_per_execution: int = 1
    jit_compile: bool | str = "auto"
    log_every_steps: int = 100
    checkpoint_every_steps: int = 1000
    keep_checkpoints: int = 3
    shuffle_buffer_size: int = 10_000
    seed: int = 12345
    deterministic: bool = False
    verbose: int = 2

    def __post_init__(self):
        for name in ("total_steps", "batch_size", "log_every_steps", "checkpoint_every_steps"):
            _require_int(name, getattr(self, name), low=1)
        _require_int("steps_per_execution", self.steps_per_execution, low=1)
        _require_int("keep_checkpoints", self.keep_checkpoints, low=1)
        _require_int("seed", self.seed, low=0)
        for name in ("warmup_steps", "eval_steps", "eval_every_steps"):
            if getattr(self, name) is not None:
                _require_int(name, getattr(self, name), low=0 if name == "warmup_steps" else 1)
        if self.preset is not None and self.config is not None:
            raise ValueError(
                "Give either `preset` or `config`, not both. Received: "
                f"preset={self.preset!r}, config={self.config!r}"
            )
        if self.preset is None and self.config is None and self.init_checkpoint is None:
            raise ValueError(
                "The architecture is unknown: give `preset`, `config` or `init_checkpoint`."
            )
        for name in ("checkpoint_every_steps", "eval_every_steps"):
            value = getattr(self, name)
            if value is not None and value % self.log_every_steps:
                raise ValueError(
                    f"`{name}` must be a multiple of `log_every_steps` ({self.log_every_steps}): "
                    f"checkpoints and evaluations happen at the end of a Keras epoch of "
                    f"`log_every_steps` steps. Received: {name}={value}"
                )
        if self.log_every_steps % self.steps_per_execution:
            raise ValueError(
                f"`log_every_steps` ({self.log_every_steps}) must be a multiple of "
                f"`steps_per_execution`. Received: steps_per_execution={self.steps_per_execution}"
            )
        if self.dynamic_masking and self.vocabulary is None:
            raise ValueError(
                "`dynamic_masking` needs `vocabulary` (the SentencePiece model of the data) to "
                "know word starts and special tokens."
            )
        if self.jit_compile not in (True, False, "auto"):
            raise ValueError(
                f"`jit_compile` must be True, False or 'auto'. Received: {self.jit_compile!r}"
            )
        if self.eval_steps is not None and self.eval_data is None:
            raise ValueError("`eval_steps` is given but `eval_data` is not.")
        weight = self.sentence_order_loss_weight
        if isinstance(weight, bool) or not isinstance(weight, int | float) or not weight >= 0:
            raise ValueError(
                "`sentence_order_loss_weight` must be a number >= 0. "
                f"Received: sentence_order_loss_weight={weight!r}"
            )

    @property
    def resolved_warmup_steps(self) -> int:
        if self.warmup_steps is None:
            return int(math.ceil(0.025 * self.total_steps))
        return self.warmup_steps


@dataclasses.dataclass(frozen=True)
class RecordLayout:
    """What the pretraining records hold, read from their first records."""

    files: tuple[str, ...]
    sequence_length: int
    max_predictions_per_seq: int
    num_empty_files: int


def pretrain(options: PretrainingOptions) -> dict:
    """Runs (or resumes) pretraining; returns the summary also written to `summary.json`.

    Every input is checked before training starts, each failure a `ValueError` naming what was
    received and what was expected: the data globs (no match, records with missing features or
    lengths that differ between files), the vocabulary (token ids in the first batch not below
    `vocabulary_size`), the sequence length (longer than `max_sequence_length`), the output
    directory (not writable), a resumed run whose run-defining options changed.

    `"multi_worker"` is refused: Keras 3.15's `model.fit` cannot run under
    `MultiWorkerMirroredStrategy` (keras-team/keras#20585: it reduces a nested per-replica batch
    eagerly and, past that, takes a mean over axis 0 of scalar logs). Lamb itself works there
    (tests/training/test_strategy.py trains with a custom loop); use one process per host with
    "mirrored", or "tpu", until Keras fixes `fit`.
    """
    started = time.perf_counter()
    if options.strategy == "multi_worker":
        raise ValueError(
            "strategy='multi_worker' is not supported by the model.fit driver: Keras 3.15's fit "
            "fails under MultiWorkerMirroredStrategy (keras-team/keras#20585). Use 'mirrored' "
            "(all devices of one host) or 'tpu'."
        )
    _prepare_output_dir(options.output_dir)
    layout = inspect_records(options.train_data, "train_data")
    eval_layout = None
    if options.eval_data is not None:
        eval_layout = inspect_records(options.eval_data, "eval_data")
        _require_same_layout(layout, eval_layout)
    _check_run_file(options)
    layout = _with_prediction_count(layout, options)
    if eval_layout is not None:
        eval_layout = _with_prediction_count(eval_layout, options)

    config, init_model = _resolve_architecture(options)
    if layout.sequence_length > config.max_sequence_length:
        raise ValueError(
            f"The records hold sequences of {layout.sequence_length} tokens but the model's "
            f"max_sequence_length is {config.max_sequence_length}."
        )
    masking = _dynamic_masking(options)
    if masking is not None and masking.word_start.shape[0] != config.vocabulary_size:
        raise ValueError(
            f"The vocabulary {options.vocabulary!r} has {masking.word_start.shape[0]} pieces "
            f"but the model's vocabulary_size is {config.vocabulary_size}."
        )
    _check_first_batch(options, options.train_data, layout, config, "train_data")
    if eval_layout is not None:
        _check_first_batch(options, options.eval_data, eval_layout, config, "eval_data")

    _write_run_file(options)
    # TF's global seed is seed + 1: with a global seed of 0, `tf.random` compares its seed pair
    # with (0, 0), which fails in graph mode when the op seed is a tensor (as each pass's is).
    keras.utils.set_random_seed(options.seed + 1)
    if options.deterministic:
        tf.config.experimental.enable_op_determinism()
    strategy = build_strategy(
        options.strategy, **({"tpu_address": options.tpu_address} if options.tpu_address else {})
    )
    policy = choose_precision_policy(strategy, options.precision)
    validation, eval_counts = None, {}
    if options.eval_data is not None:
        validation, eval_counts = _eval_dataset(options, eval_layout, masking, strategy)
    with strategy.scope():
        model = AlbertPretrainer(AlbertBackbone.from_albert_config(config, dtype=policy))
        schedule = WarmupPolynomialDecay(
            options.learning_rate,
            warmup_steps=options.resolved_warmup_steps,
            total_steps=options.total_steps,
            end_learning_rate=options.end_learning_rate,
        )
        optimizer = Lamb(schedule, weight_decay_rate=options.weight_decay_rate)
        if policy == "mixed_float16":
            optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
        compile_pretrainer(
            model,
            optimizer,
            steps_per_execution=options.steps_per_execution,
            jit_compile=options.jit_compile,
            sentence_order_loss_weight=options.sentence_order_loss_weight,
        )
        optimizer.build(model.trainable_variables)
        checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer)
    manager = tf.train.CheckpointManager(
        checkpoint,
        os.path.join(options.output_dir, "checkpoints"),
        max_to_keep=options.keep_checkpoints,
    )
    resumed_from = None
    if manager.latest_checkpoint:
        checkpoint.restore(manager.latest_checkpoint).assert_existing_objects_matched()
        resumed_from = int(optimizer.iterations.numpy())
        print(f"keras_albert: resuming from {manager.latest_checkpoint} (step {resumed_from})")
    elif init_model is not None:
        _copy_weights(init_model, model, options.init_checkpoint)
    del init_model

    start_step = int(optimizer.iterations.numpy())
    fit_seconds = 0.0
    last_logs: dict = {}
    last_epoch_seconds = None
    if start_step < options.total_steps:
        fit_started = time.perf_counter()
        last_logs, last_epoch_seconds = _fit(
            model, manager, options, layout, masking, start_step, validation
        )
        fit_seconds = time.perf_counter() - fit_started
    final_step = int(optimizer.iterations.numpy())
    if manager.latest_checkpoint is None or manager.latest_checkpoint.split("-")[-1] != str(
        final_step
    ):
        manager.save(checkpoint_number=final_step)

    eval_results = None
    if validation is not None:
        eval_results = _renamed(model.evaluate(validation, return_dict=True, verbose=0))
    model_path = os.path.join(options.output_dir, "pretrainer.keras")
    _atomic_save(model, model_path)

    trained_steps = final_step - start_step
    summary = {
        "step": final_step,
        "total_steps": options.total_steps,
        "resumed_from_step": resumed_from,
        "examples_seen": final_step * options.batch_size,
        "trained_steps_this_run": trained_steps,
        "train_steps_per_second": trained_steps / fit_seconds if fit_seconds else None,
        # The last Keras epoch, evaluation included: compiling is not in it.
        "last_epoch_seconds": last_epoch_seconds,
        "wall_seconds_this_run": time.perf_counter() - started,
        "final_train_logs": last_logs,
        "eval": eval_results,
        **eval_counts,
        "num_parameters": int(model.count_params()),
        "strategy": type(strategy).__name__,
        "num_replicas": strategy.num_replicas_in_sync,
        "precision": policy,
        "sequence_length": layout.sequence_length,
        "max_predictions_per_seq": layout.max_predictions_per_seq,
        "config": config.to_dict(),
        "checkpoint": manager.latest_checkpoint,
        "model": model_path,
    }
    text = json.dumps(summary, indent=2, sort_keys=True)
    _atomic_write(os.path.join(options.output_dir, "summary.json"), text + "\n")
    print(f"keras_albert pretraining summary:\n{text}")
    return summary


def compile_pretrainer(
    model: AlbertPretrainer,
    optimizer: keras.optimizers.Optimizer,
    steps_per_execution: int = 1,
    jit_compile: bool | str = "auto",
    sentence_order_loss_weight: float = 1.0,
) -> None:
    """Compiles `model` with the MLM + SOP losses and the pretraining metrics.

    The total loss is `masked_lm_loss + sentence_order_loss_weight * sentence_order_loss`
    (`MaskedLMLoss`, mean SOP cross-entropy; the original's weight is 1). Logged: `loss`,
    Keras's `mlm_logits_loss` / `sop_logits_loss`, and the metrics the driver reports as
    `mlm_loss` / `sop_loss` / `mlm_accuracy` / `sop_accuracy`: `mlm_logits_mlm_mean_loss`
    and `sop_logits_sop_mean_loss` (the task losses as exact weighted means over everything
    seen, as the original's evaluation: batches of any size count by their examples, padded
    prediction slots not at all), `mlm_logits_mlm_accuracy` and `sop_logits_sop_accuracy`.
    Labels and sample weights are dicts keyed by `mlm_logits` and `sop_logits`.
    """
    model.compile(
        optimizer=optimizer,
        loss={"mlm_logits": MaskedLMLoss(), "sop_logits": sentence_order_loss()},
        loss_weights={"mlm_logits": 1.0, "sop_logits": sentence_order_loss_weight},
        weighted_metrics={
            task: [
                keras.metrics.SparseCategoricalCrossentropy(
                    from_logits=True, name=f"{name}_mean_loss"
                ),
                keras.metrics.SparseCategoricalAccuracy(name=f"{name}_accuracy"),
            ]
            for task, name in (("mlm_logits", "mlm"), ("sop_logits", "sop"))
        },
        steps_per_execution=steps_per_execution,
        jit_compile=jit_compile,
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
) -> tf.data.Dataset:
    """The training stream from global batch `start_step` on, keyed for `compile_pretrainer`.

    Deterministic for a given `options.seed`: batch `k` is the same whatever `start_step`
    the stream was made with, and however often the stream has been iterated before (Keras
    starts an iterator of its own to build the model). So each pass over the data is a new
    pipeline seeded with `(seed, pass)`: a `shuffle(reshuffle_each_iteration=True)` repeated
    in place would draw each pass's order from a generator that every iterator of the dataset
    advances, prefetching ones included. Batches do not straddle passes (each pass drops its
    remainder). Skipping reads (and, with dynamic masking, masks) the skipped records, so a
    resume at step s costs a pass over s batches of input, not of training.
    """

    def one_pass(index):
        return make_pretraining_dataset(
            list(layout.files),
            options.batch_size,
            layout.sequence_length,
            layout.max_predictions_per_seq,
            shuffle=True,
            shuffle_buffer_size=options.shuffle_buffer_size,
            seed=_pass_seed(options.seed, index),
            dynamic_masking=masking,
        )

    passes = tf.data.Dataset.range(_MAX_PASSES).flat_map(one_pass)
    return passes.skip(start_step).map(to_model_labels).prefetch(tf.data.AUTOTUNE)


def _pass_seed(seed: int, index):
    # (seed, pass) → one int64 seed; a large odd multiplier keeps seeds of nearby runs apart.
    return tf.cast(seed, tf.int64) * 1_000_003 + index


def _eval_dataset(options, eval_layout, masking, strategy) -> tuple[tf.data.Dataset, dict]:
    """The held-out batches and how many records they hold (and leave out).

    Every record is evaluated: the last batch is a partial one, except on a TPU, whose shapes
    must be static — there the remainder is left out and counted. The dataset's cardinality is
    set: Keras then stops after the last batch instead of calling the test step once more to
    find the end (with static batch shapes and without XLA, that extra call adds a phantom
    batch to Keras's mean `loss`: measured with Keras 3.15 and TensorFlow 2.21).
    """
    files = list(eval_layout.files)
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
    dataset = make_pretraining_dataset(
        files,
        options.batch_size,
        eval_layout.sequence_length,
        eval_layout.max_predictions_per_seq,
        shuffle=False,
        seed=options.seed,
        dynamic_masking=masking,
        drop_remainder=static,
    ).map(to_model_labels)
    dataset = dataset.take(num_batches).apply(tf.data.experimental.assert_cardinality(num_batches))
    evaluated = min(num_records, num_batches * options.batch_size)
    counts = {"eval_records": num_records, "eval_records_evaluated": evaluated}
    return dataset, counts


def _fit(model, manager, options, layout, masking, start_step, validation) -> dict:
    """`model.fit` from `start_step` to `total_steps`: one Keras epoch per `log_every_steps`
    steps, and a shorter last call when `total_steps` is not a multiple of it."""
    eval_every = options.eval_every_steps or options.checkpoint_every_steps
    logger = _StepLogs(options.total_steps)
    callbacks = [
        logger,
        _Checkpoints(manager, options.checkpoint_every_steps, options.total_steps),
        _StepTensorBoard(os.path.join(options.output_dir, "logs")),
        keras.callbacks.CSVLogger(os.path.join(options.output_dir, "history.csv"), append=True),
        keras.callbacks.TerminateOnNaN(),
    ]
    step = start_step
    while step < options.total_steps:
        epoch_steps = options.log_every_steps
        if options.total_steps - step < epoch_steps:
            epoch_steps = options.total_steps - step
        num_epochs = (options.total_steps - step) // epoch_steps
        initial_epoch = step // options.log_every_steps
        model.fit(
            make_datasets(options, layout, masking, start_step=step),
            steps_per_epoch=epoch_steps,
            initial_epoch=initial_epoch,
            epochs=initial_epoch + num_epochs,
            validation_data=validation,
            validation_freq=max(eval_every // options.log_every_steps, 1),
            callbacks=callbacks,
            shuffle=False,  # the dataset shuffles, seeded
            verbose=options.verbose,
        )
        step = int(model.optimizer.iterations.numpy())
        if model.stop_training:  # TerminateOnNaN
            raise FloatingPointError(
                f"The loss became NaN or infinite by step {step}; the last checkpoint in "
                f"{manager.directory} precedes it."
            )
    return logger.last_logs, logger.last_epoch_seconds


class _StepLogs(keras.callbacks.Callback):
    """Adds `step` and `learning_rate` to the epoch logs and gives the losses our names; first
    in the callback list, so the callbacks after it see the same logs."""

    def __init__(self, total_steps: int):
        super().__init__()
        self.total_steps = total_steps
        self.last_logs: dict = {}
        self.last_epoch_seconds = None
        self._epoch_started = None

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch_started = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        self.last_epoch_seconds = time.perf_counter() - self._epoch_started
        if logs is None:
            return
        renamed = _with_our_names(logs)  # in place: the later callbacks get the same dict
        logs.clear()
        logs.update(renamed)
        optimizer = self.model.optimizer
        # The rate the last update used: the schedule at iterations - 1.
        step = int(optimizer.iterations.numpy())
        inner = getattr(optimizer, "inner_optimizer", optimizer)
        logs["learning_rate"] = _schedule_value(inner, step - 1)
        logs["step"] = step
        self.last_logs = dict(logs)


def _schedule_value(optimizer, step: int) -> float:
    rate = optimizer._learning_rate
    if isinstance(rate, keras.optimizers.schedules.LearningRateSchedule):
        return float(rate(max(step, 0)))
    return float(keras.ops.convert_to_numpy(rate))


class _Checkpoints(keras.callbacks.Callback):
    """Saves model + optimizer every `every` steps (and at the last step)."""

    def __init__(self, manager: tf.train.CheckpointManager, every: int, total_steps: int):
        super().__init__()
        self.manager = manager
        self.every = every
        self.total_steps = total_steps

    def on_epoch_end(self, epoch, logs=None):
        step = int(self.model.optimizer.iterations.numpy())
        if step % self.every == 0 or step >= self.total_steps:
            self.manager.save(checkpoint_number=step)


class _StepTensorBoard(keras.callbacks.TensorBoard):
    """TensorBoard whose epoch summaries use the optimizer step as x-axis, so that the curves
    of a resumed run continue where they stopped."""

    def __init__(self, log_dir: str):
        super().__init__(log_dir=log_dir, update_freq="epoch", write_graph=False)

    def on_epoch_end(self, epoch, logs=None):
        logs = {k: v for k, v in (logs or {}).items() if k not in ("step", "learning_rate")}
        super().on_epoch_end(int(self.model.optimizer.iterations.numpy()), logs)


def inspect_records(file_pattern: str, name: str = "file_pattern") -> RecordLayout:
    """Finds the files of `file_pattern` (comma-separated globs) and checks their first records.

    Every non-empty file's first record must hold the original features with one sequence
    length and one prediction count across files. Empty files are counted and reported.

    Raises:
        ValueError: no file matches, a record misses features, or lengths disagree.
    """
    patterns = [p for p in file_pattern.split(",") if p]
    files = sorted({path for pattern in patterns for path in tf.io.gfile.glob(pattern)})
    if not files:
        raise ValueError(f"`{name}` matches no file. Received: {name}={file_pattern!r}")
    sequence_length = max_predictions = None
    nonempty, num_empty = [], 0
    for path in files:
        first = list(tf.data.TFRecordDataset(path).take(1).as_numpy_iterator())
        if not first:
            num_empty += 1
            continue
        try:
            example = tf.train.Example.FromString(first[0])
        except Exception as error:  # protobuf's DecodeError
            raise ValueError(
                f"{path}: the first record is not a tf.train.Example ({error})."
            ) from None
        features = example.features.feature
        missing = [f for f in (*_SEQUENCE_FEATURES, *_PREDICTION_FEATURES) if f not in features]
        if "next_sentence_labels" not in features:
            missing.append("next_sentence_labels")
        if missing:
            raise ValueError(
                f"{path}: the records lack the features {missing}; expected the original ALBERT "
                f"pretraining layout with {list(_SEQUENCE_FEATURES + _PREDICTION_FEATURES)} and "
                f"'next_sentence_labels'. Found: {sorted(features)}"
            )
        lengths = {f: len(_values(features[f])) for f in _SEQUENCE_FEATURES + _PREDICTION_FEATURES}
        file_sequence = {lengths[f] for f in _SEQUENCE_FEATURES}
        file_predictions = {lengths[f] for f in _PREDICTION_FEATURES}
        if len(file_sequence) != 1 or len(file_predictions) != 1:
            raise ValueError(f"{path}: the features of one record disagree in length: {lengths}")
        (file_sequence,), (file_predictions,) = file_sequence, file_predictions
        if sequence_length is None:
            sequence_length, max_predictions = file_sequence, file_predictions
        elif (file_sequence, file_predictions) != (sequence_length, max_predictions):
            raise ValueError(
                f"{path} holds sequences of {file_sequence} tokens with {file_predictions} "
                f"predictions, but {nonempty[0]} holds {sequence_length} and "
                f"{max_predictions}. All files of `{name}` must have one layout."
            )
        nonempty.append(path)
    if not nonempty:
        raise ValueError(f"Every file of `{name}` is empty. Received: {name}={file_pattern!r}")
    if num_empty:
        print(f"keras_albert: {num_empty} empty file(s) of `{name}` skipped.")
    return RecordLayout(tuple(nonempty), sequence_length, max_predictions, num_empty)


def _values(feature: tf.train.Feature) -> list:
    kind = feature.WhichOneof("kind")
    return list(getattr(feature, kind).value) if kind else []


def _with_prediction_count(layout: RecordLayout, options: PretrainingOptions) -> RecordLayout:
    """The layout the input pipeline produces: dynamic masking may choose its own count."""
    wanted = options.max_predictions_per_seq
    if not options.dynamic_masking:
        if wanted is not None and wanted != layout.max_predictions_per_seq:
            raise ValueError(
                f"The records hold {layout.max_predictions_per_seq} predictions per sequence; "
                f"without dynamic masking max_predictions_per_seq must be None or equal to it. "
                f"Received: max_predictions_per_seq={wanted}"
            )
        return layout
    count = layout.max_predictions_per_seq if wanted is None else wanted
    if count < 1:
        raise ValueError(
            "Dynamic masking needs `max_predictions_per_seq` >= 1: the records hold no "
            f"predictions to take the count from. Received: max_predictions_per_seq={wanted}"
        )
    return dataclasses.replace(layout, max_predictions_per_seq=count)


def _require_same_layout(train: RecordLayout, eval_: RecordLayout) -> None:
    if (train.sequence_length, train.max_predictions_per_seq) != (
        eval_.sequence_length,
        eval_.max_predictions_per_seq,
    ):
        raise ValueError(
            f"eval_data holds sequences of {eval_.sequence_length} tokens with "
            f"{eval_.max_predictions_per_seq} predictions; train_data holds "
            f"{train.sequence_length} and {train.max_predictions_per_seq}."
        )


def _check_first_batch(
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
        layout.max_predictions_per_seq,
        shuffle=False,
        seed=options.seed,
        dynamic_masking=_dynamic_masking(options),
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


def _resolve_architecture(options: PretrainingOptions):
    """The config, and the initial model when `init_checkpoint` is given (loaded outside the
    strategy scope; its weights are copied into the model built under it)."""
    config = None
    if options.preset is not None:
        config = get_preset(options.preset)
    elif options.config is not None:
        if not os.path.isfile(options.config):
            raise ValueError(f"`config` is not a file. Received: config={options.config!r}")
        config = AlbertConfig.from_json(options.config)
    init_model = None
    if options.init_checkpoint is not None:
        init_model = _load_initial_model(options.init_checkpoint, config)
        init_config = init_model.albert_config if hasattr(init_model, "albert_config") else None
        if init_config is None:
            init_config = init_model.backbone.albert_config
        if config is None:
            config = init_config
        elif _architecture(config) != _architecture(init_config):
            raise ValueError(
                f"init_checkpoint {options.init_checkpoint!r} has the architecture "
                f"{_architecture(init_config)}, which differs from the requested "
                f"{_architecture(config)}."
            )
    return config, init_model


def _architecture(config: AlbertConfig) -> dict:
    # Dropout rates change training, not the weights' shapes or meaning.
    values = config.to_dict()
    values.pop("dropout")
    values.pop("attention_dropout")
    return values


def _load_initial_model(path: str, config: AlbertConfig | None):
    if path.endswith(".weights.h5"):
        if config is None:
            raise ValueError(
                f"init_checkpoint {path!r} holds weights only: give `preset` or `config`."
            )
        model = AlbertPretrainer(AlbertBackbone.from_albert_config(config))
        model.load_weights(path)
        return model
    from keras_albert.convert import load_checkpoint  # the converters are only needed here

    model = load_checkpoint(path)
    if not isinstance(model, (AlbertPretrainer, AlbertBackbone)):
        raise ValueError(
            f"init_checkpoint {path!r} holds a {type(model).__name__}; expected an "
            "AlbertPretrainer or an AlbertBackbone."
        )
    return model


def _copy_weights(source, target: AlbertPretrainer, path: str) -> None:
    if isinstance(source, AlbertBackbone):
        target.backbone.set_weights(source.get_weights())
        print(f"keras_albert: initialized the backbone from {path}; the heads are fresh.")
    else:
        target.set_weights(source.get_weights())
        print(f"keras_albert: initialized the model from {path}.")


def _dynamic_masking(options: PretrainingOptions) -> DynamicMasking | None:
    if not options.dynamic_masking:
        return None
    from keras_albert.text.tokenizer import AlbertTokenizer

    tokenizer = AlbertTokenizer(options.vocabulary)
    return DynamicMasking.from_tokenizer(tokenizer, options.masked_lm_prob, options.max_ngram)


def _prepare_output_dir(path: str) -> None:
    try:
        os.makedirs(path, exist_ok=True)
        probe = os.path.join(path, f".write-probe-{uuid.uuid4().hex}")
        with open(probe, "w", encoding="utf-8") as f:
            f.write("ok")
        os.remove(probe)
    except OSError as error:
        raise ValueError(
            f"`output_dir` is not a writable directory: {path!r} ({error.strerror or error})."
        ) from None


def _check_run_file(options: PretrainingOptions) -> None:
    """A run with checkpoints must be resumed with the run-defining options it started with."""
    path = os.path.join(options.output_dir, "run.json")
    current = {name: getattr(options, name) for name in _RUN_DEFINING_OPTIONS}
    has_checkpoint = tf.train.latest_checkpoint(os.path.join(options.output_dir, "checkpoints"))
    if os.path.exists(path) and has_checkpoint:
        with open(path, encoding="utf-8") as f:
            previous = json.load(f)
        changed = {k: (previous.get(k), v) for k, v in current.items() if previous.get(k) != v}
        if changed:
            details = ", ".join(f"{k}: {old!r} -> {new!r}" for k, (old, new) in changed.items())
            raise ValueError(
                f"{options.output_dir!r} holds a run with other options ({details}); resuming "
                "it with them would change the data stream or the schedule. Use another "
                "`output_dir` or the same options."
            )


def _write_run_file(options: PretrainingOptions) -> None:
    """Records the run-defining options, once every input check has passed."""
    current = {name: getattr(options, name) for name in _RUN_DEFINING_OPTIONS}
    path = os.path.join(options.output_dir, "run.json")
    _atomic_write(path, json.dumps(current, indent=2, sort_keys=True) + "\n")


def _atomic_write(path: str, text: str) -> None:
    temporary = f"{path}.tmp-{uuid.uuid4().hex}"
    with open(temporary, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(temporary, path)


def _atomic_save(model: keras.Model, path: str) -> None:
    temporary = f"{path[: -len('.keras')]}-tmp-{uuid.uuid4().hex}.keras"
    model.save(temporary)
    os.replace(temporary, path)


def _with_our_names(logs: dict) -> dict:
    """Keras's logs (`val_` ones too) under our names, without Keras's per-output losses."""
    renamed = {}
    for key, value in logs.items():
        prefix = "val_" if key.startswith("val_") else ""
        keras_name = key.removeprefix(prefix)
        if keras_name not in _DROPPED_LOGS:
            renamed[prefix + _LOG_NAMES.get(keras_name, keras_name)] = value
    return renamed


def _renamed(logs: dict) -> dict:
    return {k: float(np.asarray(v)) for k, v in _with_our_names(logs).items()}


def _require_int(name: str, value, low: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"`{name}` must be an integer >= {low}. Received: {name}={value!r}")
