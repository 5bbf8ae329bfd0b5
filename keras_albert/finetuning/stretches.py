"""The fine-tuning driver's stretches: `Plan.epochs` stretches of steps, each followed by the
task's evaluation, through the engine's one training phase (`training.phase`).

What fine-tuning adds to the phase (`EvaluatedStretches`): after each stretch the task's
evaluation (its line, the history row's `val_` columns), `best.keras` when the main metric
improved, and a checkpoint holding the evaluations so far and the current stretch's sums (a
resumed stretch's row averages all its steps).
"""

from __future__ import annotations

import dataclasses
import math

from keras_albert.finetuning.progress import EvaluationProgress
from keras_albert.models.lora import merged_lora
from keras_albert.training.checkpoints import JsonState
from keras_albert.training.loop import TrainingLoop, replica_share
from keras_albert.training.phase import Stretches, TrainingPhase
from keras_albert.training.run_directory import RunDirectory


@dataclasses.dataclass(frozen=True)
class Plan:
    """The task's data and how long the run is: its recipe, and an evaluation after every
    `steps_per_epoch` steps (a stretch) and after the last of the recipe's `train_steps`
    (`epochs` stretches in all; `keras_albert.tasks.recipes.epoch_plan`)."""

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


class EvaluatedStretches(Stretches):
    """Each stretch ends in the task's evaluation; the checkpoint holds `state`: the
    evaluations so far, the best value and the current stretch's sums."""

    def __init__(self, loop, plan: Plan, objective, directory, chief, verbose, progress_state):
        self.loop, self.plan, self.objective = loop, plan, objective
        self.directory, self.chief, self.verbose = directory, chief, verbose
        self.progress_state = progress_state
        self.state = progress_state.get() or {"history": [], "best_value": -math.inf, "totals": {}}

    def logs(self, sums: dict, num_steps: int) -> dict:
        logs = self.objective.logs(sums, num_steps)
        if "skipped_steps" in sums:  # float16: overflowed steps, not applied
            logs["skipped_steps"] = sums["skipped_steps"]
        return logs

    def end(self, step: int, index: int, logs: dict, steps_per_second: float | None) -> dict:
        task = self.plan.task
        results = task.evaluate(self.loop.model, self.plan.recipe.batch_size)
        if self.chief and self.verbose:
            train = ", ".join(f"{name} {value:.4g}" for name, value in logs.items())
            print(
                f"{task.name} eval after evaluation {index + 1} (step {step}, "
                f"{_rate(steps_per_second)}train {train}): "
                f"{task.format_results(results)}",
                flush=True,
            )
        self.state["history"].append({"epoch": index + 1, "step": step, **results})
        if results[task.main_metric] > self.state["best_value"]:
            self.state["best_value"] = results[task.main_metric]
            if self.chief:
                # A LoRA model's is the merged, plain model without the optimizer (its
                # moments belong to adapters the file does not have): it loads as saved.
                self.directory.save_model(merged_lora(self.loop.model), "best.keras")
        return {"epoch": index + 1, **{f"val_{name}": value for name, value in results.items()}}

    def before_save(self, sums: dict) -> None:
        self.state["totals"] = sums
        self.progress_state.set(self.state)


def train_in_stretches(
    loop: TrainingLoop,
    plan: Plan,
    objective,
    options,
    directory: RunDirectory,
    chief: bool,
    manager,
    progress_state: JsonState,
) -> list[dict]:
    """`plan.epochs` stretches of steps (`plan.stretch_length`), each followed by the task's
    evaluation, from the step the optimizer is at (a resumed run: `progress_state` holds the
    evaluations so far); saves the best model to `best.keras` and the checkpoints to
    `manager`; returns one row per evaluation."""
    task, batch_size = plan.task, plan.recipe.batch_size
    start = int(loop.optimizer.iterations.numpy())
    # The stream is the same for a seed: a resumed run skips the batches trained on.
    iterator = loop.iterator(
        lambda context: replica_share(
            task.train_dataset(batch_size, options.seed).skip(start), batch_size, context
        )
    )
    stretches = EvaluatedStretches(
        loop, plan, objective, directory, chief, options.verbose, progress_state
    )
    progress = EvaluationProgress(
        plan.steps_per_epoch, plan.train_steps, options.verbose if chief else 0, objective.names
    )
    phase = TrainingPhase(
        loop,
        manager,
        directory,
        stretches,
        train_steps=plan.train_steps,
        stretch_steps=plan.steps_per_epoch,
        checkpoint_every=options.checkpoint_every_steps,
        checkpoint_each_stretch=True,
        sums_checkpointed=True,
        history_columns=("step", "epoch"),
        callbacks=[progress],
        chief=chief,
    )
    phase.run(iterator, stretches.state["totals"])
    return stretches.state["history"]


def _rate(steps_per_second: float | None) -> str:
    return "" if steps_per_second is None else f"{steps_per_second:.3g} steps/s; "
