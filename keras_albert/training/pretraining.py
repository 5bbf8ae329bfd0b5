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

import os
import time

import keras
import tensorflow as tf

from keras_albert.models import AlbertBackbone, AlbertPretrainer
from keras_albert.text.pretraining.records import RecordLayout, inspect_records
from keras_albert.training import run_directory
from keras_albert.training.callbacks import StepCheckpoints, StepLogs, StepTensorBoard
from keras_albert.training.initial_weights import copy_initial_weights, initial_pretrainer
from keras_albert.training.lamb import Lamb
from keras_albert.training.logs import as_floats
from keras_albert.training.losses import MaskedLMLoss, sentence_order_loss
from keras_albert.training.options import PretrainingOptions
from keras_albert.training.pretraining_streams import (
    check_first_batch,
    dynamic_masking_for,
    eval_dataset,
    layout_for_options,
    make_datasets,
    require_same_layout,
)
from keras_albert.training.schedule import WarmupPolynomialDecay
from keras_albert.training.strategy import build_strategy, choose_precision_policy

__all__ = [
    "PretrainingOptions",
    "RecordLayout",
    "compile_pretrainer",
    "inspect_records",
    "make_datasets",
    "pretrain",
]

# Options that fix the data stream and the schedule: a resumed run must not change them.
RUN_DEFINING_OPTIONS = (
    "train_data",
    "train_steps",
    "batch_size",
    "learning_rate",
    "warmup_steps",
    "end_learning_rate",
    "dynamic_masking",
    "sentencepiece_model",
    "masked_lm_prob",
    "max_ngram",
    "max_predictions_per_sequence",
    "seed",
    "shuffle_buffer_size",
)


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
    # Setup: the output directory, the records, the run file, the architecture.
    run_directory.check_output_dir(options.output_dir)
    layout = inspect_records(options.train_data, "train_data")
    eval_layout = None
    if options.eval_data is not None:
        eval_layout = inspect_records(options.eval_data, "eval_data")
        require_same_layout(layout, eval_layout)
    run_options = {name: getattr(options, name) for name in RUN_DEFINING_OPTIONS}
    checkpoints_dir = os.path.join(options.output_dir, "checkpoints")
    has_checkpoint = tf.train.latest_checkpoint(checkpoints_dir) is not None
    run_directory.check_run_file(options.output_dir, run_options, has_checkpoint)
    layout = layout_for_options(layout, options)
    if eval_layout is not None:
        eval_layout = layout_for_options(eval_layout, options)

    config, init_model = initial_pretrainer(options)
    if layout.sequence_length > config.max_sequence_length:
        raise ValueError(
            f"The records hold sequences of {layout.sequence_length} tokens but the model's "
            f"max_sequence_length is {config.max_sequence_length}."
        )
    masking = dynamic_masking_for(options)
    if masking is not None and masking.word_start.shape[0] != config.vocabulary_size:
        raise ValueError(
            f"The SentencePiece model {options.sentencepiece_model!r} has "
            f"{masking.word_start.shape[0]} pieces but the model's vocabulary_size is "
            f"{config.vocabulary_size}."
        )
    check_first_batch(options, options.train_data, layout, config, "train_data")
    if eval_layout is not None:
        check_first_batch(options, options.eval_data, eval_layout, config, "eval_data")
    # Made only now: a failed input check leaves no empty run directory behind.
    run_directory.prepare_output_dir(options.output_dir)
    run_directory.write_run_file(options.output_dir, run_options)

    # TF's global seed is seed + 1: with a global seed of 0, `tf.random` compares its seed pair
    # with (0, 0), which fails in graph mode when the op seed is a tensor (as each pass's is).
    keras.utils.set_random_seed(options.seed + 1)
    if options.deterministic:
        tf.config.experimental.enable_op_determinism()
    strategy = build_strategy(
        options.strategy, **({"tpu_address": options.tpu_address} if options.tpu_address else {})
    )
    policy = choose_precision_policy(strategy, options.precision)

    # Data and model.
    validation, eval_counts = None, {}
    if eval_layout is not None:
        validation, eval_counts = eval_dataset(options, eval_layout, masking, strategy)
    with strategy.scope():
        model = AlbertPretrainer(AlbertBackbone.from_albert_config(config, dtype=policy))
        schedule = WarmupPolynomialDecay(
            options.learning_rate,
            warmup_steps=options.resolved_warmup_steps,
            total_steps=options.train_steps,
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
        checkpoint, checkpoints_dir, max_to_keep=options.keep_checkpoints
    )
    resumed_from = None
    if manager.latest_checkpoint:
        checkpoint.restore(manager.latest_checkpoint).assert_existing_objects_matched()
        resumed_from = int(optimizer.iterations.numpy())
        print(f"keras_albert: resuming from {manager.latest_checkpoint} (step {resumed_from})")
    elif init_model is not None:
        copy_initial_weights(init_model, model, options.init_checkpoint)
    del init_model

    # The loop.
    start_step = int(optimizer.iterations.numpy())
    fit_seconds = 0.0
    last_logs: dict = {}
    last_epoch_seconds = None
    if start_step < options.train_steps:
        fit_started = time.perf_counter()
        try:
            last_logs, last_epoch_seconds = _fit(
                model, manager, options, layout, masking, start_step, validation
            )
        except KeyboardInterrupt:  # one line for the command, not TensorFlow's traceback
            raise KeyboardInterrupt(_where_to_resume(manager)) from None
        fit_seconds = time.perf_counter() - fit_started
    final_step = int(optimizer.iterations.numpy())
    if manager.latest_checkpoint is None or manager.latest_checkpoint.split("-")[-1] != str(
        final_step
    ):
        manager.save(checkpoint_number=final_step)

    # Save: the final evaluation, the model, the summary.
    eval_results = None
    if validation is not None:
        eval_results = as_floats(model.evaluate(validation, return_dict=True, verbose=0))
    model_path = os.path.join(options.output_dir, "pretrainer.keras")
    run_directory.atomic_save_model(model, model_path)
    trained_steps = final_step - start_step
    summary = {
        "step": final_step,
        "train_steps": options.train_steps,
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
        "max_predictions_per_sequence": layout.max_predictions_per_sequence,
        "config": config.to_dict(),
        "checkpoint": manager.latest_checkpoint,
        "model": model_path,
    }
    text = run_directory.write_summary(options.output_dir, summary)
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
    `mlm_loss` / `sop_loss` / `mlm_accuracy` / `sop_accuracy` (`keras_albert.training.logs`):
    `mlm_logits_mlm_mean_loss` and `sop_logits_sop_mean_loss` (the task losses as exact
    weighted means over everything seen, as the original's evaluation: batches of any size
    count by their examples, padded prediction slots not at all), `mlm_logits_mlm_accuracy`
    and `sop_logits_sop_accuracy`. Labels and sample weights are dicts keyed by `mlm_logits`
    and `sop_logits`.
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


def _where_to_resume(manager: tf.train.CheckpointManager) -> str:
    if manager.latest_checkpoint is None:
        return f"no checkpoint in {manager.directory} yet — rerun the same command to start over"
    return f"last checkpoint {manager.latest_checkpoint} — rerun the same command to resume"


def _fit(model, manager, options, layout, masking, start_step, validation) -> tuple:
    """`model.fit` from `start_step` to `train_steps`: one Keras epoch per `log_every_steps`
    steps, and a shorter last call when `train_steps` is not a multiple of it."""
    eval_every = options.eval_every_steps or options.checkpoint_every_steps
    logger = StepLogs()
    callbacks = [
        logger,
        StepCheckpoints(manager, options.checkpoint_every_steps, options.train_steps),
        StepTensorBoard(os.path.join(options.output_dir, "logs")),
        keras.callbacks.CSVLogger(os.path.join(options.output_dir, "history.csv"), append=True),
        keras.callbacks.TerminateOnNaN(),
    ]
    step = start_step
    while step < options.train_steps:
        epoch_steps = min(options.log_every_steps, options.train_steps - step)
        num_epochs = (options.train_steps - step) // epoch_steps
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
