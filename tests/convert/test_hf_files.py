"""Hugging Face directories both ways: files → ours → equal outputs; ours → from_pretrained."""

import os
import pathlib

import numpy as np
import pytest
import safetensors.numpy as safetensors_numpy
import torch
import transformers

from keras_albert import AlbertBackbone, AlbertClassifier, AlbertPretrainer
from keras_albert.convert import load_checkpoint, save_checkpoint
from tests.convert.hf_reference import ATOL, CONFIGS, hf_forward, hf_model
from tests.helpers import random_inputs, to_numpy

VALUES = CONFIGS["groups_and_inner_repetitions"]
REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]


def real_tokens(values, padding_mask):
    return np.asarray(values)[padding_mask.astype(bool)]


def compare(kind, ours, reference, inputs):
    """Our outputs vs the HF model's, for each kind of model."""
    expected = hf_forward(reference, inputs)
    actual = to_numpy(ours(inputs))
    mask = inputs["padding_mask"]
    if kind == "AlbertModel":
        np.testing.assert_allclose(
            real_tokens(actual["sequence_output"], mask),
            real_tokens(expected.last_hidden_state.numpy(), mask),
            atol=ATOL,
        )
        np.testing.assert_allclose(actual["pooled_output"], expected.pooler_output, atol=ATOL)
    elif kind in ("AlbertForPreTraining", "AlbertForMaskedLM"):
        logits = expected.prediction_logits if kind == "AlbertForPreTraining" else expected.logits
        at_masks = np.take_along_axis(logits.numpy(), inputs["mask_positions"][..., None], 1)
        np.testing.assert_allclose(actual["mlm_logits"], at_masks, atol=ATOL)
        if kind == "AlbertForPreTraining":
            np.testing.assert_allclose(actual["sop_logits"], expected.sop_logits, atol=ATOL)
    else:
        np.testing.assert_allclose(actual, expected.logits.numpy(), atol=ATOL)


@pytest.mark.parametrize(
    "kind,our_class",
    [
        ("AlbertModel", AlbertBackbone),
        ("AlbertForPreTraining", AlbertPretrainer),
        ("AlbertForMaskedLM", AlbertPretrainer),
        ("AlbertForSequenceClassification", AlbertClassifier),
    ],
)
def test_hf_directory_to_ours_gives_equal_outputs(kind, our_class, tmp_path):
    num_labels = 3 if kind == "AlbertForSequenceClassification" else 2
    reference = hf_model(getattr(transformers, kind), dict(VALUES, num_labels=num_labels))
    reference.save_pretrained(tmp_path)  # config.json + model.safetensors
    ours = load_checkpoint(tmp_path)
    assert type(ours) is our_class
    inputs = random_inputs(VALUES["vocab_size"], sequence_length=16, num_masked=3)
    if our_class is not AlbertPretrainer:
        inputs.pop("mask_positions")
    compare(kind, ours, reference, inputs)


def test_pytorch_bin_is_read_with_weights_only(tmp_path):
    reference = hf_model(transformers.AlbertModel, VALUES)
    reference.config.save_pretrained(tmp_path)
    torch.save(reference.state_dict(), tmp_path / "pytorch_model.bin")
    ours = load_checkpoint(tmp_path)
    inputs = random_inputs(VALUES["vocab_size"], sequence_length=10)
    compare("AlbertModel", ours, reference, inputs)


class CreatesAFileWhenUnpickled:
    """Unpickling this calls os.mkdir(path): code that runs on load, as a hostile file's would."""

    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return (os.mkdir, (self.path,))


@pytest.mark.parametrize("payload", ["code", "number"])
def test_pickled_objects_in_a_bin_are_refused(tmp_path, payload):
    reference = hf_model(transformers.AlbertModel, VALUES)
    reference.config.save_pretrained(tmp_path)
    state = dict(reference.state_dict())
    side_effect = tmp_path / "created-by-unpickling"
    state["surprise"] = CreatesAFileWhenUnpickled(side_effect) if payload == "code" else 3
    torch.save(state, tmp_path / "pytorch_model.bin")
    assert not side_effect.exists()
    with pytest.raises(ValueError, match="Refused"):
        load_checkpoint(tmp_path)
    # Refusing after unpickling would be too late: the payload must never have run.
    assert not side_effect.exists()


@pytest.mark.parametrize(
    "make",
    [
        lambda b: b,
        lambda b: AlbertPretrainer(b),
        lambda b: AlbertClassifier(b, num_classes=4),
        lambda b: AlbertClassifier(b, num_classes=1),
    ],
    ids=["backbone", "pretrainer", "classifier", "regressor"],
)
def test_ours_to_hf_directory_loads_in_transformers_with_equal_outputs(make, tmp_path):
    backbone = AlbertBackbone(
        vocabulary_size=97,
        embedding_dim=8,
        hidden_dim=24,
        intermediate_dim=40,
        num_layers=4,
        num_heads=3,
        num_groups=2,
        num_inner_repetitions=2,
        max_sequence_length=64,
    )
    ours = make(backbone)
    rng = np.random.default_rng(0)
    for weight in ours.weights:  # biases and LayerNorms random too
        weight.assign(rng.normal(0, 0.2, weight.shape).astype("float32"))
    save_checkpoint(ours, tmp_path / "hf")
    config = transformers.AutoConfig.from_pretrained(tmp_path / "hf")
    kind = config.architectures[0]
    reference = getattr(transformers, kind).from_pretrained(tmp_path / "hf").eval()
    inputs = random_inputs(97, sequence_length=16, num_masked=3)
    if not isinstance(ours, AlbertPretrainer):
        inputs.pop("mask_positions")
    compare(kind, ours, reference, inputs)


def test_hf_to_ours_to_hf_is_bit_identical(tmp_path):
    reference = hf_model(transformers.AlbertForPreTraining, VALUES)
    reference.save_pretrained(tmp_path / "original")
    ours = load_checkpoint(tmp_path / "original")
    save_checkpoint(ours, tmp_path / "again")
    original = safetensors_numpy.load_file(tmp_path / "original" / "model.safetensors")
    again = safetensors_numpy.load_file(tmp_path / "again" / "model.safetensors")
    tied = {"predictions.decoder.weight", "predictions.decoder.bias"}
    assert set(again) == set(original) - tied
    for name in again:
        assert again[name].dtype == original[name].dtype
        np.testing.assert_array_equal(again[name], original[name], err_msg=name)


def test_keras_file_round_trip_through_the_converter(tmp_path):
    reference = hf_model(transformers.AlbertForSequenceClassification, dict(VALUES, num_labels=2))
    reference.save_pretrained(tmp_path / "hf")
    ours = load_checkpoint(tmp_path / "hf")
    save_checkpoint(ours, tmp_path / "model.keras")
    restored = load_checkpoint(tmp_path / "model.keras")
    inputs = random_inputs(VALUES["vocab_size"], sequence_length=12)
    np.testing.assert_allclose(to_numpy(restored(inputs)), to_numpy(ours(inputs)), atol=1e-6)


def test_convert_checkpoint_cli(tmp_path):
    import subprocess
    import sys

    reference = hf_model(transformers.AlbertModel, VALUES)
    reference.save_pretrained(tmp_path / "hf")
    result = subprocess.run(
        [
            sys.executable,
            "tools/convert_checkpoint.py",
            str(tmp_path / "hf"),
            str(tmp_path / "b.keras"),
        ],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "wrote AlbertBackbone" in result.stdout
    ours = load_checkpoint(tmp_path / "b.keras")
    compare("AlbertModel", ours, reference, random_inputs(VALUES["vocab_size"], sequence_length=8))
