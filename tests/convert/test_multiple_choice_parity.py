"""AlbertMultipleChoice ↔ HF `AlbertForMultipleChoice` (PyTorch, CPU) and TF1 `run_race`."""

import numpy as np
import pytest
import transformers

from keras_albert.convert import load_checkpoint, save_checkpoint
from keras_albert.convert.huggingface import load_hf_weights
from keras_albert.models import AlbertBackbone
from keras_albert.tasks.multiple_choice.model import AlbertMultipleChoice
from tests.convert.hf_reference import (
    ATOL,
    CONFIGS,
    config_from_hf,
    hf_forward,
    hf_model,
    state_dict_numpy,
)
from tests.convert.test_tf1 import (
    CLASSIFIER_HEAD,
    CONFIG,
    OPTIMIZER_STATE,
    assert_landed,
    expected_names,
    write_tf1_checkpoint,
)
from tests.helpers import check_model_roundtrips, random_inputs, to_numpy

VALUES = CONFIGS["groups_and_inner_repetitions"]
NUM_CHOICES = 4


def choice_inputs(vocabulary_size, batch_size=3, sequence_length=16, seed=0):
    """(batch, num_choices, seq) inputs; every choice padded differently."""
    flat = random_inputs(
        vocabulary_size,
        batch_size=batch_size * NUM_CHOICES,
        sequence_length=sequence_length,
        seed=seed,
    )
    return {
        name: value.reshape(batch_size, NUM_CHOICES, sequence_length)
        for name, value in flat.items()
    }


@pytest.mark.parametrize("name", ["groups_and_inner_repetitions", "relu", "gelu_new"])
def test_logits_match_hf_albert_for_multiple_choice(name):
    values = CONFIGS[name]
    reference = hf_model(transformers.AlbertForMultipleChoice, values)
    ours = AlbertMultipleChoice(AlbertBackbone.from_albert_config(config_from_hf(values)))
    load_hf_weights(ours, state_dict_numpy(reference))
    inputs = choice_inputs(values["vocab_size"])
    expected = hf_forward(reference, inputs).logits.numpy()
    actual = to_numpy(ours(inputs))
    assert actual.shape == (3, NUM_CHOICES) and actual.dtype == np.float32
    np.testing.assert_allclose(actual, expected, atol=ATOL, rtol=0)


def test_hf_directory_to_ours_and_back(tmp_path):
    reference = hf_model(transformers.AlbertForMultipleChoice, VALUES)
    reference.save_pretrained(tmp_path / "hf")
    ours = load_checkpoint(tmp_path / "hf")
    assert type(ours) is AlbertMultipleChoice
    inputs = choice_inputs(VALUES["vocab_size"], seed=4)
    expected = hf_forward(reference, inputs).logits.numpy()
    np.testing.assert_allclose(to_numpy(ours(inputs)), expected, atol=ATOL, rtol=0)

    save_checkpoint(ours, tmp_path / "again")
    again = transformers.AlbertForMultipleChoice.from_pretrained(tmp_path / "again").eval()
    for hf_name, tensor in reference.state_dict().items():
        np.testing.assert_array_equal(again.state_dict()[hf_name].numpy(), tensor.numpy())


def test_ours_to_hf_directory_loads_in_transformers_with_equal_logits(tmp_path):
    backbone = AlbertBackbone.from_albert_config(config_from_hf(VALUES))
    ours = AlbertMultipleChoice(backbone, dropout=0.2)
    rng = np.random.default_rng(0)
    for weight in ours.weights:
        weight.assign(rng.normal(0, 0.2, weight.shape).astype("float32"))
    save_checkpoint(ours, tmp_path / "hf")
    config = transformers.AutoConfig.from_pretrained(tmp_path / "hf")
    assert config.architectures == ["AlbertForMultipleChoice"]
    assert config.classifier_dropout_prob == 0.2
    reference = transformers.AlbertForMultipleChoice.from_pretrained(tmp_path / "hf").eval()
    inputs = choice_inputs(VALUES["vocab_size"], seed=2)
    expected = hf_forward(reference, inputs).logits.numpy()
    np.testing.assert_allclose(to_numpy(ours(inputs)), expected, atol=ATOL, rtol=0)


def test_keras_file_and_config_round_trip(tmp_path):
    backbone = AlbertBackbone.from_albert_config(config_from_hf(VALUES))
    model = AlbertMultipleChoice(backbone, dropout=0.0, initializer_range=0.05)
    check_model_roundtrips(model, choice_inputs(VALUES["vocab_size"]), tmp_path)


def test_tf1_run_race_head_lands_and_scores_as_the_original(tmp_path):
    template = AlbertMultipleChoice(AlbertBackbone.from_albert_config(CONFIG))
    names = expected_names(CONFIG, CLASSIFIER_HEAD)
    values = write_tf1_checkpoint(tmp_path, template, names, extra=OPTIMIZER_STATE)
    assert values["output_weights"].shape == (1, CONFIG.hidden_dim)  # run_race's [1, H]
    model = load_checkpoint(tmp_path, model="multiple_choice")
    assert type(model) is AlbertMultipleChoice
    assert_landed(model, names, values)
    # run_race: logits = pooled · output_weightsᵀ + output_bias, reshaped to (batch, choices).
    inputs = choice_inputs(CONFIG.vocabulary_size, sequence_length=12)
    folded = {name: value.reshape(-1, 12) for name, value in inputs.items()}
    pooled = to_numpy(model.backbone(folded))["pooled_output"]
    expected = (pooled @ values["output_weights"].T + values["output_bias"]).reshape(3, 4)
    np.testing.assert_allclose(to_numpy(model(inputs)), expected, atol=1e-5, rtol=0)


def test_bad_arguments_are_clear_errors():
    backbone = AlbertBackbone.from_albert_config(config_from_hf(VALUES))
    with pytest.raises(ValueError, match="dropout"):
        AlbertMultipleChoice(backbone, dropout=1.5)
    with pytest.raises(ValueError, match="must be an AlbertBackbone"):
        AlbertMultipleChoice("backbone")


def test_absent_choices_score_minus_1e9_and_leave_the_others_unchanged():
    values = CONFIGS["groups_and_inner_repetitions"]
    reference = hf_model(transformers.AlbertForMultipleChoice, values)
    ours = AlbertMultipleChoice(AlbertBackbone.from_albert_config(config_from_hf(values)))
    load_hf_weights(ours, state_dict_numpy(reference))
    inputs = choice_inputs(values["vocab_size"], seed=7)
    expected = hf_forward(reference, inputs).logits.numpy()
    for name in inputs:  # question 1 has 3 options, question 2 has 2
        inputs[name][1, 3] = 0
        inputs[name][2, 2:] = 0
    actual = to_numpy(ours(inputs))
    absent = np.zeros_like(actual, dtype=bool)
    absent[1, 3] = absent[2, 2:] = True
    np.testing.assert_array_equal(actual[absent], -1e9)
    np.testing.assert_allclose(actual[~absent], expected[~absent], atol=ATOL, rtol=0)
