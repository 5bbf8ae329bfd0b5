"""The pretraining driver's training phase: from the first step to `train_steps`, one log
interval (`log_every_steps` steps) at a time.

`train_in_intervals` runs the loop's compiled calls one at a time, so that a signal is honoured
between two of them (what the run then does: `keras_albert.pretraining.driver`). Each interval
ends in one log row (the mean loss, the task losses and accuracies over every prediction, the
learning rate the last update used and, every `eval_every_steps`, the held-out evaluation) that
the callbacks take: `StepCheckpoints`, and on the chief `history.csv`, TensorBoard and the
progress line. A NaN or infinite loss stops the run, naming the last checkpoint before it.
"""

from __future__ import annotations

import math
import os
import time

import tensorflow as tf

from keras_albert.pretraining.losses import pretraining_logs
from keras_albert.pretraining.options import PretrainingOptions
from keras_albert.pretraining.streams import make_datasets
from keras_albert.training import run_directory
from keras_albert.training.interruption import StopSignals
from keras_albert.training.logs import HistoryCsv, TensorBoardLogs
from keras_albert.training.loop import TrainingLoop, run_callbacks
from keras_albert.training.progress import StepProgress
from keras_albert.training.schedule import learning_rate_at


def evaluate_pretrainer(loop: TrainingLoop, eval_fn, options: PretrainingOptions) -> dict:
    """The held-out logs (`losses.pretraining_logs`) of one pass over `eval_fn`'s batches."""
    sums = loop.evaluate(eval_fn)
    return pretraining_logs(sums, options.sentence_order_loss_weight)


class StepCheckpoints:
    """Saves every `every` steps and at the last step (a loop callback)."""

    def __init__(self, manager: tf.train.CheckpointManager, every: int, train_steps: int):
        self.manager = manager
        self.every = every
        self.train_steps = train_steps

    def on_log(self, step: int, logs: dict) -> None:
        if step % self.every == 0 or step >= self.train_steps:
            self.manager.save(checkpoint_number=step)


def train_in_intervals(
    loop, manager, options, layout, masking, eval_fn, start_step, chief
) -> tuple:
    """From `start_step` to `train_steps`, one log row every `log_every_steps` steps (at
    multiples of it, and at the last step); returns the last logs, the last evaluation (None
    when the last step was not evaluated) and the last interval's seconds per step."""
    eval_every = options.eval_every_steps or options.checkpoint_every_steps
    names = ("loss", "mlm_loss", "sop_loss", "mlm_accuracy", "sop_accuracy")
    checkpoints = StepCheckpoints(manager, options.checkpoint_every_steps, options.train_steps)
    callbacks: list = [checkpoints]
    if chief:
        columns = ("step", "learning_rate", *names)
        if hasattr(loop.optimizer, "dynamic_scale"):
            columns += ("skipped_steps", "loss_scale")
        if eval_fn is not None:
            columns += tuple(f"val_{name}" for name in names)
        callbacks += [
            HistoryCsv(os.path.join(options.output_dir, "history.csv"), columns),
            TensorBoardLogs(os.path.join(options.output_dir, "logs")),
        ]
        if options.verbose:
            callbacks.append(StepProgress(options.train_steps, names=("loss", "mlm_accuracy")))
    iterator = loop.iterator(
        lambda context: make_datasets(options, layout, masking, start_step, context)
    )
    inner = getattr(loop.optimizer, "inner_optimizer", loop.optimizer)
    step = start_step
    logs: dict = {}
    evaluation = seconds_per_step = None
    run_callbacks(callbacks, "on_train_begin", step)
    stop = StopSignals()
    with stop:
        while step < options.train_steps:
            num_steps = min(
                options.log_every_steps - step % options.log_every_steps,
                options.train_steps - step,
            )
            interval_started = time.perf_counter()
            # One compiled call at a time, so that a signal is honoured after the current one.
            sums, done = None, 0
            while done < num_steps:
                count = min(loop.steps_per_execution, num_steps - done)
                part = loop.train(iterator, count)
                sums = part if sums is None else {key: sums[key] + part[key] for key in sums}
                done += count
                if done < num_steps and stop.agreed(loop.strategy):
                    break
            step = int(loop.optimizer.iterations.numpy())
            if done < num_steps:  # stopped inside a log interval: no row for its steps
                manager.save(checkpoint_number=step)
                raise _stopped(stop, options, step)
            seconds_per_step = (time.perf_counter() - interval_started) / num_steps
            logs, evaluation = _log(loop, sums, num_steps, step, eval_fn, options, manager, inner,
                                    eval_every, callbacks)  # fmt: skip
            if stop.agreed(loop.strategy) and step < options.train_steps:
                if step % options.checkpoint_every_steps:  # else `checkpoints` saved it
                    manager.save(checkpoint_number=step)
                raise _stopped(stop, options, step)
    run_callbacks(callbacks, "on_train_end", step)
    return logs, evaluation, seconds_per_step


def _stopped(stop: StopSignals, options: PretrainingOptions, step: int):
    return stop.interrupted(run_directory.stopped_at(options.output_dir, step, options.train_steps))


def _log(loop, sums, num_steps, step, eval_fn, options, manager, inner, eval_every, callbacks):
    """The log row of the interval that ends at `step` (the checkpoint callback saves)."""
    # The mean of the steps' losses; the task losses and accuracies over every prediction.
    logs = {**pretraining_logs(sums, options.sentence_order_loss_weight)}
    logs["loss"] = sums["loss"] / num_steps
    if "skipped_steps" in sums:  # float16: steps whose gradients overflowed, not applied
        logs["skipped_steps"] = sums["skipped_steps"]
        logs["loss_scale"] = float(loop.optimizer.dynamic_scale.numpy())
    if not all(map(math.isfinite, logs.values())):
        raise FloatingPointError(
            f"The loss became NaN or infinite by step {step}; the last checkpoint in "
            f"{manager.directory} precedes it."
        )
    evaluation = None
    if eval_fn is not None and (step % eval_every == 0 or step >= options.train_steps):
        evaluation = evaluate_pretrainer(loop, eval_fn, options)
        logs.update({f"val_{name}": value for name, value in evaluation.items()})
    # The rate the last update used: the schedule at iterations - 1.
    logs = {"step": step, "learning_rate": learning_rate_at(inner, step - 1), **logs}
    run_callbacks(callbacks, "on_log", step, logs)
    return logs, evaluation
