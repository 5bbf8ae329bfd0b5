"""The fine-tuning recipes of google-research/albert `run_glue.sh`, scaled and overridden, and
the plan of epochs (evaluations) over a run's train steps."""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING

from keras_albert.validation import require_number

if TYPE_CHECKING:
    from keras_albert.text.glue import TaskSpec
    from keras_albert.training.options import FinetuningOptions


@dataclasses.dataclass(frozen=True)
class Recipe:
    """A task's fine-tuning hyperparameters, as `run_glue.sh` passes them to run_classifier."""

    learning_rate: float
    batch_size: int
    train_steps: int
    warmup_steps: int

    def scaled(self, scale: float) -> Recipe:
        """Train and warmup steps times `scale` (at least 1 train step); the rest unchanged."""
        require_number("scale", scale, 0, exclusive_minimum=True)
        train_steps = max(1, round(self.train_steps * scale))
        warmup_steps = min(train_steps, round(self.warmup_steps * scale))
        return dataclasses.replace(self, train_steps=train_steps, warmup_steps=warmup_steps)


# google-research/albert run_glue.sh: `run_task <task> <warmup> <lr> <train_step> <save> <batch>`.
RECIPES: dict[str, Recipe] = {
    "SST-2": Recipe(1e-5, 32, 20935, 1256),
    "MNLI": Recipe(3e-5, 128, 10000, 1000),
    "CoLA": Recipe(1e-5, 16, 5336, 320),
    "QNLI": Recipe(1e-5, 32, 33112, 1986),
    "QQP": Recipe(5e-5, 128, 14000, 1000),
    "RTE": Recipe(3e-5, 32, 800, 200),
    "STS-B": Recipe(2e-5, 16, 3598, 214),
    "MRPC": Recipe(2e-5, 32, 800, 200),
}
# Not in run_glue.sh: BERT's usual 3 epochs at 2e-5, batch 32, 10% warmup (steps are set
# from the training file's size when the recipe is used).
GENERIC_RECIPE = Recipe(2e-5, 32, 0, 0)
GENERIC_EPOCHS = 3
# run_glue.sh's --max_seq_length.
ORIGINAL_SEQUENCE_LENGTH = 512


def resolve_recipe(options: FinetuningOptions, task: TaskSpec, num_train: int) -> Recipe:
    """The run_glue.sh recipe, scaled, with the options' overrides applied."""
    if task.name in RECIPES:
        recipe = RECIPES[task.name]
    else:
        steps = GENERIC_EPOCHS * math.ceil(num_train / GENERIC_RECIPE.batch_size)
        recipe = dataclasses.replace(
            GENERIC_RECIPE, train_steps=steps, warmup_steps=round(0.1 * steps)
        )
    recipe = recipe.scaled(options.scale)
    overrides = {
        name: getattr(options, name)
        for name in ("learning_rate", "batch_size", "train_steps", "warmup_steps")
        if getattr(options, name) is not None
    }
    recipe = dataclasses.replace(recipe, **overrides)
    if recipe.warmup_steps > recipe.train_steps:
        recipe = dataclasses.replace(recipe, warmup_steps=recipe.train_steps)
    return recipe


def epoch_plan(train_steps: int, batch_size: int, num_train: int, epochs: int | None):
    """(epochs, steps_per_epoch): about one epoch per pass over the data unless `epochs`."""
    if epochs is None:
        steps_per_pass = max(1, math.ceil(num_train / batch_size))
        epochs = max(1, round(train_steps / steps_per_pass))
    epochs = min(epochs, train_steps)
    return epochs, math.ceil(train_steps / epochs)
