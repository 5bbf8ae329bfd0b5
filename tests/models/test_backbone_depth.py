"""Depth-elastic backbones: K passes of the shared block, against NumPy; dtype policy read-back."""

import keras
import numpy as np
import pytest

from keras_albert import AlbertBackbone, AlbertClassifier
from tests.helpers import random_inputs, tiny_backbone, to_numpy
from tests.layers.test_layers import gelu_tanh, layer_norm, numpy_attention
from tests.models.test_backbone import randomize


def dense(x, layer):
    return x @ layer.kernel.numpy() + layer.bias.numpy()


def numpy_block(block, x, padding_mask):
    """One post-LN block written from its definition: attention half, then FFN half."""
    x = numpy_attention(block.attention, x, padding_mask)
    feedforward = block.feedforward
    inner = gelu_tanh(dense(x, feedforward.intermediate_dense))
    ln = feedforward.layer_norm
    return layer_norm(x + dense(inner, feedforward.output_dense), ln.gamma.numpy(), ln.beta.numpy())


def numpy_backbone(backbone, inputs, schedule):
    """The backbone in NumPy, applying the blocks named by `schedule` (indices) in order."""
    embedding = backbone.embedding
    length = inputs["token_ids"].shape[1]
    x = (
        embedding.token_embedding.embeddings.numpy()[inputs["token_ids"]]
        + embedding.segment_embedding.embeddings.numpy()[inputs["segment_ids"]]
        + embedding.position_embeddings.numpy()[:length]
    )
    ln = embedding.layer_norm
    x = dense(layer_norm(x, ln.gamma.numpy(), ln.beta.numpy()), embedding.projection)
    blocks = backbone.encoder_layers
    for index in schedule:
        x = numpy_block(blocks[index], x, inputs["padding_mask"])
    return {"sequence_output": x, "pooled_output": np.tanh(dense(x[:, 0], backbone.pooler))}


@pytest.fixture(scope="module")
def inputs():
    return random_inputs()


@pytest.fixture(scope="module")
def backbone():
    model = tiny_backbone(num_layers=4)
    # Scale 0.3 so that every pass changes the output by order one (a skipped or repeated
    # pass cannot hide under the tolerance).
    randomize(model, 0.3)
    return model


@pytest.mark.parametrize("depth", [1, 2, 4])
def test_k_passes_are_k_applications_of_the_shared_block(backbone, inputs, depth):
    shallower = backbone.at_depth(depth)
    assert shallower.albert_config.num_layers == depth
    assert shallower.count_params() == backbone.count_params()
    actual = to_numpy(shallower(inputs))
    expected = numpy_backbone(backbone, inputs, [0] * depth)
    for name in ("sequence_output", "pooled_output"):
        np.testing.assert_allclose(actual[name], expected[name], atol=1e-4, rtol=0)
    # The steps of that depth are the shared block object, `depth` times.
    steps = backbone.encoder_steps_at_depth(depth)
    assert len(steps) == depth and all(step is backbone.encoder_layers[0] for step in steps)


def test_depths_differ_and_full_depth_is_the_model(backbone, inputs):
    full = to_numpy(backbone(inputs))["pooled_output"]
    np.testing.assert_allclose(to_numpy(backbone.at_depth(4)(inputs))["pooled_output"], full)
    one, two = (to_numpy(backbone.at_depth(k)(inputs))["pooled_output"] for k in (1, 2))
    assert np.abs(one - two).max() > 0.05 and np.abs(two - full).max() > 0.05


def test_at_depth_copies_the_weights(backbone, inputs):
    shallower = backbone.at_depth(2)
    before = to_numpy(backbone(inputs))["pooled_output"]
    shallower.pooler.bias.assign(shallower.pooler.bias + 1.0)
    np.testing.assert_array_equal(to_numpy(backbone(inputs))["pooled_output"], before)


def test_groups_keep_every_group_in_order(inputs):
    # 4 layers, 2 groups of 2 inner blocks: depth 2 runs group 0 once, then group 1 once.
    backbone = tiny_backbone(num_layers=4, num_groups=2, num_inner_repetitions=2)
    randomize(backbone, 0.3)
    blocks = backbone.encoder_layers
    assert backbone.encoder_steps_at_depth(2) == [blocks[0], blocks[1], blocks[2], blocks[3]]
    actual = to_numpy(backbone.at_depth(2)(inputs))["pooled_output"]
    expected = numpy_backbone(backbone, inputs, [0, 1, 2, 3])["pooled_output"]
    np.testing.assert_allclose(actual, expected, atol=1e-4, rtol=0)


@pytest.mark.parametrize(
    "changes, depth, message",
    [
        ({}, 0, "integer >= 1. Received: num_layers=0"),
        ({}, 5, "at most the trained depth num_layers=4. Received: num_layers=5"),
        ({}, 2.0, "must be an integer. Received: num_layers=2.0"),
        ({"num_groups": 2}, 3, "multiple of num_groups=2"),
        ({"sharing": "none"}, 2, "sharing='none'. Received: num_layers=2"),
    ],
)
def test_bad_depths_are_clear_errors(changes, depth, message):
    backbone = tiny_backbone(num_layers=4, **changes)
    with pytest.raises(ValueError) as error:
        backbone.at_depth(depth)
    assert message in str(error.value) and f"Received: num_layers={depth!r}" in str(error.value)


def test_dtype_policy_reads_back_and_survives_get_config():
    backbone = tiny_backbone(dtype="mixed_bfloat16")
    assert backbone.dtype_policy.name == "mixed_bfloat16"
    assert AlbertBackbone.from_config(backbone.get_config()).dtype_policy.name == "mixed_bfloat16"
    # The head's dropout takes the backbone's policy; its logits are float32 (layers/logits.py).
    classifier = AlbertClassifier(backbone, num_classes=2)
    assert classifier.output_dropout.dtype_policy.name == "mixed_bfloat16"
    assert classifier.output_dense.dtype_policy.name == "float32"
    assert keras.ops.convert_to_numpy(classifier(random_inputs())).dtype == np.float32
    assert tiny_backbone().dtype_policy.name == "float32"
