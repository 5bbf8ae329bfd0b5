"""Depth-elastic fine-tuning: one model trained to serve at several depths of its shared block.

ALBERT applies one set of block weights `num_layers` times, so the same fine-tuned weights can
serve with fewer passes (`AlbertBackbone.at_depth`, `--num-layers` at export). Fine-tuned at
full depth only, the shallower outputs are not what the head learned. `enable_elastic_depth`
adds, to the training loss, the task loss of the same classifier head on the pooled output of
each depth in `depths` (the mean over the full depth and these), so that every step trains the
shared weights and the head for all of them. Evaluation, checkpoints and exports are untouched:
the model stays a plain `AlbertClassifier` of full depth.

With `sharing="all"` and one group, depth k runs the first k passes of the full-depth schedule,
so the shallower depths reuse each other's passes: the extra cost of a step is one forward and
backward pass up to the deepest of `depths`. With groups the schedules differ (see
`AlbertBackbone.at_depth`) and each depth runs its own passes.

Hooks: `finetune` trains through `elastic_replica_fn` (the training loop's step);
`enable_elastic_depth(model, depths)` does the same for a user's compiled `model.fit`.
"""

from __future__ import annotations

import keras

from keras_albert.tasks.classification.model import AlbertClassifier


def parse_depths(text: str) -> tuple[int, ...]:
    """Comma-separated depths ("6,3,1") as a tuple of ints (the `--elastic-depths` flag)."""
    try:
        return tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise ValueError(
            f"`elastic_depths` must be comma-separated integers. Received: elastic_depths={text!r}"
        ) from None


def check_depths(model: AlbertClassifier, depths) -> tuple[int, ...]:
    """`depths` sorted and checked against `model`'s backbone (1 ≤ k < trained depth)."""
    if not isinstance(model, AlbertClassifier):
        raise ValueError(
            "`model` must be an AlbertClassifier for elastic-depth training. "
            f"Received: model={type(model).__name__}"
        )
    depths = tuple(depths)
    if not depths:
        raise ValueError(f"`elastic_depths` must name at least one depth. Received: {depths!r}")
    backbone = model.backbone
    for depth in depths:
        backbone.check_depth(depth)
        if depth == backbone.albert_config.num_layers:
            raise ValueError(
                "`elastic_depths` must be shallower than the trained depth (which always "
                f"trains). Received: elastic_depths={depths!r}"
            )
    if len(set(depths)) != len(depths):
        raise ValueError(f"`elastic_depths` must not repeat a depth. Received: {depths!r}")
    return tuple(sorted(depths))


def elastic_logits(model: AlbertClassifier, inputs: dict, depths, training=None) -> list:
    """The head's logits (float32) at each of `depths`, in order, from `inputs`."""
    backbone = model.backbone
    padding_mask = inputs["padding_mask"]
    x = backbone.embedding(inputs["token_ids"], inputs["segment_ids"], training=training)
    # Hidden states after each prefix of a schedule, keyed by the ids of the blocks applied,
    # so that depths sharing a prefix of passes run it once.
    computed = {(): x}
    logits = []
    for depth in depths:
        steps = backbone.encoder_steps_at_depth(depth)
        done = max(n for n in range(len(steps) + 1) if _key(steps[:n]) in computed)
        x = computed[_key(steps[:done])]
        for n in range(done, len(steps)):
            x = steps[n](x, padding_mask=padding_mask, training=training)
            computed[_key(steps[: n + 1])] = x
        pooled = backbone.pooler(x[:, 0, :])  # (batch, hidden_dim)
        head = model.output_dense(model.output_dropout(pooled, training=training))
        logits.append(keras.ops.cast(head, "float32"))  # (batch, num_classes)
    return logits


def _key(steps) -> tuple:
    return tuple(id(step) for step in steps)


def enable_elastic_depth(model: AlbertClassifier, depths) -> tuple[int, ...]:
    """Makes `model.fit` also train `depths` (call after `model.compile`); returns them sorted.

    The training loss becomes the mean of the compiled loss over the full depth and each of
    `depths`; the compiled metrics and evaluation stay those of the full depth.
    """
    depths = check_depths(model, depths)
    if getattr(model, "loss", None) is None:
        raise ValueError("`model` must be compiled (with a loss) before enable_elastic_depth.")
    full_depth_loss = model.compute_loss
    loss_function = keras.losses.get(model.loss)

    def compute_loss(x=None, y=None, y_pred=None, sample_weight=None, training=True):
        loss = full_depth_loss(x, y, y_pred, sample_weight, training=training)
        if not training:
            return loss
        for logits in elastic_logits(model, x, depths, training=True):
            loss = loss + loss_function(y, logits, sample_weight=sample_weight)
        return loss / (1 + len(depths))

    # An instance attribute: Keras's train step calls `self.compute_loss`; the saved model
    # (its config and weights) does not change.
    model.compute_loss = compute_loss
    model.elastic_depths = depths
    return depths


def elastic_replica_fn(objective, model: AlbertClassifier, depths):
    """The training loop's `replica_fn` for `objective` (a `training.objective.Objective`)
    that also trains `depths`: the loss is the mean of the objective's loss over the full depth
    and each of `depths`; the metrics stay those of the full depth."""
    depths = check_depths(model, depths)

    def replica_fn(model, batch, training):
        loss, sums = objective.replica_fn(model, batch, training)
        if not training:
            return loss, sums
        x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(batch)
        for logits in elastic_logits(model, x, depths, training=True):
            loss = loss + objective.loss_share(objective.loss, y, logits, sample_weight)
        return loss / (1 + len(depths)), sums

    return replica_fn
