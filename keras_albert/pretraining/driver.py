"""The pretraining driver: MLM + SOP through `training.loop.TrainingLoop`, under any strategy,
resumable.

`pretrain(PretrainingOptions(...))` builds the strategy, checks its inputs, builds the model,
`Lamb` with `WarmupPolynomialDecay` and the datasets under `strategy.scope()`, resumes from the
last checkpoint in `output_dir` if there is one (else initializes from `init_checkpoint` if
given), trains with the loop (the same path under every strategy; one stretch of
`log_every_steps` steps at a time, `pretraining.stretches`) and writes a summary. The MLM + SOP
objective is `pretraining.objective`, the input streams `pretraining.streams`.

What `output_dir` holds:

    run.json               the options that fix the run (a rerun must match them)
    run.lock               while a run holds the directory (`RunDirectory.lock`)
    checkpoints/ckpt-N     the model, optimizer and dropout state at step N (`training.checkpoints`)
    logs/train, logs/validation   TensorBoard, x-axis = optimizer step
    history.csv            one row per `log_every_steps` steps (one per step after a resume)
    pretrainer.keras       the final model
    summary.json           the final summary (also printed)

Resume: the optimizer's `iterations` variable is the step, and the checkpoint holds it with the
weights, the optimizer's slots and the dropout layers' seed states, so the schedule (a function of
`iterations`) and the dropout masks resume where they stopped. The data position is a function of
the step: the input stream is deterministic for a given `seed` (each pass over the files is its own
pipeline seeded with (seed, pass): file and record shuffles, in-graph masking), so a restart skips
the `step` global batches already consumed (`make_datasets`). A checkpoint is written to a fresh
file, then registered atomically (`tf.train.CheckpointManager`), so a process killed at any moment
(SIGKILL) leaves the previous complete checkpoint in place; the same command resumes from it.
SIGTERM or Ctrl-C (`training.interruption`): the current compiled call (`steps_per_execution` steps)
finishes, a checkpoint of that step is written and the run exits 143 (130) with one line; the rerun
resumes there, losing no step (its first log row then averages the steps after the signal only).

Strategies: every one `build_strategy` makes, through the same loop (Keras 3.15's `fit` fails
under `MultiWorkerMirroredStrategy`, keras-team/keras#20585; the loop does not use it). Each
replica trains on its share of the global batch one device would train on, so results do not
depend on the topology. Under `MultiWorkerMirroredStrategy` (`TF_CONFIG`) every worker saves
the checkpoints, as TensorFlow requires, the chief into `output_dir/checkpoints` and the others
into temporary directories removed at the end; only the chief writes `run.json`,
`history.csv`, TensorBoard logs, `pretrainer.keras` and `summary.json`. `output_dir` must be a
directory every worker sees (a shared file system or `gs://`): they all resume from the
chief's checkpoints. A worker that dies makes the others fail (TensorFlow's coordination
service reports the missing peer); rerunning every worker resumes from the last checkpoint.
"""

from __future__ import annotations

import dataclasses
import os
import time

import keras
import tensorflow as tf

from keras_albert.config import AlbertConfig
from keras_albert.models import AlbertBackbone, AlbertPretrainer
from keras_albert.pretraining.data.dataset import DynamicMasking
from keras_albert.pretraining.data.records import RecordLayout, inspect_records
from keras_albert.pretraining.initial_weights import copy_initial_weights, initial_pretrainer
from keras_albert.pretraining.objective import compile_pretrainer, pretraining_replica_fn
from keras_albert.pretraining.options import PretrainingOptions
from keras_albert.pretraining.streams import (
    check_first_batch,
    dynamic_masking_for,
    eval_dataset,
    layout_for_options,
    make_datasets,
    require_same_layout,
)
from keras_albert.pretraining.stretches import evaluate_pretrainer, train_in_stretches
from keras_albert.text.normalization import changed_normalization
from keras_albert.training.checkpoints import training_checkpoint
from keras_albert.training.clipping import adamw
from keras_albert.training.lamb import Lamb
from keras_albert.training.loop import TrainingLoop
from keras_albert.training.loss_scale import checkpointed_optimizer, optimizer_for_precision
from keras_albert.training.progress import format_duration
from keras_albert.training.run import started_run
from keras_albert.training.run_directory import RunDirectory
from keras_albert.training.schedule import WarmupPolynomialDecay
from keras_albert.training.strategy import (
    choose_precision_policy,
    num_workers,
    resolve_jit_compile,
    worker_output,
)

__all__ = [
    "PretrainingOptions",
    "RecordLayout",
    "inspect_records",
    "make_datasets",
    "pretrain",
]

# The options a resumed run may change (`RunDirectory.record`, one policy for both
# drivers): where output goes, how it is logged and evaluated, on what devices and in what
# precision; the architecture and the initial weights are checked otherwise (`run.json`'s
# config; a resumed run restores its own weights). Every other option fixes the run, a new
# one too unless it is added here.
RUN_FREE_OPTIONS = (
    "output_dir",
    "preset",
    "config",
    "init_checkpoint",
    "eval_data",
    "eval_steps",
    "eval_every_steps",
    "strategy",
    "tpu_address",
    "precision",
    "lowercase",
    "strip_accents",
    "sequence_length",
    "steps_per_execution",
    "jit_compile",
    "remat",
    "log_every_steps",
    "checkpoint_every_steps",
    "keep_checkpoints",
    "deterministic",
    "verbose",
)


def pretrain(options: PretrainingOptions) -> dict:
    """Runs (or resumes) pretraining; returns the summary also written to `summary.json`.

    Every input is checked before training starts, each failure a `ValueError` naming what was
    received and what was expected: the data globs (no match, records with missing features or
    lengths that differ between files), the vocabulary (token ids in the first batch not below
    `vocabulary_size`), the sequence length (longer than `max_sequence_length`), the output
    directory (not writable), a resumed run whose run-defining options changed.
    """
    started = time.perf_counter()
    if options.deterministic:
        tf.config.experimental.enable_op_determinism()
    with started_run(options.output_dir, options.strategy, options.tpu_address) as (
        strategy,
        chief,
        directory,
    ):
        return _pretrain(options, strategy, chief, directory, started)


@dataclasses.dataclass(frozen=True)
class _CheckedRun:
    """What the checks settle before anything is built or trained."""

    layout: RecordLayout
    eval_layout: RecordLayout | None
    config: AlbertConfig
    masking: DynamicMasking | None
    policy: str


@dataclasses.dataclass(frozen=True)
class _TrainingOutcome:
    """Where this run's training started and ended, how long it took, its last logs."""

    start_step: int
    final_step: int
    train_seconds: float
    last_logs: dict
    seconds_per_step: float | None
    steps_per_second: float | None
    eval_results: dict | None


def _pretrain(
    options: PretrainingOptions, strategy, chief: bool, directory: RunDirectory, started: float
) -> dict:
    """`pretrain` inside its run lock (`directory`), phase by phase; returns the summary (a
    short one on a worker)."""
    run, init_model = _check_run(options, strategy, chief, directory)
    # TF's global seed is seed + 1 (the initial weights of every run so far).
    keras.utils.set_random_seed(options.seed + 1)
    eval_fn, eval_counts = None, {}
    if run.eval_layout is not None:
        eval_fn, eval_counts = eval_dataset(options, run.eval_layout, run.masking, strategy)
    model, optimizer, checkpoint = _build_pretrainer(options, strategy, run)
    # Every worker saves (TensorFlow's collective save); only the chief's copy is kept.
    with worker_output(strategy, directory.checkpoints_dir, directory.where_to_resume) as save_dir:
        manager = tf.train.CheckpointManager(
            checkpoint, save_dir, max_to_keep=options.keep_checkpoints
        )
        resumed_from = _restore_or_initialize(
            options, directory, checkpoint, model, optimizer, init_model
        )
        del init_model
        loop = _training_loop(options, strategy, model, optimizer)
        outcome = _train(options, run, directory, loop, manager, eval_fn, chief)
    if not chief:
        return {"step": outcome.final_step, "chief": False, "eval": outcome.eval_results}
    summary = _write_summary(
        options, run, directory, loop, outcome, resumed_from, eval_counts, started
    )
    _print_summary(summary, options.output_dir)
    return summary


def _check_run(
    options: PretrainingOptions, strategy, chief: bool, directory: RunDirectory
) -> tuple[_CheckedRun, keras.Model | None]:
    """Checks every input, writes `run.json` (chief) and returns the checked run and the
    model to initialize from (`None` without `init_checkpoint`)."""
    layout = inspect_records(options.train_data, "train_data")
    eval_layout = None
    if options.eval_data is not None:
        eval_layout = inspect_records(options.eval_data, "eval_data")
        require_same_layout(layout, eval_layout)
    run_options = _run_options(options, strategy)
    has_checkpoint = directory.has_checkpoint()
    directory.check_record(run_options, has_checkpoint)
    layout = layout_for_options(layout, options)
    if eval_layout is not None:
        eval_layout = layout_for_options(eval_layout, options)

    config, init_model = initial_pretrainer(options)
    masking = _checked_masking(options, layout, config)
    # The architecture, recorded from the first step: the checkpoints of an interrupted run
    # load (`load_checkpoint(output_dir)`, fine-tuning's `init_checkpoint`) whatever flags
    # started it, and a resume must keep it.
    run_options["config"] = config.to_dict()
    directory.check_architecture(run_options["config"], has_checkpoint)
    check_first_batch(options, options.train_data, layout, config, "train_data")
    if eval_layout is not None:
        check_first_batch(options, options.eval_data, eval_layout, config, "eval_data")
    # Recorded, never compared: the weights are float32 in every precision, so a run may
    # resume in another (the file then says the latest).
    policy = choose_precision_policy(strategy, options.precision)
    run_options["precision"] = policy
    # Made only now: a failed input check leaves no empty run directory behind.
    if chief:
        directory.prepare()
        directory.write_record(run_options)
    run = _CheckedRun(layout, eval_layout, config, masking, policy)
    return run, init_model


def _run_options(options: PretrainingOptions, strategy) -> dict:
    """Returns what `run.json` records before the architecture and the precision are known."""
    run_options = RunDirectory.record(options, RUN_FREE_OPTIONS)
    # Not run-defining, but read back by fine-tuning and the export (resolve_normalization).
    run_options.update(changed_normalization(options))
    if options.input_sharding == "files":  # each worker's stream depends on their number
        run_options["input_pipelines"] = num_workers(strategy)
    return run_options


def _checked_masking(
    options: PretrainingOptions, layout: RecordLayout, config: AlbertConfig
) -> DynamicMasking | None:
    """Returns the dynamic masking (`None` without one) once the records' sequence length and
    the vocabulary are checked against `config`."""
    if layout.sequence_length > config.max_sequence_length:
        raise ValueError(
            f"The records hold sequences of {layout.sequence_length} tokens but the model's "
            f"max_sequence_length is {config.max_sequence_length}."
        )
    masking = dynamic_masking_for(options)
    if masking is not None and masking.word_start.shape[0] != config.vocabulary_size:
        raise ValueError(
            f"The vocabulary {options.vocabulary!r} has "
            f"{masking.word_start.shape[0]} pieces but the model's vocabulary_size is "
            f"{config.vocabulary_size}."
        )
    return masking


def _build_pretrainer(
    options: PretrainingOptions, strategy, run: _CheckedRun
) -> tuple[AlbertPretrainer, keras.optimizers.Optimizer, tf.train.Checkpoint]:
    """Returns the model, its optimizer and their training checkpoint, built under
    `strategy.scope()`."""
    with strategy.scope():
        backbone = AlbertBackbone.from_albert_config(
            run.config, dtype=run.policy, remat=options.remat
        )
        model = AlbertPretrainer(backbone)
        optimizer = optimizer_for_precision(build_pretraining_optimizer(options), run.policy)
        # Compiled for what `pretrainer.keras` carries (optimizer, losses), not for training;
        # with the unwrapped optimizer, so that neither depends on the precision.
        compile_pretrainer(
            model,
            checkpointed_optimizer(optimizer),
            sentence_order_loss_weight=options.sentence_order_loss_weight,
        )
        optimizer.build(model.trainable_variables)
        checkpoint = training_checkpoint(model, checkpointed_optimizer(optimizer))
    return model, optimizer, checkpoint


def _restore_or_initialize(
    options: PretrainingOptions,
    directory: RunDirectory,
    checkpoint: tf.train.Checkpoint,
    model: AlbertPretrainer,
    optimizer: keras.optimizers.Optimizer,
    init_model: keras.Model | None,
) -> int | None:
    """Restores the last intact checkpoint and returns its step, else copies the initial
    weights (if any) into the model and returns `None`."""
    latest = directory.restore_latest(checkpoint)
    if latest:
        resumed_from = int(optimizer.iterations.numpy())
        print(f"keras_albert: resuming from {latest} (step {resumed_from})")
        return resumed_from
    if init_model is not None:
        copy_initial_weights(init_model, model, options.init_checkpoint)
    return None


def _training_loop(
    options: PretrainingOptions,
    strategy,
    model: AlbertPretrainer,
    optimizer: keras.optimizers.Optimizer,
) -> TrainingLoop:
    """Returns the loop that trains `model` on the MLM + SOP objective under `strategy`."""
    return TrainingLoop(
        strategy,
        model,
        optimizer,
        pretraining_replica_fn(options.sentence_order_loss_weight),
        steps_per_execution=options.steps_per_execution,
        jit_compile=resolve_jit_compile(options.jit_compile, strategy),
    )


def _train(
    options: PretrainingOptions,
    run: _CheckedRun,
    directory: RunDirectory,
    loop: TrainingLoop,
    manager: tf.train.CheckpointManager,
    eval_fn,
    chief: bool,
) -> _TrainingOutcome:
    """Trains from the optimizer's step to `train_steps`, checkpoints the final step and
    evaluates it (unless the last stretch did); returns what the summary reports."""
    start_step = int(loop.optimizer.iterations.numpy())
    train_seconds = 0.0
    last_logs: dict = {}
    seconds_per_step = steps_per_second = None
    evaluated: dict | None = None
    if start_step < options.train_steps:
        train_started = time.perf_counter()
        last_logs, evaluated, seconds_per_step, steps_per_second = train_in_stretches(
            loop, manager, options, directory, run.layout, run.masking, eval_fn, chief
        )
        train_seconds = time.perf_counter() - train_started
    final_step = int(loop.optimizer.iterations.numpy())
    if directory.latest_checkpoint() != os.path.join(
        directory.checkpoints_dir, f"ckpt-{final_step}"
    ):
        manager.save(checkpoint_number=final_step)
    eval_results = evaluated
    if eval_fn is not None and eval_results is None:
        eval_results = evaluate_pretrainer(loop, eval_fn, options)
    return _TrainingOutcome(
        start_step,
        final_step,
        train_seconds,
        last_logs,
        seconds_per_step,
        steps_per_second,
        eval_results,
    )


def _write_summary(
    options: PretrainingOptions,
    run: _CheckedRun,
    directory: RunDirectory,
    loop: TrainingLoop,
    outcome: _TrainingOutcome,
    resumed_from: int | None,
    eval_counts: dict,
    started: float,
) -> dict:
    """Saves `pretrainer.keras`, writes `summary.json` and returns the summary (chief only)."""
    model_path = directory.save_model(loop.model, "pretrainer.keras")
    trained_steps = outcome.final_step - outcome.start_step
    train_seconds = outcome.train_seconds
    summary = {
        "step": outcome.final_step,
        "train_steps": options.train_steps,
        "resumed_from_step": resumed_from,
        "examples_seen": outcome.final_step * options.batch_size,
        "trained_steps_this_run": trained_steps,
        # The progress line's rate (`StepRate`: from the end of the first, compiling stretch).
        "train_steps_per_second": outcome.steps_per_second,
        # Training only (compilation included), then everything this run did.
        "train_seconds_this_run": train_seconds,
        "wall_seconds_this_run": time.perf_counter() - started,
        # The last stretch's training steps (no compilation, no evaluation in it).
        "seconds_per_step": outcome.seconds_per_step,
        "final_train_logs": outcome.last_logs,
        "eval": outcome.eval_results,
        **eval_counts,
        "num_parameters": int(loop.model.count_params()),
        "strategy": type(loop.strategy).__name__,
        "num_replicas": loop.strategy.num_replicas_in_sync,
        "num_workers": num_workers(loop.strategy),
        "precision": run.policy,
        "sequence_length": run.layout.sequence_length,
        "max_predictions_per_sequence": run.layout.max_predictions_per_sequence,
        "config": run.config.to_dict(),
        "checkpoint": directory.latest_checkpoint(),
        "model": model_path,
    }
    directory.write_summary(summary)
    return summary


def _print_summary(summary: dict, output_dir: str) -> None:
    """Prints the summary's one line: the step, the time and the last losses and accuracies."""
    shown = {
        "step": summary["step"],
        "trained_steps_this_run": summary["trained_steps_this_run"],
        "precision": summary["precision"],
    }
    if summary["train_seconds_this_run"]:
        shown["train_time"] = format_duration(summary["train_seconds_this_run"])
    for split, logs in (("train", summary["final_train_logs"]), ("eval", summary["eval"] or {})):
        for name in ("loss", "mlm_accuracy", "sop_accuracy"):
            if name in logs:
                shown[f"{split}_{name}"] = round(float(logs[name]), 4)
    line = ", ".join(f"{key} {value}" for key, value in shown.items())
    print(f"keras_albert pretraining summary: {line} (all: {output_dir}/summary.json)")


def build_pretraining_optimizer(options: PretrainingOptions) -> keras.optimizers.Optimizer:
    """`Lamb` or `AdamW` (`options.optimizer`) with `WarmupPolynomialDecay`: ALBERT's
    `create_optimizer` with its `poly_power` and `start_warmup_step`."""
    schedule = WarmupPolynomialDecay(
        options.learning_rate,
        warmup_steps=options.resolved_warmup_steps,
        total_steps=options.train_steps,
        end_learning_rate=options.end_learning_rate,
        power=options.poly_power,
        start_warmup_step=options.start_warmup_step,
    )
    if options.optimizer == "adamw":
        return adamw(schedule, options.weight_decay_rate)
    return Lamb(schedule, weight_decay_rate=options.weight_decay_rate)
