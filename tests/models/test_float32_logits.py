"""Under a mixed policy every head computes its logits in float32 (`layers/logits.py`): the
16-bit features times the unrounded float32 weights, in float32, checked against numpy.
Computed at the compute dtype, the kernel and the logits were rounded to bfloat16 (8 bits of
mantissa): off by ~1e-3 of their size, which these tolerances do not allow."""

import keras
import numpy as np
import pytest
from keras import ops

from keras_albert import (
    AlbertClassifier,
    AlbertPretrainer,
    AlbertQuestionAnswerer,
    AlbertTokenClassifier,
)
from tests.helpers import random_inputs, tiny_backbone, to_numpy


def randomize(*layers):
    """Biases of the size of real logits (zeros would hide a rounding of the sum)."""
    rng = np.random.default_rng(7)
    for layer in layers:
        layer.set_weights([rng.normal(0, 1, w.shape) * (4 if w.ndim == 1 else 1)
                           for w in layer.get_weights()])  # fmt: skip


def float32_logits(features, *weights):
    """numpy: the features as given (16-bit, exactly representable) times float32 weights."""
    kernel, bias = (np.asarray(w, np.float64) for w in weights)
    return np.asarray(features, np.float64) @ kernel + bias


def assert_float32_logits(actual, expected):
    assert actual.dtype == np.float32
    np.testing.assert_allclose(actual, expected, rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("policy", ["mixed_bfloat16", "mixed_float16"])
def test_classifier_and_token_classifier_logits_are_float32(policy):
    inputs = random_inputs()
    backbone = tiny_backbone(dtype=policy)
    features = to_numpy(backbone(inputs))
    assert features["pooled_output"].dtype != np.float32  # the features are 16-bit
    models = ((AlbertClassifier(backbone, num_classes=3), "pooled_output"),
              (AlbertTokenClassifier(backbone, num_classes=5), "sequence_output"))  # fmt: skip
    for model, name in models:
        randomize(model.output_dense)
        expected = float32_logits(features[name], *model.output_dense.get_weights())
        assert_float32_logits(to_numpy(model(inputs)), expected)


def test_span_logits_are_float32():
    inputs = random_inputs()
    backbone = tiny_backbone(dtype="mixed_bfloat16")
    model = AlbertQuestionAnswerer(backbone)
    randomize(model.span_dense)
    outputs = to_numpy(model(inputs))
    expected = float32_logits(to_numpy(backbone(inputs))["sequence_output"],
                              *model.span_dense.get_weights())  # fmt: skip
    real = inputs["padding_mask"] == 1
    assert_float32_logits(outputs["start_logits"][real], expected[..., 0][real])
    assert_float32_logits(outputs["end_logits"][real], expected[..., 1][real])


def test_pretrainer_mlm_and_sop_logits_are_float32_with_the_tied_table_unrounded():
    inputs = random_inputs(num_masked=4)
    backbone = tiny_backbone(dtype="mixed_bfloat16")
    model = AlbertPretrainer(backbone)
    head = model.masked_lm_head
    randomize(model.sentence_order_head.dense)
    head.output_bias.assign(np.random.default_rng(3).normal(0, 4, head.output_bias.shape))
    outputs = to_numpy(model(inputs))
    features = backbone({k: v for k, v in inputs.items() if k != "mask_positions"})
    # The head's transform, step by step, in its own (16-bit) policy.
    gathered = ops.take_along_axis(features["sequence_output"],
                                   inputs["mask_positions"][..., None], axis=1)  # fmt: skip
    transformed = to_numpy(head.layer_norm(head.activation_function(head.dense(gathered))))
    assert transformed.dtype != np.float32
    table = keras.ops.convert_to_numpy(head.token_embedding.embeddings)
    assert table.dtype == np.float32
    expected = float32_logits(transformed, table.T, to_numpy(head.output_bias))
    assert_float32_logits(outputs["mlm_logits"], expected)
    expected = float32_logits(to_numpy(features["pooled_output"]),
                              *model.sentence_order_head.dense.get_weights())  # fmt: skip
    assert_float32_logits(outputs["sop_logits"], expected)
