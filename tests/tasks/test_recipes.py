"""The recipes (run_glue.sh, the original README, run_ner), scaled and overridden with one
warmup rule for every task, and the epoch plan."""

import pytest

from keras_albert.finetuning.options import FinetuningOptions
from keras_albert.tasks import recipes
from keras_albert.tasks.classification import reader as glue
from keras_albert.tasks.classification.options import ClassificationOptions
from keras_albert.tasks.classification.task import GENERIC_RECIPE, RECIPES
from keras_albert.tasks.multiple_choice.task import RACE_RECIPE
from keras_albert.tasks.question_answering.task import SQUAD_RECIPE
from keras_albert.tasks.token_classification.task import NER_RECIPE


def test_recipes_are_run_glue_sh_and_scale():
    # google-research/albert run_glue.sh: run_task <task> <warmup> <lr> <steps> <save> <batch>.
    assert RECIPES["SST-2"] == recipes.Recipe(1e-5, 32, 20935, 1256)
    assert RECIPES["MNLI"] == recipes.Recipe(3e-5, 128, 10000, 1000)
    assert RECIPES["STS-B"] == recipes.Recipe(2e-5, 16, 3598, 214)
    assert set(RECIPES) == {task.name for task in glue.TASKS.values()}
    scaled = RECIPES["SST-2"].scaled(0.01)
    assert (scaled.train_steps, scaled.warmup_steps, scaled.batch_size) == (209, 13, 32)
    options = FinetuningOptions(
        "SST-2", "t", "e", "o", preset="albert_base_v2", scale=0.01, warmup_steps=0, batch_size=8
    )
    recipe = recipes.resolve_recipe(options, RECIPES["SST-2"], 1000)
    assert recipe == recipes.Recipe(1e-5, 8, 209, 0)
    generic = FinetuningOptions(
        "generic", "t", "e", "o", preset="albert_base_v2",
        task_options=ClassificationOptions(text_columns=("a",), label_column="b"),
    )  # fmt: skip
    recipe = recipes.resolve_recipe(generic, GENERIC_RECIPE, 100)
    assert recipe == recipes.Recipe(2e-5, 32, 12, 1)  # 3 epochs of ceil(100 / 32) steps
    # About one evaluation per pass over the data; the steps split evenly.
    assert recipes.epoch_plan(209, 32, 67349, None) == (1, 209)
    assert recipes.epoch_plan(800, 32, 2490, None) == (10, 80)
    # The last stretch shorter (after 4, 8, 10); fewer evaluations when the steps run out.
    assert recipes.epoch_plan(10, 4, 100, 3) == (3, 4)
    assert recipes.epoch_plan(150, 4, 100, 4) == (4, 38)
    assert recipes.epoch_plan(10, 4, 100, 6) == (5, 2)
    assert recipes.epoch_plan(3, 4, 100, 5) == (3, 1)
    message = r"`scale` must be a number in \(0, inf\]\. Received: scale=0"
    with pytest.raises(ValueError, match=message):
        RECIPES["RTE"].scaled(0)


def _options(task, **overrides):
    extra = {}
    if task == "generic":
        extra["task_options"] = ClassificationOptions(text_columns=("a",), label_column="b")
    return FinetuningOptions(task, "t", "e", "o", preset="albert_base_v2", **extra, **overrides)


@pytest.mark.parametrize(
    "task, recipe, num_train, train_steps, expected_warmup",
    [
        # run_glue.sh's ratio: SST-2 warms up 1256 of 20935 steps (6%), RTE 200 of 800 (25%).
        ("SST-2", RECIPES["SST-2"], 67349, 800, round(800 * 1256 / 20935)),
        ("RTE", RECIPES["RTE"], 2490, 100, 25),
        ("generic", GENERIC_RECIPE, 1000, 300, 30),  # 10%
        # The epoch recipes' warmup_ratio, whatever the data size says the run would be.
        ("squad_v2", SQUAD_RECIPE, 4, 300, 30),  # 10%
        ("ner", NER_RECIPE, 100, 300, 0),  # run_ner: no warmup
        ("race", RACE_RECIPE, 100, 300, 25),  # 1000 of 12000
    ],
)
def test_train_steps_keep_the_recipes_warmup_fraction(
    task, recipe, num_train, train_steps, expected_warmup
):
    resolved = recipes.resolve_recipe(_options(task, train_steps=train_steps), recipe, num_train)
    assert (resolved.train_steps, resolved.warmup_steps) == (train_steps, expected_warmup)
    # The peak comes early enough for the rate to decay over most of the run.
    assert resolved.warmup_steps <= 0.25 * resolved.train_steps
    # An explicit warmup wins, and is never longer than the run.
    explicit = _options(task, train_steps=train_steps, warmup_steps=7)
    assert recipes.resolve_recipe(explicit, recipe, num_train).warmup_steps == 7
    longer = _options(task, train_steps=5, warmup_steps=50)
    assert recipes.resolve_recipe(longer, recipe, num_train).warmup_steps == 5
    # Without train_steps, the recipe's own warmup (scaled with the run).
    default = recipes.resolve_recipe(_options(task), recipe, num_train)
    if isinstance(recipe, recipes.Recipe):
        assert (default.train_steps, default.warmup_steps) == (
            recipe.train_steps,
            recipe.warmup_steps,
        )
    else:
        assert default.warmup_steps == round(recipe.warmup_ratio * default.train_steps)
