"""What a resumable training checkpoint holds: the model, the optimizer (its `iterations` is the
step, so the schedule resumes with it), the state of every random generator of the model and
a driver's own progress.

Keras 3 keeps a dropout layer's random state in a `SeedGenerator` variable that
`tf.train.Checkpoint(model=...)` does not reach (it is not a weight); without it a resumed run
would draw the dropout masks of step 0 again, and end elsewhere than an uninterrupted one.
Under a `tf.distribute` strategy each state is one mirrored variable (every replica advances it
alike, and folds its own id into what it draws: `layers.dropout`): the checkpoint holds it once,
a restore sets every copy.
"""

from __future__ import annotations

import json

import keras
import tensorflow as tf

# The name of the seed generators' states in a checkpoint (one per dropout layer, model order).
SEEDS = "seed_generators"


def training_checkpoint(
    model: keras.Model, optimizer: keras.optimizers.Optimizer, **extra
) -> tf.train.Checkpoint:
    """`tf.train.Checkpoint` of `model`, `optimizer`, the model's seed generators' states and
    `extra` (trackable objects, e.g. a `JsonState`)."""
    seeds = [v for v in model.variables if v.name == "seed_generator_state"]
    return tf.train.Checkpoint(model=model, optimizer=optimizer, **{SEEDS: seeds}, **extra)


def restore_training_checkpoint(checkpoint: tf.train.Checkpoint, path: str) -> None:
    """Restores `path` into `checkpoint` (a `training_checkpoint`), every object of it matched:
    a checkpoint of another model fails (`AssertionError`).

    A checkpoint written before pretraining's held the seed generators still restores, with one
    printed line: the generators keep their fresh states, so the dropout masks from there on
    differ from an uninterrupted run's (with dropout 0 the model has none: nothing differs).
    """
    children = tf.train.TrackableView.children(checkpoint)
    if children.get(SEEDS) and not any(
        name.startswith(f"{SEEDS}/") for name, _ in tf.train.list_variables(path)
    ):
        print(
            f"keras_albert: {path} holds no dropout state (written by an older keras_albert): "
            "the resumed run draws other dropout masks than an uninterrupted run would."
        )
        # The checkpoint as it was written (`save_counter` is a property, not an argument).
        written = {
            key: child for key, child in children.items() if key not in (SEEDS, "save_counter")
        }
        checkpoint = tf.train.Checkpoint(**written)
    checkpoint.restore(path).assert_existing_objects_matched()


class JsonState(tf.Module):
    """A JSON-able value saved in a checkpoint with the weights it belongs to (one string
    variable on the CPU: every device type can hold it, and it is written with the checkpoint,
    never apart from it).

        state = JsonState()
        checkpoint = training_checkpoint(model, optimizer, progress=state)
        state.set({"best": 0.9}); manager.save()
        ...; checkpoint.restore(path); state.get()  # {"best": 0.9}
    """

    def __init__(self):
        super().__init__(name="json_state")
        with tf.device("CPU:0"):
            self.text = tf.Variable("", dtype=tf.string, trainable=False)

    def set(self, value) -> None:
        # allow_nan: a best value of -inf (nothing evaluated yet) round-trips.
        self.text.assign(json.dumps(value, allow_nan=True))

    def get(self):
        text = self.text.numpy().decode("utf-8")
        return json.loads(text) if text else None
