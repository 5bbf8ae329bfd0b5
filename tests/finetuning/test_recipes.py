"""The run_glue.sh recipes, scaled and overridden, and the epoch plan."""

import pytest

from keras_albert.finetuning import recipes
from keras_albert.finetuning.glue import reader as glue
from keras_albert.finetuning.options import FinetuningOptions


def test_recipes_are_run_glue_sh_and_scale():
    # google-research/albert run_glue.sh: run_task <task> <warmup> <lr> <steps> <save> <batch>.
    assert recipes.RECIPES["SST-2"] == recipes.Recipe(1e-5, 32, 20935, 1256)
    assert recipes.RECIPES["MNLI"] == recipes.Recipe(3e-5, 128, 10000, 1000)
    assert recipes.RECIPES["STS-B"] == recipes.Recipe(2e-5, 16, 3598, 214)
    assert set(recipes.RECIPES) == {task.name for task in glue.TASKS.values()}
    scaled = recipes.RECIPES["SST-2"].scaled(0.01)
    assert (scaled.train_steps, scaled.warmup_steps, scaled.batch_size) == (209, 13, 32)
    options = FinetuningOptions(
        "SST-2", "t", "e", "o", preset="albert_base_v2", scale=0.01, warmup_steps=0, batch_size=8
    )
    recipe = recipes.resolve_recipe(options, recipes.RECIPES["SST-2"], 1000)
    assert recipe == recipes.Recipe(1e-5, 8, 209, 0)
    generic = FinetuningOptions(
        "generic", "t", "e", "o", preset="albert_base_v2", text_columns=("a",), label_column="b"
    )
    recipe = recipes.resolve_recipe(generic, recipes.GENERIC_RECIPE, 100)
    assert recipe == recipes.Recipe(2e-5, 32, 12, 1)  # 3 epochs of ceil(100 / 32) steps
    # About one evaluation per pass over the data; the steps split evenly.
    assert recipes.epoch_plan(209, 32, 67349, None) == (1, 209)
    assert recipes.epoch_plan(800, 32, 2490, None) == (10, 80)
    assert recipes.epoch_plan(10, 4, 100, 3) == (3, 4)
    message = r"`scale` must be a number in \(0, inf\]\. Received: scale=0"
    with pytest.raises(ValueError, match=message):
        recipes.RECIPES["RTE"].scaled(0)
