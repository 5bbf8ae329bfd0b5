"""AlbertTokenClassifier ↔ HF `AlbertForTokenClassification` (PyTorch, CPU)."""

import numpy as np
import pytest
import transformers

from keras_albert.convert import load_checkpoint, save_checkpoint
from keras_albert.convert.huggingface import load_hf_weights
from keras_albert.convert.tf1 import load_tf1_weights
from keras_albert.models import AlbertBackbone
from keras_albert.tasks.token_classification.model import AlbertTokenClassifier
from tests.convert.hf_reference import (
    ATOL,
    CONFIGS,
    config_from_hf,
    hf_forward,
    hf_model,
    state_dict_numpy,
)
from tests.helpers import check_model_roundtrips, random_inputs, to_numpy

VALUES = dict(CONFIGS["groups_and_inner_repetitions"], num_labels=13)


def assert_equal_on_real_tokens(actual, expected, padding_mask):
    keep = padding_mask.astype(bool)
    np.testing.assert_allclose(actual[keep], expected[keep], atol=ATOL, rtol=0)


@pytest.mark.parametrize("name", ["groups_and_inner_repetitions", "exact_gelu", "uneven_groups"])
def test_logits_match_hf_albert_for_token_classification(name):
    values = dict(CONFIGS[name], num_labels=13)
    reference = hf_model(transformers.AlbertForTokenClassification, values)
    ours = AlbertTokenClassifier(
        AlbertBackbone.from_albert_config(config_from_hf(values)), num_classes=13
    )
    load_hf_weights(ours, state_dict_numpy(reference))
    inputs = random_inputs(values["vocab_size"], batch_size=4, sequence_length=20, seed=1)
    expected = hf_forward(reference, inputs).logits.numpy()
    actual = to_numpy(ours(inputs))
    assert actual.shape == (4, 20, 13) and actual.dtype == np.float32
    assert_equal_on_real_tokens(actual, expected, inputs["padding_mask"])


TAGS = ["O"] + [f"{p}-{kind}" for kind in ("loc", "org", "per", "misc", "date", "x") for p in "BI"]


def test_hf_directory_to_ours_and_back(tmp_path):
    reference = hf_model(
        transformers.AlbertForTokenClassification,
        dict(VALUES, id2label=dict(enumerate(TAGS)), label2id={t: i for i, t in enumerate(TAGS)}),
    )
    reference.save_pretrained(tmp_path / "hf")
    ours = load_checkpoint(tmp_path / "hf")
    assert type(ours) is AlbertTokenClassifier and ours.num_classes == 13
    assert ours.labels == TAGS
    inputs = random_inputs(VALUES["vocab_size"], sequence_length=16, seed=3)
    expected = hf_forward(reference, inputs).logits.numpy()
    assert_equal_on_real_tokens(to_numpy(ours(inputs)), expected, inputs["padding_mask"])

    save_checkpoint(ours, tmp_path / "again")
    again = transformers.AlbertForTokenClassification.from_pretrained(tmp_path / "again")
    assert again.config.id2label == dict(enumerate(TAGS))
    for hf_name, tensor in reference.state_dict().items():
        np.testing.assert_array_equal(again.state_dict()[hf_name].numpy(), tensor.numpy())


def test_ours_to_hf_directory_loads_in_transformers_with_equal_logits(tmp_path):
    backbone = AlbertBackbone.from_albert_config(config_from_hf(VALUES))
    ours = AlbertTokenClassifier(backbone, num_classes=7, dropout=0.3)
    rng = np.random.default_rng(0)
    for weight in ours.weights:
        weight.assign(rng.normal(0, 0.2, weight.shape).astype("float32"))
    save_checkpoint(ours, tmp_path / "hf")
    config = transformers.AutoConfig.from_pretrained(tmp_path / "hf")
    assert config.architectures == ["AlbertForTokenClassification"]
    assert config.num_labels == 7 and config.classifier_dropout_prob == 0.3
    assert config.id2label == {i: f"LABEL_{i}" for i in range(7)}  # ours had no names
    assert type(load_checkpoint(tmp_path / "hf")).__name__ == "AlbertTokenClassifier"
    assert load_checkpoint(tmp_path / "hf").labels is None
    reference = transformers.AlbertForTokenClassification.from_pretrained(tmp_path / "hf").eval()
    inputs = random_inputs(VALUES["vocab_size"], sequence_length=16, seed=5)
    expected = hf_forward(reference, inputs).logits.numpy()
    assert_equal_on_real_tokens(to_numpy(ours(inputs)), expected, inputs["padding_mask"])


def test_a_token_classifier_on_a_pretrained_body(tmp_path):
    """The fine-tuning route: the backbone of any checkpoint, a fresh head on it."""
    reference = hf_model(transformers.AlbertModel, CONFIGS["groups_and_inner_repetitions"])
    reference.save_pretrained(tmp_path / "hf")
    backbone = load_checkpoint(tmp_path / "hf", model="backbone")
    ours = AlbertTokenClassifier(backbone, num_classes=5)
    inputs = random_inputs(VALUES["vocab_size"], sequence_length=16, seed=3)
    sequence = to_numpy(backbone(inputs))["sequence_output"]
    kernel, bias = (w.numpy() for w in ours.output_dense.weights)
    np.testing.assert_allclose(to_numpy(ours(inputs)), sequence @ kernel + bias, atol=1e-5)
    with pytest.raises(ValueError, match="`num_classes` must be given"):
        load_checkpoint(tmp_path / "hf", model="token_classification")


def test_keras_file_and_config_round_trip(tmp_path):
    backbone = AlbertBackbone.from_albert_config(config_from_hf(VALUES))
    model = AlbertTokenClassifier(
        backbone, num_classes=13, dropout=0.0, initializer_range=0.05, labels=TAGS
    )
    check_model_roundtrips(model, random_inputs(VALUES["vocab_size"]), tmp_path)


def test_a_config_saved_with_num_labels_loads():
    """Files saved before the count of tags was named `num_classes` say `num_labels`."""
    backbone = AlbertBackbone.from_albert_config(config_from_hf(VALUES))
    config = AlbertTokenClassifier(backbone, num_classes=4, labels=TAGS[:4]).get_config()
    config["num_labels"] = config.pop("num_classes")
    restored = AlbertTokenClassifier.from_config(config)
    assert restored.num_classes == 4 and restored.labels == TAGS[:4]


def test_the_original_code_has_no_token_head():
    backbone = AlbertBackbone.from_albert_config(config_from_hf(VALUES))
    with pytest.raises(ValueError, match="no token classification head"):
        load_tf1_weights(AlbertTokenClassifier(backbone, num_classes=3), {})
    with pytest.raises(ValueError, match="num_classes"):
        AlbertTokenClassifier(backbone, num_classes=0)
    with pytest.raises(ValueError, match="`labels` must be 3 strings"):
        AlbertTokenClassifier(backbone, num_classes=3, labels=["O", "B-x"])
    with pytest.raises(ValueError, match="distinct"):
        AlbertTokenClassifier(backbone, num_classes=2, labels=["O", "O"])
