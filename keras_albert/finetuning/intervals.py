"""The fine-tuning driver's training phase: `Plan.epochs` stretches of steps, each followed by
the task's evaluation.

`train_in_stretches` runs the loop's compiled calls one at a time, so that a signal is
honoured between two of them (checkpointed and raised as `Interrupted`: what the run then does
is `keras_albert.finetuning.driver`'s). After each stretch: the task's evaluation, a history
row (`history.csv`, TensorBoard) on the chief, `best.keras` when the main metric improved, and
a checkpoint holding the evaluations so far. A NaN or infinite loss stops the run.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
import time

import tensorflow as tf

from keras_albert.finetuning.progress import EvaluationProgress
from keras_albert.models.lora import merged_lora
from keras_albert.training import run_directory
from keras_albert.training.interruption import StopSignals
from keras_albert.training.logs import HistoryCsv, TensorBoardLogs
from keras_albert.training.loop import replica_share, run_callbacks
from keras_albert.training.schedule import learning_rate_at


@dataclasses.dataclass(frozen=True)
class Plan:
    """The task's data and how long the run is: its recipe, and an evaluation after every
    `steps_per_epoch` steps and after the last of the recipe's `train_steps` (`epochs` in
    all; `keras_albert.tasks.recipes.epoch_plan`)."""

    task: object
    recipe: object
    epochs: int
    steps_per_epoch: int

    @property
    def train_steps(self) -> int:
        return self.recipe.train_steps

    def stretch_length(self, epoch: int) -> int:
        """The steps before evaluation `epoch + 1` (the last stretch may be shorter)."""
        return min(self.steps_per_epoch, self.train_steps - epoch * self.steps_per_epoch)


def train_in_stretches(loop, plan: Plan, objective, options, output_dir, chief, manager,
                       progress_state) -> list[dict]:  # fmt: skip
    """`plan.epochs` stretches of steps (`plan.stretch_length`), each followed by the task's
    evaluation, from the step the optimizer is at (a resumed run: `progress_state` holds the
    evaluations so far); saves the best model to `output_dir/best.keras` and the checkpoints
    to `manager`; returns one row per evaluation."""
    task, batch_size = plan.task, plan.recipe.batch_size
    epochs, steps_per_epoch, train_steps = plan.epochs, plan.steps_per_epoch, plan.train_steps
    start = int(loop.optimizer.iterations.numpy())
    # The stream is the same for a seed: a resumed run skips the batches trained on.
    iterator = loop.iterator(
        lambda context: replica_share(
            task.train_dataset(batch_size, options.seed).skip(start), batch_size, context
        )
    )
    # What a checkpoint holds besides the weights: the evaluations so far, the best value and
    # the sums of the current stretch's steps (its history row averages all of them).
    state = progress_state.get() or {"history": [], "best_value": -math.inf, "totals": {}}
    progress = EvaluationProgress(
        steps_per_epoch, train_steps, options.verbose if chief else 0, objective.names
    )
    callbacks: list = []
    if chief:
        history_path = os.path.join(output_dir, "history.csv")
        if not start and tf.io.gfile.exists(history_path):  # a run that left no checkpoint
            tf.io.gfile.remove(history_path)
        callbacks = [
            HistoryCsv(history_path, ("step", "epoch")),
            TensorBoardLogs(os.path.join(output_dir, "logs")),
        ]
    best_path = os.path.join(output_dir, "best.keras")
    chunk = max(1, loop.steps_per_execution)
    every = options.checkpoint_every_steps

    def save(step: int) -> str:
        progress_state.set(state)
        return manager.save(checkpoint_number=step)

    def stopped(stop: StopSignals, step: int, saved: bool):
        if not saved:
            save(step)
        return stop.interrupted(run_directory.stopped_at(options.output_dir, step, train_steps))

    # Every stretch but the last starts at a multiple of `steps_per_epoch`; a finished run
    # (the last stretch maybe shorter) has none left.
    epoch, done = divmod(start, steps_per_epoch) if start < train_steps else (epochs, 0)
    progress.on_train_begin(start)
    run_callbacks(callbacks, "on_train_begin", start)  # drops rows logged past `start`
    with StopSignals() as stop, progress:  # an interruption's line starts a line of its own
        while epoch < epochs:
            length = plan.stretch_length(epoch)
            progress.on_epoch_begin(epoch)
            started = time.perf_counter()
            trained = 0
            while done < length:
                step = epoch * steps_per_epoch + done
                count = min(chunk, length - done)
                if every:  # land on the checkpoint steps
                    count = min(count, every - step % every)
                sums = loop.train(iterator, count)
                state["totals"] = {
                    key: state["totals"].get(key, 0.0) + value for key, value in sums.items()
                }
                done, trained, step = done + count, trained + count, step + count
                progress.on_steps(step, functools.partial(objective.logs, state["totals"], done))
                if done == length:
                    break  # the evaluation's checkpoint follows
                saved = bool(every) and step % every == 0
                if saved:
                    save(step)
                if stop.agreed(loop.strategy):
                    raise stopped(stop, step, saved)
            step = epoch * steps_per_epoch + length
            logs = objective.logs(state["totals"], length)
            if "skipped_steps" in state["totals"]:  # float16: overflowed steps, not applied
                logs["skipped_steps"] = state["totals"]["skipped_steps"]
            if not math.isfinite(logs["loss"]):
                raise FloatingPointError(
                    f"The training loss became NaN or infinite by step {step}."
                )
            seconds = time.perf_counter() - started
            results = task.evaluate(loop.model, batch_size)
            if chief and options.verbose:
                train = ", ".join(f"{name} {value:.4g}" for name, value in logs.items())
                shown = task.format_results(results)
                print(
                    f"{task.name} eval after evaluation {epoch + 1} (step {step}, "
                    f"{trained / seconds:.3g} steps/s; train {train}): {shown}",
                    flush=True,
                )
            state["history"].append({"epoch": epoch + 1, "step": step, **results})
            if results[task.main_metric] > state["best_value"]:
                state["best_value"] = results[task.main_metric]
                if chief:
                    # A LoRA model's is the merged, plain model without the optimizer (its
                    # moments belong to adapters the file does not have): it loads as saved.
                    run_directory.atomic_save_model(merged_lora(loop.model), best_path)
            rate = learning_rate_at(loop.optimizer, step - 1)  # the last update's
            row = {"step": step, "epoch": epoch + 1, "learning_rate": rate, **logs}
            row.update({f"val_{name}": value for name, value in results.items()})
            run_callbacks(callbacks, "on_log", step, row)
            state["totals"] = {}
            epoch, done = epoch + 1, 0
            save(step)  # after the row: a run killed before this logs the stretch again
            if stop.agreed(loop.strategy) and epoch < epochs:
                raise stopped(stop, step, True)
    run_callbacks(callbacks, "on_train_end", train_steps)
    return state["history"]
