"""Parity with Hugging Face transformers' ALBERT (PyTorch, CPU) given the same weights."""

import numpy as np
import pytest
import transformers

from keras_albert import AlbertBackbone, AlbertConfig, AlbertPretrainer
from keras_albert.convert.huggingface import hf_weights_from_model, load_hf_weights
from tests.convert.hf_reference import (
    ATOL,
    CONFIGS,
    config_from_hf,
    hf_forward,
    hf_model,
    state_dict_numpy,
)
from tests.helpers import random_inputs, to_numpy


def assert_close_on_real_tokens(ours, theirs, padding_mask):
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    keep = padding_mask.astype(bool)
    np.testing.assert_allclose(ours[keep], theirs[keep], atol=ATOL, rtol=0)


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_backbone_matches_hf_albert_model(name):
    values = CONFIGS[name]
    reference = hf_model(transformers.AlbertModel, values)
    ours = AlbertBackbone.from_albert_config(config_from_hf(values))
    load_hf_weights(ours, state_dict_numpy(reference))

    inputs = random_inputs(values["vocab_size"], batch_size=4, sequence_length=20, seed=1)
    expected = hf_forward(reference, inputs)
    actual = to_numpy(ours(inputs))
    assert_close_on_real_tokens(
        actual["sequence_output"], expected.last_hidden_state.numpy(), inputs["padding_mask"]
    )
    np.testing.assert_allclose(
        actual["pooled_output"], expected.pooler_output.numpy(), atol=ATOL, rtol=0
    )


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_pretrainer_matches_hf_albert_for_pretraining(name):
    values = CONFIGS[name]
    reference = hf_model(transformers.AlbertForPreTraining, values)
    ours = AlbertPretrainer(AlbertBackbone.from_albert_config(config_from_hf(values)))
    load_hf_weights(ours, state_dict_numpy(reference))

    inputs = random_inputs(values["vocab_size"], batch_size=3, sequence_length=16, num_masked=4)
    expected = hf_forward(reference, inputs)
    actual = to_numpy(ours(inputs))
    # HF predicts every position; ours only the masked ones: gather HF's at the same positions.
    hf_mlm = np.take_along_axis(
        expected.prediction_logits.numpy(), inputs["mask_positions"][..., None], axis=1
    )
    np.testing.assert_allclose(actual["mlm_logits"], hf_mlm, atol=ATOL, rtol=0)
    np.testing.assert_allclose(actual["sop_logits"], expected.sop_logits.numpy(), atol=ATOL, rtol=0)


def test_base_sized_pretrainer_with_random_weights_matches_hf_with_padding():
    values = transformers.AlbertConfig(hidden_act="gelu_new").to_dict()  # HF default = xxlarge
    values.update(
        hidden_size=768,
        num_attention_heads=12,
        intermediate_size=3072,
        num_hidden_layers=12,
        vocab_size=30000,
    )
    values.pop("attn_implementation", None)
    # Every parameter random (LayerNorm gamma/beta and biases too, not HF's 1/0 init). Scale
    # 0.05 keeps float32 rounding over 12 layers of width 768 (~3e-6 here) under ATOL; at 0.1
    # the attention saturates and rounding reaches ~3e-5.
    reference = hf_model(transformers.AlbertForPreTraining, values, scale=0.05)
    config = AlbertConfig.from_hf_config(values)
    assert config == AlbertConfig(vocabulary_size=30000)  # the base shape, as a preset has
    ours = AlbertPretrainer(AlbertBackbone.from_albert_config(config))
    load_hf_weights(ours, state_dict_numpy(reference))

    inputs = random_inputs(30000, batch_size=2, sequence_length=64, num_masked=8, seed=3)
    inputs["padding_mask"][1, 40:] = 0
    inputs["token_ids"][1, 40:] = 0
    inputs["mask_positions"][1] = np.sort(inputs["mask_positions"][1] % 39 + 1)
    expected = hf_forward(reference, inputs)
    expected_backbone = hf_forward(reference.albert, inputs)
    backbone_inputs = {k: v for k, v in inputs.items() if k != "mask_positions"}
    actual = to_numpy(ours(inputs))
    actual_backbone = to_numpy(ours.backbone(backbone_inputs))
    assert_close_on_real_tokens(
        actual_backbone["sequence_output"],
        expected_backbone.last_hidden_state.numpy(),
        inputs["padding_mask"],
    )
    np.testing.assert_allclose(
        actual_backbone["pooled_output"], expected_backbone.pooler_output.numpy(), atol=ATOL
    )
    hf_mlm = np.take_along_axis(
        expected.prediction_logits.numpy(), inputs["mask_positions"][..., None], axis=1
    )
    assert hf_mlm.std() > 0.1 and np.abs(expected.sop_logits.numpy()).max() > 0.1
    np.testing.assert_allclose(actual["mlm_logits"], hf_mlm, atol=ATOL, rtol=0)
    np.testing.assert_allclose(actual["sop_logits"], expected.sop_logits.numpy(), atol=ATOL, rtol=0)


def test_weights_written_back_under_hf_names_are_identical():
    values = CONFIGS["groups_and_inner_repetitions"]
    reference = hf_model(transformers.AlbertForPreTraining, values)
    tensors = state_dict_numpy(reference)
    ours = AlbertPretrainer(AlbertBackbone.from_albert_config(config_from_hf(values)))
    load_hf_weights(ours, tensors)
    written = hf_weights_from_model(ours)
    tied = {"predictions.decoder.weight", "predictions.decoder.bias"}
    assert set(written) == set(tensors) - tied
    for name, value in written.items():
        np.testing.assert_array_equal(value, tensors[name], err_msg=name)


def test_loading_reports_missing_unused_and_misshapen_tensors():
    values = CONFIGS["gelu_new"]
    tensors = state_dict_numpy(hf_model(transformers.AlbertModel, values))
    ours = AlbertBackbone.from_albert_config(config_from_hf(values))
    before = [w.numpy().copy() for w in ours.weights]

    broken = dict(tensors)
    del broken["pooler.weight"]
    broken["encoder.surprise.weight"] = np.zeros(3, "float32")
    broken["embeddings.LayerNorm.weight"] = np.zeros(5, "float32")
    with pytest.raises(ValueError) as error:
        load_hf_weights(ours, broken)
    message = str(error.value)
    assert "missing tensor 'pooler.weight'" in message
    assert "unused tensor 'encoder.surprise.weight'" in message
    assert "shape mismatch for 'embeddings.LayerNorm.weight': (5,)" in message
    # Nothing was half-loaded.
    for weight, value in zip(ours.weights, before, strict=True):
        np.testing.assert_array_equal(weight.numpy(), value)


def test_untied_decoder_is_refused():
    values = CONFIGS["gelu_new"]
    tensors = state_dict_numpy(hf_model(transformers.AlbertForPreTraining, values))
    tensors["predictions.decoder.weight"] = tensors["predictions.decoder.weight"] + 1.0
    ours = AlbertPretrainer(AlbertBackbone.from_albert_config(config_from_hf(values)))
    with pytest.raises(ValueError, match="must equal its tied twin"):
        load_hf_weights(ours, tensors)
