"""Under a mixed policy the backbone casts its shared weights once a call (`cast_once`): the
count of casts does not grow with the depth, and the results are those of casting per pass."""

import keras
import numpy as np
import pytest
import tensorflow as tf
from keras import ops

from keras_albert import AlbertClassifier
from tests.helpers import random_inputs, tiny_backbone, to_numpy

SHARINGS = [
    dict(num_layers=4),
    dict(num_layers=4, num_groups=2, num_inner_repetitions=2),
    dict(num_layers=4, sharing="attention"),
]


def step_graph(model, inputs):
    """The graph of a traced gradient step."""

    @tf.function
    def step(x):
        with tf.GradientTape() as tape:
            outputs = model(x, training=True)["sequence_output"]
            loss = ops.sum(ops.cast(outputs, "float32") ** 2)
        return tape.gradient(loss, model.trainable_variables)

    return step.get_concrete_function(inputs).graph


def weight_casts(graph) -> int:
    """Casts of a variable's value (the forward pass's)."""
    return sum(
        op.type == "Cast" and op.inputs[0].op.type == "ReadVariableOp"
        for op in graph.get_operations()
    )


def casts_into(tensor) -> int:
    """Casts whose sum `tensor` is (a weight's gradient: the backward pass's casts)."""
    if tensor.op.type == "Cast":
        return 1
    if tensor.op.type in ("Identity", "AddN", "AddV2"):
        return sum(casts_into(t) for t in tensor.op.inputs)
    return 0


@pytest.mark.parametrize("sharing", SHARINGS)
def test_the_shared_weights_are_cast_once_whatever_the_depth(sharing):
    inputs = random_inputs()
    backbone = tiny_backbone(dtype="mixed_bfloat16", **sharing)
    graph = step_graph(backbone, inputs)
    # Per pass, the forward casts would grow by one per weight of a block, and the gradients
    # of the shared ones would be the sum of one cast per pass.
    assert max(casts_into(gradient) for gradient in graph.outputs) == 1
    if sharing.get("sharing", "all") == "all":
        shallow = step_graph(backbone.at_depth(2), inputs)
        assert weight_casts(shallow) == weight_casts(graph) > 0


def per_pass_sequence_output(backbone, inputs):
    """The backbone's layers called one by one, outside its `call`: every pass reads (casts)
    its weights itself, as the backbone did before `cast_once`."""
    x = backbone.embedding(inputs["token_ids"], inputs["segment_ids"])
    for step in backbone.encoder_steps:
        x = step(x, padding_mask=inputs["padding_mask"])
    return x


@pytest.mark.parametrize("sharing", SHARINGS[:2])
def test_the_loss_and_gradients_are_those_of_casting_per_pass(sharing):
    keras.utils.set_random_seed(0)
    inputs = random_inputs()
    backbone = tiny_backbone(dtype="mixed_bfloat16", **sharing)
    variables = [v for v in backbone.trainable_variables if not v.path.startswith("pooler")]
    projection = np.random.default_rng(0).normal(size=(1, 1, 16)).astype("float32")

    def loss_and_gradients(sequence_output_fn):
        with tf.GradientTape() as tape:
            outputs = ops.cast(sequence_output_fn(), "float32")
            loss = ops.sum(outputs * projection)
        return to_numpy(loss), to_numpy(tape.gradient(loss, variables))

    loss, gradients = loss_and_gradients(lambda: backbone(inputs)["sequence_output"])
    expected_loss, expected = loss_and_gradients(lambda: per_pass_sequence_output(backbone, inputs))
    assert loss == expected_loss  # the same casts, computed once
    for variable, actual, wanted in zip(variables, gradients, expected, strict=True):
        assert np.abs(wanted).max() > 0, variable.path  # (the key bias's is 0 but for roundings)
        if variable.path.startswith("embedding") or "layer_norm" in variable.path:
            np.testing.assert_array_equal(actual, wanted, err_msg=variable.path)
        else:
            # A shared weight's gradient is summed over its passes in bfloat16 (float32 before):
            # up to 3 more roundings to 8 bits (2^-9 each) of a sum of 2 or 4 terms.
            np.testing.assert_allclose(
                actual, wanted, rtol=0, atol=4 * 2**-9 * np.abs(wanted).max(), err_msg=variable.path
            )


def test_dropout_draws_new_masks_at_every_call():
    inputs = random_inputs()
    backbone = tiny_backbone(dtype="mixed_bfloat16", dropout=0.3)
    call = tf.function(lambda x: backbone(x, training=True)["sequence_output"])
    for run in (lambda x: backbone(x, training=True)["sequence_output"], call):
        first, second = to_numpy(run(inputs)), to_numpy(run(inputs))
        assert not np.array_equal(first, second)


def test_an_enclosing_stateless_scope_gives_every_weight():
    inputs = random_inputs()
    backbone = tiny_backbone(dtype="mixed_bfloat16")
    other = tiny_backbone(dtype="mixed_bfloat16")
    mapping = [(w, v) for w, v in zip(backbone.weights, other.get_weights(), strict=True)]
    with keras.StatelessScope(state_mapping=mapping):
        outputs = to_numpy(backbone(inputs))["sequence_output"]
    np.testing.assert_array_equal(outputs, to_numpy(other(inputs))["sequence_output"])


def test_fit_trains_the_shared_weights_of_a_mixed_precision_model():
    backbone = tiny_backbone(dtype="mixed_bfloat16")
    model = AlbertClassifier(backbone, num_classes=2, dropout=0.0)
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    model.compile(optimizer=keras.optimizers.SGD(1.0), loss=loss)
    # The weights cast once; not LayerNorm's (read in float32), nor the key bias (it adds the
    # same score to every key of a query: the softmax does not see it, its gradient is 0).
    cast = [
        weight
        for layer in backbone.encoder_layers
        for weight in layer.weights
        if "layer_norm" not in weight.path and not weight.path.endswith("key/bias")
    ]
    before = [weight.numpy() for weight in cast]
    model.fit(random_inputs(), np.array([0, 1, 1]), epochs=1, verbose=0)
    assert len(cast) == 11
    for weight, value in zip(cast, before, strict=True):
        assert weight.dtype == "float32" and not np.array_equal(weight.numpy(), value), weight.path
