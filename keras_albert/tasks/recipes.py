"""Fine-tuning recipes (each task's numbers are in its `defaults.py`), scaled and overridden,
and the plan of evaluations over a run's train steps."""

from __future__ import annotations

import dataclasses
import math

from keras_albert.validation import require_number


@dataclasses.dataclass(frozen=True)
class Recipe:
    """A task's fine-tuning hyperparameters, as `run_glue.sh` passes them to run_classifier."""

    learning_rate: float
    batch_size: int
    train_steps: int
    warmup_steps: int

    @property
    def warmup_fraction(self) -> float:
        """The share of the train steps spent warming up."""
        return self.warmup_steps / self.train_steps

    def scaled(self, scale: float) -> Recipe:
        """Train and warmup steps times `scale` (at least 1 train step); the rest unchanged."""
        require_number("scale", scale, 0, exclusive_minimum=True)
        train_steps = max(1, round(self.train_steps * scale))
        warmup_steps = min(train_steps, round(self.warmup_steps * scale))
        return dataclasses.replace(self, train_steps=train_steps, warmup_steps=warmup_steps)


@dataclasses.dataclass(frozen=True)
class EpochRecipe:
    """A recipe given in passes over the training data (the original SQuAD README, Hugging
    Face `run_ner`): `for_examples(n)` turns it into steps, `epochs × ceil(n / batch_size)`,
    and warmup steps `round(warmup_ratio × steps)`."""

    learning_rate: float
    batch_size: int
    epochs: float
    warmup_ratio: float

    def for_examples(self, num_train: int) -> Recipe:
        steps = max(1, round(self.epochs * math.ceil(num_train / self.batch_size)))
        return Recipe(self.learning_rate, self.batch_size, steps, round(self.warmup_ratio * steps))


def resolve_recipe(options, recipe: Recipe | EpochRecipe, num_train: int) -> Recipe:
    """The task's `recipe` (in steps for `num_train` training examples, counted with the
    batch size the run uses), scaled by `options.scale`, with the options' overrides applied.

    One warmup rule for every task: the warmup is the recipe's fraction of the run (`run_glue.sh`'s
    ratio per GLUE task, the epoch recipes' `warmup_ratio`), also when `train_steps` sets the
    run's length; an explicit `warmup_steps` wins."""
    if isinstance(recipe, EpochRecipe):
        if options.batch_size is not None:
            recipe = dataclasses.replace(recipe, batch_size=options.batch_size)
        warmup_fraction = recipe.warmup_ratio
        recipe = recipe.for_examples(num_train)
    else:
        warmup_fraction = recipe.warmup_fraction
    recipe = recipe.scaled(options.scale)
    if options.train_steps is not None:
        recipe = dataclasses.replace(
            recipe,
            train_steps=options.train_steps,
            warmup_steps=round(warmup_fraction * options.train_steps),
        )
    overrides = {
        name: getattr(options, name)
        for name in ("learning_rate", "batch_size", "warmup_steps")
        if getattr(options, name) is not None
    }
    recipe = dataclasses.replace(recipe, **overrides)
    if recipe.warmup_steps > recipe.train_steps:
        recipe = dataclasses.replace(recipe, warmup_steps=recipe.train_steps)
    return recipe


def epoch_plan(train_steps: int, batch_size: int, num_train: int, epochs: int | None):
    """(epochs, steps_per_epoch): an evaluation after every `steps_per_epoch` steps and after
    the last of `train_steps`, the last stretch shorter when they do not divide: the run
    trains exactly `train_steps` (10 steps, 3 epochs: evaluations after 4, 8 and 10).

    About one epoch per pass over the data unless `epochs`. Fewer epochs than asked when
    stretches of `ceil(train_steps / epochs)` use the steps up sooner (10 steps, 6 epochs:
    5 stretches of 2)."""
    if epochs is None:
        steps_per_pass = max(1, math.ceil(num_train / batch_size))
        epochs = max(1, round(train_steps / steps_per_pass))
    steps_per_epoch = math.ceil(train_steps / min(epochs, train_steps))
    return math.ceil(train_steps / steps_per_epoch), steps_per_epoch
