"""Original TF1 checkpoints → keras_albert, from checkpoints written with tf.compat.v1."""

import json

import numpy as np
import pytest
import tensorflow as tf

from keras_albert import AlbertBackbone, AlbertClassifier, AlbertConfig, AlbertPretrainer
from keras_albert.convert import load_checkpoint
from keras_albert.convert.tf1 import load_tf1_weights, read_tf1_checkpoint
from tests.helpers import random_inputs, to_numpy

# The variable names of google-research/albert (modeling.py), spelled out from its layout:
# (original name, our weight path, stored transposed relative to Keras).
EMBEDDINGS = [
    ("bert/embeddings/word_embeddings", "embedding/token_embedding/embeddings", False),
    ("bert/embeddings/token_type_embeddings", "embedding/segment_embedding/embeddings", False),
    ("bert/embeddings/position_embeddings", "embedding/position_embeddings", False),
    ("bert/embeddings/LayerNorm/beta", "embedding/layer_norm/beta", False),
    ("bert/embeddings/LayerNorm/gamma", "embedding/layer_norm/gamma", False),
    ("bert/encoder/embedding_hidden_mapping_in/kernel", "embedding/projection/kernel", False),
    ("bert/encoder/embedding_hidden_mapping_in/bias", "embedding/projection/bias", False),
    ("bert/pooler/dense/kernel", "pooler/kernel", False),
    ("bert/pooler/dense/bias", "pooler/bias", False),
]
BLOCK = [
    ("attention_1/self/query/kernel", "attention/query/kernel"),
    ("attention_1/self/query/bias", "attention/query/bias"),
    ("attention_1/self/key/kernel", "attention/key/kernel"),
    ("attention_1/self/key/bias", "attention/key/bias"),
    ("attention_1/self/value/kernel", "attention/value/kernel"),
    ("attention_1/self/value/bias", "attention/value/bias"),
    ("attention_1/output/dense/kernel", "attention/output/kernel"),
    ("attention_1/output/dense/bias", "attention/output/bias"),
    ("LayerNorm/beta", "attention/layer_norm/beta"),
    ("LayerNorm/gamma", "attention/layer_norm/gamma"),
    ("ffn_1/intermediate/dense/kernel", "feedforward/intermediate/kernel"),
    ("ffn_1/intermediate/dense/bias", "feedforward/intermediate/bias"),
    ("ffn_1/intermediate/output/dense/kernel", "feedforward/output/kernel"),
    ("ffn_1/intermediate/output/dense/bias", "feedforward/output/bias"),
    ("LayerNorm_1/beta", "feedforward/layer_norm/beta"),
    ("LayerNorm_1/gamma", "feedforward/layer_norm/gamma"),
]
PRETRAINING_HEADS = [
    ("cls/predictions/transform/dense/kernel", "masked_lm_head/dense/kernel", False),
    ("cls/predictions/transform/dense/bias", "masked_lm_head/dense/bias", False),
    ("cls/predictions/transform/LayerNorm/beta", "masked_lm_head/layer_norm/beta", False),
    ("cls/predictions/transform/LayerNorm/gamma", "masked_lm_head/layer_norm/gamma", False),
    ("cls/predictions/output_bias", "masked_lm_head/output_bias", False),
    ("cls/seq_relationship/output_weights", "sentence_order_head/dense/kernel", True),
    ("cls/seq_relationship/output_bias", "sentence_order_head/dense/bias", False),
]
CLASSIFIER_HEAD = [
    ("output_weights", "logits/kernel", True),
    ("output_bias", "logits/bias", False),
]

ORIGINAL_CONFIG = {
    "vocab_size": 50,
    "embedding_size": 8,
    "hidden_size": 12,
    "intermediate_size": 20,
    "num_hidden_layers": 4,
    "num_attention_heads": 3,
    "num_hidden_groups": 2,
    "inner_group_num": 2,
    "max_position_embeddings": 16,
    "type_vocab_size": 2,
    "hidden_act": "gelu",
    "hidden_dropout_prob": 0.0,
    "attention_probs_dropout_prob": 0.0,
    "initializer_range": 0.02,
}


def expected_names(config: AlbertConfig, heads: list) -> list:
    names = list(EMBEDDINGS)
    for g in range(config.num_groups):
        for r in range(config.num_inner_repetitions):
            prefix = f"bert/encoder/transformer/group_{g}/inner_group_{r}/"
            names += [(prefix + o, f"group_{g}_inner_{r}/{ours}", False) for o, ours in BLOCK]
    return names + heads


def write_tf1_checkpoint(directory, model, names, extra=None, seed=0, drop=(), reshape=None):
    """Random distinct values under the original names, saved by a TF1 `Saver`."""
    rng = np.random.default_rng(seed)
    shapes = {w.path: tuple(w.shape) for w in model.weights}
    values = {}
    for original, ours, transposed in names:
        if original in drop:
            continue
        shape = shapes[ours][::-1] if transposed else shapes[ours]
        values[original] = rng.normal(size=shape).astype("float32")
    values.update(extra or {})
    if reshape:
        values[reshape] = rng.normal(size=(3,)).astype("float32")
    with tf.Graph().as_default():
        variables = [tf.compat.v1.Variable(value, name=name) for name, value in values.items()]
        saver = tf.compat.v1.train.Saver(variables)
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            saver.save(session, str(directory / "model.ckpt-100"))
    (directory / "albert_config.json").write_text(json.dumps(ORIGINAL_CONFIG))
    return values


def assert_landed(model, names, values):
    by_path = {w.path: w.numpy() for w in model.weights}
    for original, ours, transposed in names:
        expected = values[original].T if transposed else values[original]
        np.testing.assert_array_equal(by_path[ours], expected, err_msg=f"{original} → {ours}")


CONFIG = AlbertConfig.from_original_config(ORIGINAL_CONFIG)
OPTIMIZER_STATE = {
    "bert/pooler/dense/kernel/adam_m": np.zeros((12, 12), "float32"),
    "bert/pooler/dense/kernel/adam_v": np.zeros((12, 12), "float32"),
    "global_step": np.array(100, "int64"),
}


def test_pretraining_checkpoint_lands_where_the_names_say(tmp_path):
    template = AlbertPretrainer(AlbertBackbone.from_albert_config(CONFIG))
    names = expected_names(CONFIG, PRETRAINING_HEADS)
    values = write_tf1_checkpoint(tmp_path, template, names, extra=OPTIMIZER_STATE)
    assert len(template.weights) == len(names)  # the spec covers every weight

    model = load_checkpoint(tmp_path)
    assert isinstance(model, AlbertPretrainer)
    assert model.backbone.albert_config == CONFIG
    assert_landed(model, names, values)


def test_backbone_from_a_pretraining_checkpoint_skips_the_heads(tmp_path):
    template = AlbertPretrainer(AlbertBackbone.from_albert_config(CONFIG))
    names = expected_names(CONFIG, PRETRAINING_HEADS)
    values = write_tf1_checkpoint(tmp_path, template, names)
    model = load_checkpoint(tmp_path, model="backbone")
    assert isinstance(model, AlbertBackbone)
    assert_landed(model, expected_names(CONFIG, []), values)


def test_classifier_checkpoint(tmp_path):
    template = AlbertClassifier(AlbertBackbone.from_albert_config(CONFIG), num_classes=3)
    names = expected_names(CONFIG, CLASSIFIER_HEAD)
    values = write_tf1_checkpoint(tmp_path, template, names, extra=OPTIMIZER_STATE)
    model = load_checkpoint(tmp_path)
    assert isinstance(model, AlbertClassifier) and model.num_classes == 3
    assert_landed(model, names, values)


def test_checkpoint_prefix_with_an_explicit_config(tmp_path):
    template = AlbertBackbone.from_albert_config(CONFIG)
    names = expected_names(CONFIG, [])
    values = write_tf1_checkpoint(tmp_path, template, names)
    model = load_checkpoint(tmp_path / "model.ckpt-100", config=CONFIG)
    assert_landed(model, names, values)
    with pytest.raises(ValueError, match="needs `config`"):
        load_checkpoint(tmp_path / "model.ckpt-100")


def original_forward(values, original_config, token_ids, segment_ids, input_mask, positions):
    """The forward pass of google-research/albert, in float64 NumPy, from the variables by name.

    Written from the definitions in its modeling.py (embeddings → LayerNorm →
    embedding_hidden_mapping_in; layer i runs group int(i / num_layers * num_groups), each
    inner group being attention_1 → "LayerNorm" → ffn_1 → "LayerNorm_1"; padded keys get
    -10000; "gelu" is the tanh form; tanh pooler on the first token) and run_pretraining.py
    (cls/predictions: dense + activation + LayerNorm, then the word table transposed plus
    output_bias; cls/seq_relationship: pooled · output_weightsᵀ + output_bias).
    Returns (sequence_output, pooled_output, masked-LM logits, sentence-order logits).
    """
    v = {name: np.asarray(value, np.float64) for name, value in values.items()}
    num_layers = original_config["num_hidden_layers"]
    num_groups = original_config["num_hidden_groups"]
    num_heads = original_config["num_attention_heads"]
    batch, length = token_ids.shape

    def layer_norm(x, scope):  # tf.contrib.layers.layer_norm, variance epsilon 1e-12
        mean = x.mean(-1, keepdims=True)
        variance = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(variance + 1e-12) * v[f"{scope}/gamma"] + v[f"{scope}/beta"]

    def dense(x, scope):
        return x @ v[f"{scope}/kernel"] + v[f"{scope}/bias"]

    def gelu(x):
        return 0.5 * x * (1.0 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))

    x = (
        v["bert/embeddings/word_embeddings"][token_ids]
        + v["bert/embeddings/token_type_embeddings"][segment_ids]
        + v["bert/embeddings/position_embeddings"][:length]
    )
    x = layer_norm(x, "bert/embeddings/LayerNorm")
    x = dense(x, "bert/encoder/embedding_hidden_mapping_in")  # (batch, length, hidden)
    hidden = x.shape[-1]
    head_size = hidden // num_heads
    adder = (1.0 - input_mask[:, None, None, :]) * -10000.0  # (batch, 1, 1, keys)
    for layer in range(num_layers):
        group = int(layer / num_layers * num_groups)
        for inner in range(original_config["inner_group_num"]):
            scope = f"bert/encoder/transformer/group_{group}/inner_group_{inner}"
            # (batch, length, heads, head_size), as dense_layer_3d reshapes its kernel
            q, k, val = (
                dense(x, f"{scope}/attention_1/self/{name}").reshape(
                    batch, length, num_heads, head_size
                )
                for name in ("query", "key", "value")
            )
            scores = np.einsum("bfnd,btnd->bnft", q, k) / np.sqrt(head_size) + adder
            probabilities = np.exp(scores - scores.max(-1, keepdims=True))
            probabilities /= probabilities.sum(-1, keepdims=True)
            context = np.einsum("bnft,btnd->bfnd", probabilities, val).reshape(batch, length, -1)
            attention = dense(context, f"{scope}/attention_1/output/dense")
            attention = layer_norm(attention + x, f"{scope}/LayerNorm")
            intermediate = gelu(dense(attention, f"{scope}/ffn_1/intermediate/dense"))
            output = dense(intermediate, f"{scope}/ffn_1/intermediate/output/dense")
            x = layer_norm(output + attention, f"{scope}/LayerNorm_1")
    pooled = np.tanh(dense(x[:, 0], "bert/pooler/dense"))

    gathered = np.take_along_axis(x, positions[..., None], axis=1)
    transformed = gelu(dense(gathered, "cls/predictions/transform/dense"))
    transformed = layer_norm(transformed, "cls/predictions/transform/LayerNorm")
    mlm_logits = (
        transformed @ v["bert/embeddings/word_embeddings"].T + v["cls/predictions/output_bias"]
    )
    sop_logits = (
        pooled @ v["cls/seq_relationship/output_weights"].T + v["cls/seq_relationship/output_bias"]
    )
    assert hidden == original_config["hidden_size"] and x.shape == (batch, length, hidden)
    return x, pooled, mlm_logits, sop_logits


def pretraining_checkpoint(directory) -> tuple[dict, dict]:
    """A pretraining checkpoint under the original's names in `directory`, and inputs for it:
    (the variables' values by name, the model's inputs with 4 masked positions)."""
    template = AlbertPretrainer(AlbertBackbone.from_albert_config(CONFIG))
    values = write_tf1_checkpoint(directory, template, expected_names(CONFIG, PRETRAINING_HEADS))
    inputs = random_inputs(
        ORIGINAL_CONFIG["vocab_size"], batch_size=3, sequence_length=16, num_masked=4, seed=2
    )
    return values, inputs


def original_outputs(values: dict, inputs: dict) -> dict:
    """`original_forward` on the model's `inputs`, by the names of our models' outputs."""
    sequence, pooled, mlm_logits, sop_logits = original_forward(
        values,
        ORIGINAL_CONFIG,
        inputs["token_ids"],
        inputs["segment_ids"],
        inputs["padding_mask"].astype(np.float64),
        inputs["mask_positions"],
    )
    return {
        "sequence_output": sequence,
        "pooled_output": pooled,
        "mlm_logits": mlm_logits,
        "sop_logits": sop_logits,
    }


def test_forward_matches_a_numpy_transcription_of_the_original(tmp_path):
    values, inputs = pretraining_checkpoint(tmp_path)
    model = load_checkpoint(tmp_path)
    expected = original_outputs(values, inputs)
    backbone_inputs = {k: v for k, v in inputs.items() if k != "mask_positions"}
    outputs = {**to_numpy(model.backbone(backbone_inputs)), **to_numpy(model(inputs))}
    # Observed differences are ~1e-7 (float32 against float64), padded positions included.
    for key in ("sequence_output", "pooled_output", "mlm_logits", "sop_logits"):
        np.testing.assert_allclose(outputs[key], expected[key], atol=1e-5, err_msg=key)
    # Both heads are far from constant: the comparison cannot pass on zeros.
    assert expected["mlm_logits"].std() > 0.5 and np.abs(expected["sop_logits"]).max() > 0.5


GROUP_1_LAYER_NORM_1 = "bert/encoder/transformer/group_1/inner_group_0/LayerNorm_1/gamma"


@pytest.mark.parametrize(
    "problem,expected",
    [
        ("missing", f"missing tensor '{GROUP_1_LAYER_NORM_1}'"),
        ("unknown", "unused tensor 'bert/encoder/transformer/group_0/inner_group_0/surprise'"),
        ("shape", "shape mismatch for 'bert/pooler/dense/bias': (3,)"),
    ],
)
def test_negative_cases_give_one_clear_error(tmp_path, problem, expected):
    template = AlbertPretrainer(AlbertBackbone.from_albert_config(CONFIG))
    names = expected_names(CONFIG, PRETRAINING_HEADS)
    kwargs = {}
    if problem == "missing":
        kwargs["drop"] = {GROUP_1_LAYER_NORM_1}
    elif problem == "unknown":
        kwargs["extra"] = {
            "bert/encoder/transformer/group_0/inner_group_0/surprise": np.ones(2, "float32")
        }
    else:
        kwargs["drop"] = {"bert/pooler/dense/bias"}
        kwargs["reshape"] = "bert/pooler/dense/bias"
    write_tf1_checkpoint(tmp_path, template, names, **kwargs)
    with pytest.raises(ValueError, match="Cannot load the TF1 ALBERT checkpoint") as error:
        load_tf1_weights(template, read_tf1_checkpoint(tmp_path))
    assert expected in str(error.value)


def test_no_checkpoint_is_a_clear_error(tmp_path):
    (tmp_path / "albert_config.json").write_text(json.dumps(ORIGINAL_CONFIG))
    with pytest.raises(ValueError, match="No TF1 checkpoint in directory"):
        load_checkpoint(tmp_path)
    with pytest.raises(ValueError, match="Checkpoint not found"):
        load_checkpoint(tmp_path / "nothing-here")
