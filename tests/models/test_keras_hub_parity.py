"""Parity with keras-hub's AlbertBackbone (an independent Keras implementation)."""

import keras_hub
import numpy as np
import pytest

from keras_albert import AlbertBackbone
from tests.helpers import random_inputs, to_numpy

# keras-hub weight path (inside one block) -> ours; kernels are reshaped, values unchanged.
_BLOCK = {
    "self_attention_layer/query": "attention/query",
    "self_attention_layer/key": "attention/key",
    "self_attention_layer/value": "attention/value",
    "self_attention_layer/attention_output": "attention/output",
    "self_attention_layer_norm": "attention/layer_norm",
    "feedforward_intermediate_dense": "feedforward/intermediate",
    "feedforward_output_dense": "feedforward/output",
    "feedforward_layer_norm": "feedforward/layer_norm",
}
_TOP = {
    "token_embedding": "embedding/token_embedding",
    "position_embedding/embeddings": "embedding/position_embeddings",
    "segment_embedding": "embedding/segment_embedding",
    "embeddings_layer_norm": "embedding/layer_norm",
    "embedding_projection": "embedding/projection",
    "pooled_dense": "pooler",
}


def our_path(keras_hub_path: str) -> str:
    for theirs, ours in _TOP.items():
        if keras_hub_path.startswith(theirs):
            return ours + keras_hub_path[len(theirs) :]
    block, rest = keras_hub_path.split("/", 1)
    group, inner = block.removeprefix("group_").split("_inner_layer_")
    for theirs, ours in _BLOCK.items():
        if rest.startswith(theirs):
            return f"group_{group}_inner_{inner}/{ours}{rest[len(theirs) :]}"
    raise KeyError(keras_hub_path)


@pytest.mark.parametrize(
    "num_layers,num_groups,num_inner_repetitions", [(3, 1, 1), (4, 2, 2), (6, 3, 1)]
)
def test_backbone_matches_keras_hub(num_layers, num_groups, num_inner_repetitions):
    sizes = dict(
        vocabulary_size=80,
        num_layers=num_layers,
        num_heads=4,
        embedding_dim=8,
        hidden_dim=32,
        intermediate_dim=48,
        num_groups=num_groups,
        num_inner_repetitions=num_inner_repetitions,
        max_sequence_length=24,
    )
    reference = keras_hub.models.AlbertBackbone(**sizes)
    ours = AlbertBackbone(**sizes)
    rng = np.random.default_rng(0)
    ours_by_path = {w.path: w for w in ours.weights}
    assert len(ours_by_path) == len(reference.weights)
    for weight in reference.weights:
        value = rng.normal(0, 0.2, weight.shape).astype("float32")
        weight.assign(value)
        target = ours_by_path.pop(our_path(weight.path))
        target.assign(value.reshape(target.shape))
    assert not ours_by_path, f"weights keras-hub has no twin for: {sorted(ours_by_path)}"

    inputs = random_inputs(80, batch_size=3, sequence_length=24, seed=5)
    expected, actual = to_numpy(reference(inputs)), to_numpy(ours(inputs))
    keep = inputs["padding_mask"].astype(bool)
    np.testing.assert_allclose(
        actual["sequence_output"][keep], expected["sequence_output"][keep], atol=1e-5, rtol=0
    )
    np.testing.assert_allclose(
        actual["pooled_output"], expected["pooled_output"], atol=1e-5, rtol=0
    )
