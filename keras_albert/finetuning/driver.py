"""The fine-tuning driver: every task type that trains (GLUE-style classification, SQuAD, RACE,
NER, text embedding: `keras_albert.tasks.registry`) through the one training loop
(`keras_albert.training.loop`), under any strategy.

`finetune(FinetuningOptions(...))` reads the task's files (its task type's `FinetuningTask`,
`keras_albert.finetuning.task_choice`), builds the task model on the backbone of our pretraining
output, a converted checkpoint or (from scratch) a config, trains with AdamW and ALBERT's warmup +
linear decay, evaluates the task's official metrics after every stretch of steps, keeps the best
checkpoint and writes the best checkpoint's predictions. The task's batches are packed by the
task's preprocessor (`FinetuningTask.preprocessor`), which the model carries, so that the saved
model takes raw text and computes the features it was trained and evaluated on.

Every strategy `build_strategy` makes (one device, Mirrored, MultiWorkerMirrored, TPU) runs the
same loop: the task's global batches are split among the replicas (`loop.replica_share`), the
task's loss and metrics come from its `Objective`. Under MultiWorkerMirrored every worker
trains and evaluates (the evaluations are identical), and only the chief writes `output_dir`;
the other workers write to temporary directories they remove. Users who train a task model
themselves can still `task.compile(model, optimizer)` and call `model.fit` on one host.

What `output_dir` holds:

    checkpoints/ckpt-N       the model, optimizer, dropout state and progress (evaluations so
                             far, the best value, the current stretch's sums) at step N: after
                             every evaluation, every `checkpoint_every_steps` and on SIGTERM
    run.json                 the options that fix the run (a resume must match them; runs
                             before this layout wrote checkpoints/run.json, still read)
    run.lock                 while a run holds the directory (one run at a time)
    best.keras               the task model with the best main metric so far, carrying the
                             preprocessor its batches were packed with (`predict` on text)
    history.csv              one row per evaluation: step, train loss/metrics (means over the
                             stretch of steps before it) and the official metrics (`val_`)
    logs/train, logs/validation   TensorBoard, over the optimizer step
    metrics.json             the best checkpoint's official metrics
    predictions              the best checkpoint's, per task:
                               GLUE: eval_predictions.tsv (index, prediction, label) and, with
                                 `test_data`, test_predictions.tsv (index, prediction)
                               SQuAD: predictions.json, null_odds.json, nbest_predictions.json
                                 and, with `test_data`, test_predictions.json (id → answer)
                                 and for v2 test_null_odds.json
                               RACE: eval_predictions.jsonl (one line per question) and, with
                                 `test_data`, test_predictions.jsonl (the same, no label)
                               NER: eval_predictions.conll (word, gold, predicted) and, with
                                 `test_data`, test_predictions.conll (word, predicted)
                               text embedding: eval_predictions.tsv (index, cosine,
                                 score) and, with `test_data`, test_predictions.tsv (index,
                                 cosine)
    tokenizer.model          the SentencePiece model used (so the directory is self-contained);
                             with a WordPiece vocabulary, vocab.txt
    summary.json             the options, recipe, best metrics and example counts (train,
                             eval and test)

Resume: rerunning the same command on the same `output_dir` continues from the last
checkpoint exactly as an uninterrupted run: the optimizer's `iterations` is the step (the
schedule follows it), the task's training stream is deterministic for a seed, so the rerun
skips the global batches already trained on (`tf.data` `skip`: the skipped batches are read,
not trained on), and the dropout masks continue (`training.checkpoints`). `history.csv` drops
the rows logged after the checkpoint (they are logged again). Other run-defining options are
refused (`force` starts over). SIGTERM or Ctrl-C: the current steps finish, a checkpoint is
written and the run exits 143 (130) with one line (`training.interruption`).

Default recipes: google-research/albert `run_glue.sh` (commit 557c37b) per GLUE task, the
original README's for SQuAD and RACE, Hugging Face `run_ner`'s for NER. `scale` multiplies
train and warmup steps for small machines (`keras_albert.tasks.recipes`). Progress: a
heading "evaluation k/n: steps a-b of N, about T left" per stretch of steps between two
evaluations, then a progress bar over its steps on a terminal, elsewhere (a log file) a line
every few steps (`keras_albert.finetuning.progress`), and a line per evaluation.
"""

from __future__ import annotations

import dataclasses
import json
import os
import warnings

import keras
import tensorflow as tf

from keras_albert.convert import load_tokenizer, require_vocabulary
from keras_albert.finetuning.elastic_depth import elastic_replica_fn
from keras_albert.finetuning.options import FinetuningOptions
from keras_albert.finetuning.stretches import Plan, train_in_stretches
from keras_albert.finetuning.task_choice import choose_task, make_task
from keras_albert.models.backbone import AlbertBackbone
from keras_albert.models.lora import parameter_counts
from keras_albert.tasks.recipes import epoch_plan, resolve_recipe
from keras_albert.text.normalization import changed_normalization
from keras_albert.training.checkpoints import JsonState, training_checkpoint
from keras_albert.training.clipping import AdamW, adamw
from keras_albert.training.loop import TrainingLoop
from keras_albert.training.loss_scale import optimizer_for_precision
from keras_albert.training.run import started_run
from keras_albert.training.run_directory import RunDirectory
from keras_albert.training.schedule import WarmupPolynomialDecay
from keras_albert.training.strategy import (
    choose_precision_policy,
    num_workers,
    resolve_jit_compile,
    worker_output,
)

__all__ = ["FinetuningOptions", "build_optimizer", "finetune"]

# The options a resumed run may change (`RunDirectory.record`, one policy for both
# drivers): they change neither the weights trained nor the evaluations. Every other option
# fixes the run (a new one too, unless added here), the task type's own ones included.
RUN_FREE_OPTIONS = (
    "output_dir",
    "test_data",
    "strategy",
    "tpu_address",
    "precision",
    "steps_per_execution",
    "jit_compile",
    "remat",
    "verbose",
    "checkpoint_every_steps",
    "keep_checkpoints",
    "force",
)
# What `force` removes of an earlier run (the predictions files are rewritten at the end).
RUN_OUTPUTS = (
    "checkpoints",
    "history.csv",
    "logs",
    "best.keras",
    "metrics.json",
    "summary.json",
    "run.json",
)


def finetune(options: FinetuningOptions) -> dict:
    """Fine-tunes a model on `options.dataset`, or resumes the run `options.output_dir` holds;
    returns the summary (also `summary.json`)."""
    # An unknown task, or options it cannot take, fail before any work.
    _, options = choose_task(options)
    with started_run(options.output_dir, options.strategy, options.tpu_address) as (
        strategy,
        chief,
        directory,
    ):
        if options.pad_to_multiple_of is not None and isinstance(
            strategy, tf.distribute.TPUStrategy
        ):
            raise ValueError(
                "`pad_to_multiple_of` must be None on TPUs (they compile one static shape). "
                f"Received: pad_to_multiple_of={options.pad_to_multiple_of}"
            )
        # Seed before any tokenizer: seeding clears TensorFlow's kernel cache, which drops the
        # SentencePiece resource of a tokenizer made earlier ("SentencepieceOp ... does not
        # exist").
        keras.utils.set_random_seed(options.seed)
        return _finetune(options, strategy, chief, directory)


@dataclasses.dataclass(frozen=True)
class _CheckedRun:
    """What the checks before any long work settle: the run record, whether it resumes, the
    precision policy, the tokenizer and its vocabulary file."""

    run_options: dict
    resuming: bool
    policy: str
    tokenizer: object
    vocabulary: str


def _finetune(options: FinetuningOptions, strategy, chief: bool, directory: RunDirectory) -> dict:
    """`finetune` inside its run lock (`directory`), phase by phase; returns the summary (a
    short one on a worker)."""
    run = _check_run(options, strategy, directory)
    plan = _read_task(options, run, strategy)
    model, optimizer, checkpoint, progress_state = _build_model(options, strategy, run, plan)
    objective = plan.task.objective(model)
    replica_fn = objective.replica_fn
    if options.elastic_depths:
        replica_fn = elastic_replica_fn(objective, model, options.elastic_depths)
    if chief:  # made only now: a failed check leaves no output directory behind
        _prepare_output_dir(options, run, directory)

    def next_step() -> str:
        if not chief:
            return f"the chief worker writes {options.output_dir} — rerun the same command"
        return directory.where_to_resume()

    # The other workers write to a temporary directory they remove.
    with worker_output(strategy, options.output_dir, next_step) as output_dir:
        # Every worker saves (TensorFlow's collective save); only the chief's copy is kept.
        manager = tf.train.CheckpointManager(
            checkpoint, os.path.join(output_dir, "checkpoints"), options.keep_checkpoints
        )
        resumed_from = _restore(run, directory, checkpoint, optimizer)
        loop = TrainingLoop(
            strategy,
            model,
            optimizer,
            replica_fn,
            steps_per_execution=options.steps_per_execution,
            jit_compile=resolve_jit_compile(options.jit_compile, strategy),
        )
        if chief:
            _print_plan(plan, options)
        # The backbone's pooler takes no part in the span and token heads: no gradient, by
        # design.
        warnings.filterwarnings(
            "ignore", message=r"Gradients do not exist for variables \['pooler/"
        )
        history = train_in_stretches(loop, plan, objective, options, directory, chief,
                                     manager, progress_state)  # fmt: skip
        best_results = None
        if chief:  # the best model's predictions and metrics (outside the strategy: no peers)
            best = keras.models.load_model(os.path.join(output_dir, "best.keras"))
            best_results = plan.task.evaluate(best, plan.recipe.batch_size, output_dir=output_dir)
    summary = _summary(options, run, plan, strategy, resumed_from, history, best_results)
    if not chief:
        return {**summary, "chief": False}
    summary.update(_model_sizes(model, directory))
    _print_model_sizes(summary, options)
    _write_outputs(run, directory, summary, best_results)
    return summary


def _check_run(options: FinetuningOptions, strategy, directory: RunDirectory) -> _CheckedRun:
    """A run to resume must have these options (checked before any long work); the precision
    and the tokenizer."""
    run_options = RunDirectory.record(options, RUN_FREE_OPTIONS)
    resuming = not options.force and directory.has_checkpoint()
    directory.check_record(run_options, resuming, remedy="`force` to start over")
    # Recorded, never compared: the weights are float32 in every precision.
    policy = choose_precision_policy(strategy, options.precision)
    run_options["precision"] = policy
    # The path too: the run keeps a copy of the vocabulary.
    vocabulary = require_vocabulary(options.init_checkpoint, options.vocabulary, "init_checkpoint")
    tokenizer = load_tokenizer(
        options.init_checkpoint,
        vocabulary,
        lowercase=options.lowercase,
        strip_accents=options.strip_accents,
    )
    return _CheckedRun(run_options, resuming, policy, tokenizer, vocabulary)


def _read_task(options: FinetuningOptions, run: _CheckedRun, strategy) -> Plan:
    """The task's data, its recipe (with the options' overrides) and the evaluation plan."""
    task = make_task(options, run.tokenizer)
    recipe = resolve_recipe(options, task.recipe(), task.num_train)
    if recipe.batch_size % strategy.num_replicas_in_sync:
        raise ValueError(
            f"`batch_size` must be a multiple of the {strategy.num_replicas_in_sync} replicas "
            f"(the global batch is split evenly). Received: batch_size={recipe.batch_size}"
        )
    epochs, steps_per_epoch = epoch_plan(
        recipe.train_steps, recipe.batch_size, task.num_train_features(), options.num_evaluations
    )
    return Plan(task, recipe, epochs, steps_per_epoch)


def _build_model(options: FinetuningOptions, strategy, run: _CheckedRun, plan: Plan):
    """The task model on the initial backbone, its optimizer (the precision's wrapper around
    AdamW) and the training checkpoint (of the unwrapped AdamW) with its progress state."""
    with strategy.scope():
        # `init_checkpoint`'s backbone (any head dropped), or a fresh one of the architecture.
        source = options.init_checkpoint or options.preset or options.config
        backbone = AlbertBackbone.from_preset(source).with_dtype_policy(run.policy)
        backbone = backbone.with_remat(options.remat)
        config = backbone.albert_config
        if config.vocabulary_size != run.tokenizer.vocabulary_size:
            raise ValueError(
                f"The vocabulary {run.vocabulary!r} has "
                f"{run.tokenizer.vocabulary_size} pieces but the model's vocabulary_size is "
                f"{config.vocabulary_size}."
            )
        if plan.task.sequence_length > config.max_sequence_length:
            raise ValueError(
                f"`sequence_length` must be at most the model's max_sequence_length, "
                f"{config.max_sequence_length}. Received: sequence_length="
                f"{plan.task.sequence_length}"
            )
        model = plan.task.build_model(backbone)
        # The features' one definition: the task's datasets pack through this preprocessor
        # (the training loop and the evaluations call the model on them), and `best.keras`
        # carries it, so that its `predict` on raw inputs computes the features evaluated.
        model.preprocessor = plan.task.preprocessor
        if options.lora_rank is not None:
            model.backbone.enable_lora(options.lora_rank, options.lora_target_layer_names)
        inner = build_optimizer(
            plan.recipe.learning_rate,
            plan.train_steps,
            plan.recipe.warmup_steps,
            options.weight_decay_rate,
        )
        optimizer = optimizer_for_precision(inner, run.policy)
        # What `best.keras` carries, for users' `model.fit`: the unwrapped optimizer, as the
        # checkpoints (`training.loss_scale`), so that neither depends on the precision (a
        # LoRA run's `best.keras` is the merged model, uncompiled: `stretches`).
        plan.task.compile(model, inner)
        optimizer.build(model.trainable_variables)
    progress_state = JsonState()  # outside the scope: one CPU variable, not one per replica
    checkpoint = training_checkpoint(model, inner, progress=progress_state)
    return model, optimizer, checkpoint, progress_state


def _prepare_output_dir(
    options: FinetuningOptions, run: _CheckedRun, directory: RunDirectory
) -> None:
    """The chief's output directory, with the run record (an earlier run's outputs removed
    first with `force`)."""
    if options.force:
        removed = directory.clear(RUN_OUTPUTS)
        if removed:
            print(f"keras_albert: force: removed {', '.join(removed)} of {directory.path}")
    directory.prepare()
    directory.write_record(run.run_options)


def _restore(run: _CheckedRun, directory: RunDirectory, checkpoint, optimizer) -> int | None:
    """The step a resumed run restores (the newest checkpoint that reads: a truncated one is
    skipped, said so), or None for a new run."""
    if not run.resuming:
        return None
    latest = directory.restore_latest(checkpoint)
    resumed_from = int(optimizer.iterations.numpy())
    print(f"keras_albert: resuming from {latest} (step {resumed_from})")
    return resumed_from


def _print_plan(plan: Plan, options: FinetuningOptions) -> None:
    task, recipe = plan.task, plan.recipe
    print(
        f"keras_albert: {task.name}: {task.num_train} train / {task.num_eval} eval "
        f"examples; {plan.train_steps} steps (batch {recipe.batch_size}, peak lr "
        f"{recipe.learning_rate}, warmup {recipe.warmup_steps} = "
        f"{recipe.warmup_steps / plan.train_steps:.0%} of the run), {plan.epochs} evaluations"
    )
    if options.num_evaluations is not None and plan.epochs != options.num_evaluations:
        asked = options.num_evaluations
        print(
            f"keras_albert: {plan.epochs} evaluations, not {asked}: stretches of "
            f"ceil({plan.train_steps} / {asked}) = {plan.steps_per_epoch} steps cover the "
            f"{plan.train_steps} steps in {plan.epochs}"
        )


def _summary(options, run, plan, strategy, resumed_from, history, best_results) -> dict:
    task = plan.task
    best_epoch = max(history, key=lambda row: row[task.main_metric])["epoch"]
    return {
        "task": task.name,
        "options": dataclasses.asdict(options),
        # Read back by the export (resolve_normalization): it must normalize the same way.
        **changed_normalization(run.tokenizer),
        "recipe": dataclasses.asdict(plan.recipe),
        "sequence_length": task.sequence_length,
        "epochs": plan.epochs,
        "steps_per_epoch": plan.steps_per_epoch,
        "train_steps": plan.train_steps,
        "resumed_from_step": resumed_from,
        **task.summary(),
        "main_metric": task.main_metric,
        "strategy": type(strategy).__name__,
        "num_replicas": strategy.num_replicas_in_sync,
        "num_workers": num_workers(strategy),
        "precision": run.policy,
        "history": history,
        "best_epoch": best_epoch,
        "best": best_results,
    }


def _model_sizes(model: keras.Model, directory: RunDirectory) -> dict:
    """What the run trained and keeps: the parameter counts (`lora_rank` trains few) and the
    bytes of `best.keras` (LoRA merged: a full model) and of the newest training checkpoint
    (the optimizer's moments are the trainable weights' only)."""
    latest = directory.latest_checkpoint()
    checkpoint_files = tf.io.gfile.glob(f"{latest}.*") if latest else []
    return {
        **parameter_counts(model),
        "best_model_bytes": tf.io.gfile.stat(directory.join("best.keras")).length,
        "checkpoint_bytes": sum(tf.io.gfile.stat(path).length for path in checkpoint_files),
    }


def _print_model_sizes(summary: dict, options: FinetuningOptions) -> None:
    adapters = "" if options.lora_rank is None else f" (LoRA rank {options.lora_rank})"
    print(
        f"keras_albert: {summary['trainable_parameters']:,} of {summary['parameters']:,} "
        f"parameters trained{adapters}; checkpoint {summary['checkpoint_bytes'] / 1e6:.1f} MB, "
        f"best.keras {summary['best_model_bytes'] / 1e6:.1f} MB"
    )


def _write_outputs(
    run: _CheckedRun, directory: RunDirectory, summary: dict, best_results: dict
) -> None:
    """The chief's metrics, tokenizer copy and summary (each written atomically)."""
    directory.write_text("metrics.json", json.dumps(best_results, indent=2) + "\n")
    # Named so that `find_vocabulary` finds it beside best.keras, whichever kind it is.
    copy_name = "vocab.txt" if run.tokenizer.wordpiece else "tokenizer.model"
    directory.copy_in(run.vocabulary, copy_name)
    directory.write_summary(summary)
    print(
        json.dumps(
            {"task": summary["task"], "best_epoch": summary["best_epoch"], "best": best_results}
        )
    )


def build_optimizer(
    learning_rate: float, train_steps: int, warmup_steps: int, weight_decay_rate: float
) -> AdamW:
    """ALBERT's fine-tuning optimizer (`training.clipping.adamw`) with its schedule: linear
    warmup, then linear decay to 0. The clipping applies to the gradient summed over replicas,
    as on one device."""
    schedule = WarmupPolynomialDecay(learning_rate, warmup_steps, train_steps)
    return adamw(schedule, weight_decay_rate)
