"""Parity with Model Garden's `AlbertEncoder` (tf-models-official on tf_keras, the TensorFlow
ALBERT the speed benchmarks compare with): given our weights by `benchmarks/model_garden.py`,
it computes our sequence and pooled outputs, so the benchmarks time the same computation."""

import numpy as np
import pytest

from benchmarks import model_garden
from tests.helpers import perturbed, random_inputs, tiny_backbone, tiny_config

ATOL = 1e-5


@pytest.mark.parametrize("num_layers", [1, 3])
def test_encoder_with_our_weights_gives_our_outputs(num_layers):
    # Every weight random (biases and γ too), so that a mis-mapped tensor shows; rows of
    # several lengths, so that the padding mask counts.
    ours = perturbed(tiny_backbone(num_layers=num_layers), seed=num_layers)
    theirs = model_garden.albert_encoder(tiny_config(num_layers=num_layers))
    model_garden.copy_weights(ours, theirs)
    inputs = random_inputs(batch_size=4, sequence_length=16)

    expected = ours(inputs, training=False)
    actual = theirs(model_garden.encoder_inputs(inputs), training=False)
    assert len(actual["encoder_outputs"]) == num_layers
    for name in ("sequence_output", "pooled_output"):
        np.testing.assert_allclose(
            np.asarray(actual[name]), np.asarray(expected[name]), atol=ATOL, rtol=0
        )


def test_copy_fails_loudly_where_the_variables_differ():
    # E = H: Model Garden builds no projection, which the table names.
    ours = tiny_backbone(embedding_dim=16)
    theirs = model_garden.albert_encoder(tiny_config(embedding_dim=16))
    with pytest.raises(ValueError, match="only in the table.*embedding_projection"):
        model_garden.copy_weights(ours, theirs)


def test_only_the_architecture_model_garden_builds_is_accepted():
    with pytest.raises(ValueError, match="num_groups=1"):
        model_garden.albert_encoder(tiny_config(num_layers=4, num_groups=2))
    with pytest.raises(ValueError, match="gelu_approximate"):
        model_garden.albert_encoder(tiny_config(activation="relu"))
