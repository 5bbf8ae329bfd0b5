"""The pretraining driver's stretches: from the first step to `train_steps`, one stretch of
`log_every_steps` steps at a time, through the engine's one training phase (`training.phase`).

What pretraining adds to the phase (`HeldOutStretches`): each stretch's logs (the mean loss,
the task losses and accuracies over every prediction, the loss scale under float16) and, every
`eval_every_steps` and at the last step, the held-out evaluation in the row; on the chief the
progress line. A checkpoint every `checkpoint_every_steps` and at the last step.
"""

from __future__ import annotations

from keras_albert.pretraining.losses import pretraining_logs
from keras_albert.pretraining.options import PretrainingOptions
from keras_albert.pretraining.streams import make_datasets
from keras_albert.training.loop import TrainingLoop
from keras_albert.training.phase import Stretches, TrainingPhase
from keras_albert.training.progress import StepProgress
from keras_albert.training.run_directory import RunDirectory

LOG_NAMES = ("loss", "mlm_loss", "sop_loss", "mlm_accuracy", "sop_accuracy")


def evaluate_pretrainer(loop: TrainingLoop, eval_fn, options: PretrainingOptions) -> dict:
    """The held-out logs (`losses.pretraining_logs`) of one pass over `eval_fn`'s batches."""
    sums = loop.evaluate(eval_fn)
    return pretraining_logs(sums, options.sentence_order_loss_weight)


class HeldOutStretches(Stretches):
    """MLM + SOP logs per stretch; the held-out evaluation every `eval_every_steps` (by default
    `checkpoint_every_steps`) and at the last step; `evaluation`: the last stretch's (None
    when it was not evaluated)."""

    def __init__(self, loop: TrainingLoop, eval_fn, options: PretrainingOptions):
        self.loop, self.eval_fn, self.options = loop, eval_fn, options
        self.eval_every = options.eval_every_steps or options.checkpoint_every_steps
        self.evaluation = None

    def logs(self, sums: dict, num_steps: int) -> dict:
        # The mean of the steps' losses; the task losses and accuracies over every prediction.
        logs = {**pretraining_logs(sums, self.options.sentence_order_loss_weight)}
        logs["loss"] = sums["loss"] / num_steps
        if "skipped_steps" in sums:  # float16: steps whose gradients overflowed, not applied
            logs["skipped_steps"] = sums["skipped_steps"]
            logs["loss_scale"] = float(self.loop.optimizer.dynamic_scale.numpy())
        return logs

    def end(self, step: int, index: int, logs: dict, steps_per_second: float | None) -> dict:
        self.evaluation = None
        last = step >= self.options.train_steps
        if self.eval_fn is None or (step % self.eval_every and not last):
            return {}
        self.evaluation = evaluate_pretrainer(self.loop, self.eval_fn, self.options)
        return {f"val_{name}": value for name, value in self.evaluation.items()}


def train_in_stretches(
    loop: TrainingLoop,
    manager,
    options: PretrainingOptions,
    directory: RunDirectory,
    layout,
    masking,
    eval_fn,
    chief: bool,
) -> tuple:
    """From the optimizer's step to `train_steps`, one log row every `log_every_steps` steps
    (at multiples of it, and at the last step); returns the last row, the last evaluation (None
    when the last step was not evaluated), the last stretch's seconds per step and the run's
    steps per second (`StepRate`'s)."""
    start_step = int(loop.optimizer.iterations.numpy())
    columns = ("step", "learning_rate", *LOG_NAMES)
    if hasattr(loop.optimizer, "dynamic_scale"):
        columns += ("skipped_steps", "loss_scale")
    if eval_fn is not None:
        columns += tuple(f"val_{name}" for name in LOG_NAMES)
    progress = []
    if chief and options.verbose:
        progress.append(StepProgress(options.train_steps, names=("loss", "mlm_accuracy")))
    stretches = HeldOutStretches(loop, eval_fn, options)
    phase = TrainingPhase(
        loop,
        manager,
        directory,
        stretches,
        train_steps=options.train_steps,
        stretch_steps=options.log_every_steps,
        checkpoint_every=options.checkpoint_every_steps,
        checkpoint_before_row=True,
        history_columns=columns,
        callbacks=progress,
        chief=chief,
    )
    iterator = loop.iterator(
        lambda context: make_datasets(options, layout, masking, start_step, context)
    )
    row = phase.run(iterator)
    return row, stretches.evaluation, phase.seconds_per_step, phase.steps_per_second
