"""Question answering checkpoints: HF `AlbertForQuestionAnswering` both ways (PyTorch, CPU) and
the original TF1 names of the SQuAD v1 and v2 heads."""

import numpy as np
import pytest
import transformers

from keras_albert import AlbertBackbone, AlbertQuestionAnswerer
from keras_albert.convert.huggingface import (
    hf_weights_from_model,
    load_hf_weights,
    write_hf_directory,
)
from keras_albert.convert.tf1 import load_tf1_weights, read_tf1_checkpoint
from tests.convert.hf_reference import (
    ATOL,
    CONFIGS,
    config_from_hf,
    hf_forward,
    hf_model,
    state_dict_numpy,
)
from tests.convert.test_tf1 import (
    CONFIG,
    OPTIMIZER_STATE,
    assert_landed,
    expected_names,
    write_tf1_checkpoint,
)
from tests.helpers import random_inputs, to_numpy


def assert_equal_on_real_tokens(ours, hf_output, padding_mask):
    keep = padding_mask.astype(bool)
    for name in ("start_logits", "end_logits"):
        theirs = getattr(hf_output, name).numpy()
        np.testing.assert_allclose(ours[name][keep], theirs[keep], atol=ATOL, rtol=0, err_msg=name)
        assert (ours[name][~keep] <= -1e8).all(), f"{name}: padding is not masked"


@pytest.mark.parametrize("name", ["groups_and_inner_repetitions", "uneven_groups", "relu"])
def test_hf_question_answering_to_ours(name):
    values = CONFIGS[name]
    reference = hf_model(transformers.AlbertForQuestionAnswering, values)
    ours = AlbertQuestionAnswerer(AlbertBackbone.from_albert_config(config_from_hf(values)))
    load_hf_weights(ours, state_dict_numpy(reference))

    inputs = random_inputs(values["vocab_size"], batch_size=4, sequence_length=20, seed=2)
    assert_equal_on_real_tokens(
        to_numpy(ours(inputs)), hf_forward(reference, inputs), inputs["padding_mask"]
    )
    # Back under HF names: the same tensors, bit for bit.
    tensors = state_dict_numpy(reference)
    written = hf_weights_from_model(ours)
    assert set(written) == {
        n for n in tensors if not n.endswith(("position_ids", "token_type_ids"))
    }
    for tensor_name, value in written.items():
        np.testing.assert_array_equal(value, tensors[tensor_name], err_msg=tensor_name)


def test_ours_to_an_hf_directory_that_transformers_loads(tmp_path):
    values = CONFIGS["groups_and_inner_repetitions"]
    ours = AlbertQuestionAnswerer(AlbertBackbone.from_albert_config(config_from_hf(values)))
    rng = np.random.default_rng(0)
    for weight in ours.weights:  # biases and LayerNorms random too
        weight.assign(rng.normal(0, 0.2, weight.shape).astype("float32"))
    write_hf_directory(ours, tmp_path)
    reference = transformers.AlbertForQuestionAnswering.from_pretrained(tmp_path).eval()
    assert reference.config.architectures == ["AlbertForQuestionAnswering"]
    inputs = random_inputs(values["vocab_size"], batch_size=3, sequence_length=16, seed=4)
    assert_equal_on_real_tokens(
        to_numpy(ours(inputs)), hf_forward(reference, inputs), inputs["padding_mask"]
    )


def test_the_answer_class_head_has_no_hf_counterpart():
    ours = AlbertQuestionAnswerer(
        AlbertBackbone.from_albert_config(config_from_hf(CONFIGS["relu"])),
        answerability="answer_class",
    )
    with pytest.raises(ValueError, match="answerability='answer_class'"):
        hf_weights_from_model(ours)


# google-research/albert run_squad_v1 / squad_utils.create_v1_model: (2, H), transpose_b=True.
SQUAD_V1_HEAD = [
    ("cls/squad/output_weights", "span_logits/kernel", True),
    ("cls/squad/output_bias", "span_logits/bias", False),
]
# squad_utils.create_v2_model: tf.layers.dense under variable scopes, contrib layer_norm.
SQUAD_V2_HEAD = [
    (f"{scope}/{name}", f"answer_class_head/{ours}/{name}", False)
    for scope, ours in [
        ("start_logits/dense", "start_logits_dense"),
        ("end_logits/dense_0", "end_logits_dense_0"),
        ("end_logits/dense_1", "end_logits_dense_1"),
        ("answer_class/dense_0", "answer_class_dense_0"),
    ]
    for name in ("kernel", "bias")
] + [
    ("end_logits/LayerNorm/gamma", "answer_class_head/end_logits_layer_norm/gamma", False),
    ("end_logits/LayerNorm/beta", "answer_class_head/end_logits_layer_norm/beta", False),
    ("answer_class/dense_1/kernel", "answer_class_head/answer_class_dense_1/kernel", False),
]


def test_original_squad_v1_checkpoint_names(tmp_path):
    model = AlbertQuestionAnswerer(AlbertBackbone.from_albert_config(CONFIG))
    names = expected_names(CONFIG, SQUAD_V1_HEAD)
    assert len(model.weights) == len(names)
    values = write_tf1_checkpoint(tmp_path, model, names, extra=OPTIMIZER_STATE)
    load_tf1_weights(model, read_tf1_checkpoint(tmp_path))
    assert_landed(model, names, values)

    # The original's logits: sequence_output @ output_weights^T + output_bias, row 0 = start.
    inputs = random_inputs(CONFIG.vocabulary_size, batch_size=2, sequence_length=10)
    sequence = to_numpy(model.backbone(inputs))["sequence_output"]
    logits = sequence @ values["cls/squad/output_weights"].T + values["cls/squad/output_bias"]
    outputs = to_numpy(model(inputs))
    keep = inputs["padding_mask"].astype(bool)
    np.testing.assert_allclose(outputs["start_logits"][keep], logits[..., 0][keep], atol=1e-4)
    np.testing.assert_allclose(outputs["end_logits"][keep], logits[..., 1][keep], atol=1e-4)


def test_original_squad_v2_checkpoint_names(tmp_path):
    model = AlbertQuestionAnswerer(
        AlbertBackbone.from_albert_config(CONFIG), answerability="answer_class"
    )
    names = expected_names(CONFIG, SQUAD_V2_HEAD)
    assert len(model.weights) == len(names)
    values = write_tf1_checkpoint(tmp_path, model, names, extra=OPTIMIZER_STATE)
    load_tf1_weights(model, read_tf1_checkpoint(tmp_path))
    assert_landed(model, names, values)
