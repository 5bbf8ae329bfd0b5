"""TF-Hub / Kaggle encoder SavedModels into `load_checkpoint`: Model Garden's layout and ours.

`model_garden_encoder` builds a SavedModel with Model Garden's `AlbertEncoder` variable names
and shapes (EinsumDense attention kernels `(H, heads, head_dim)`, BertPretrainerV2's
`cls/predictions` head) and its own forward pass, written here in plain TensorFlow (einsum
attention, tanh GELU, LayerNorm epsilon 1e-12): the independent implementation whose outputs
ours must equal (1e-5) on real SST-2 sentences. Every weight random, biases and LayerNorm too,
so a mis-mapped tensor shows. The same for tf-models-official's own `AlbertEncoder` (2.20.0,
on tf_keras, installed without its dependencies, which pin tensorflow 2.20) saved with the
interface's dict of inputs. Then the round trip: our own `--format tfhub` export read back.
"""

import os

import numpy as np
import pytest
import tensorflow as tf

from benchmarks import model_garden
from keras_albert import AlbertBackbone, AlbertConfig, AlbertPretrainer, AlbertTokenizer
from keras_albert.convert import detect_format, find_vocabulary, load_checkpoint
from keras_albert.export.tfhub import export_tfhub
from tests.text.text_data import ALBERT_MODEL, load_sst2_dev

ATOL = 1e-5
VOCABULARY, EMBEDDING, HIDDEN, HEADS, INTERMEDIATE = 30000, 8, 16, 2, 32
MAX_LENGTH, NUM_LAYERS = 64, 3


def gelu(x):
    return 0.5 * x * (1.0 + tf.tanh(0.7978845608028654 * (x + 0.044715 * x**3)))


def layer_norm(x, gamma, beta):
    mean, variance = tf.nn.moments(x, axes=[-1], keepdims=True)
    return (x - mean) * tf.math.rsqrt(variance + 1e-12) * gamma + beta


def model_garden_encoder(seed: int, with_mlm: bool, renamed=None) -> tf.train.Checkpoint:
    rng = np.random.default_rng(seed)
    head_dim = HIDDEN // HEADS
    shapes = {
        "word_embeddings/embeddings": (VOCABULARY, EMBEDDING),
        "position_embedding/embeddings": (MAX_LENGTH, EMBEDDING),
        "type_embeddings/embeddings": (2, EMBEDDING),
        "embeddings/layer_norm/gamma": (EMBEDDING,),
        "embeddings/layer_norm/beta": (EMBEDDING,),
        "embedding_projection/kernel": (EMBEDDING, HIDDEN),
        "embedding_projection/bias": (HIDDEN,),
        "transformer/self_attention/attention_output/kernel": (HEADS, head_dim, HIDDEN),
        "transformer/self_attention/attention_output/bias": (HIDDEN,),
        "transformer/self_attention_layer_norm/gamma": (HIDDEN,),
        "transformer/self_attention_layer_norm/beta": (HIDDEN,),
        "transformer/intermediate/kernel": (HIDDEN, INTERMEDIATE),
        "transformer/intermediate/bias": (INTERMEDIATE,),
        "transformer/output/kernel": (INTERMEDIATE, HIDDEN),
        "transformer/output/bias": (HIDDEN,),
        "transformer/output_layer_norm/gamma": (HIDDEN,),
        "transformer/output_layer_norm/beta": (HIDDEN,),
        "pooler_transform/kernel": (HIDDEN, HIDDEN),
        "pooler_transform/bias": (HIDDEN,),
    }
    for name in ("query", "key", "value"):
        shapes[f"transformer/self_attention/{name}/kernel"] = (HIDDEN, HEADS, head_dim)
        shapes[f"transformer/self_attention/{name}/bias"] = (HEADS, head_dim)
    mlm_shapes = {
        "cls/predictions/transform/dense/kernel": (HIDDEN, EMBEDDING),
        "cls/predictions/transform/dense/bias": (EMBEDDING,),
        "cls/predictions/transform/LayerNorm/gamma": (EMBEDDING,),
        "cls/predictions/transform/LayerNorm/beta": (EMBEDDING,),
        "cls/predictions/output_bias/bias": (VOCABULARY,),
    }

    def variable(name, shape):
        scale = 1.0 if name.endswith("gamma") else 0.0
        value = scale + rng.normal(0, 0.3, shape).astype("float32")
        return tf.Variable(value, name=(renamed or {}).get(name, name))

    w = {name: variable(name, shape) for name, shape in shapes.items()}
    heads_w = {name: variable(name, shape) for name, shape in mlm_shapes.items()}

    def encode(inputs):
        ids, mask, types = inputs["input_word_ids"], inputs["input_mask"], inputs["input_type_ids"]
        length = tf.shape(ids)[1]
        x = (
            tf.gather(w["word_embeddings/embeddings"], ids)
            + w["position_embedding/embeddings"][tf.newaxis, :length]
            + tf.gather(w["type_embeddings/embeddings"], types)
        )
        x = layer_norm(x, w["embeddings/layer_norm/gamma"], w["embeddings/layer_norm/beta"])
        x = tf.einsum("bse,eh->bsh", x, w["embedding_projection/kernel"])
        x += w["embedding_projection/bias"]
        adder = (1.0 - tf.cast(mask, tf.float32))[:, tf.newaxis, tf.newaxis, :] * -10000.0
        prefix = "transformer/self_attention"
        outputs = []
        for _ in range(NUM_LAYERS):
            q, k, v = (
                tf.einsum("bsh,hnd->bsnd", x, w[f"{prefix}/{n}/kernel"]) + w[f"{prefix}/{n}/bias"]
                for n in ("query", "key", "value")
            )
            scores = tf.einsum("bqnd,bknd->bnqk", q, k) / np.sqrt(HIDDEN // HEADS) + adder
            context = tf.einsum("bnqk,bknd->bqnd", tf.nn.softmax(scores, -1), v)
            attended = tf.einsum("bqnd,ndh->bqh", context, w[f"{prefix}/attention_output/kernel"])
            attended += w[f"{prefix}/attention_output/bias"]
            x = layer_norm(
                x + attended, w[f"{prefix}_layer_norm/gamma"], w[f"{prefix}_layer_norm/beta"]
            )
            inner = gelu(
                x @ w["transformer/intermediate/kernel"] + w["transformer/intermediate/bias"]
            )
            out = inner @ w["transformer/output/kernel"] + w["transformer/output/bias"]
            x = layer_norm(
                x + out,
                w["transformer/output_layer_norm/gamma"],
                w["transformer/output_layer_norm/beta"],
            )
            outputs.append(x)
        pooled = tf.tanh(x[:, 0] @ w["pooler_transform/kernel"] + w["pooler_transform/bias"])
        return {"sequence_output": x, "pooled_output": pooled, "encoder_outputs": outputs}

    specs = {
        name: tf.TensorSpec([None, None], tf.int32, name=name)
        for name in ("input_word_ids", "input_mask", "input_type_ids")
    }
    encoder = tf.train.Checkpoint()

    def call(inputs, training=False):
        return {**encode(inputs), "default": encode(inputs)["pooled_output"]}

    encoder.__call__ = tf.function(call)
    encoder.__call__.get_concrete_function(specs, training=False)
    encoder.variables = list(w.values())
    if with_mlm:

        def call_mlm(inputs, training=False):
            encoded = encode(inputs)
            x = tf.gather(encoded["sequence_output"], inputs["masked_lm_positions"], batch_dims=1)
            x = gelu(
                x @ heads_w["cls/predictions/transform/dense/kernel"]
                + heads_w["cls/predictions/transform/dense/bias"]
            )
            x = layer_norm(
                x,
                heads_w["cls/predictions/transform/LayerNorm/gamma"],
                heads_w["cls/predictions/transform/LayerNorm/beta"],
            )
            logits = tf.einsum("bpe,ve->bpv", x, w["word_embeddings/embeddings"])
            return {**encoded, "mlm_logits": logits + heads_w["cls/predictions/output_bias/bias"]}

        encoder.mlm = tf.train.Checkpoint()
        encoder.mlm.__call__ = tf.function(call_mlm)
        mlm_specs = {**specs, "masked_lm_positions": tf.TensorSpec([None, None], tf.int32)}
        encoder.mlm.__call__.get_concrete_function(mlm_specs, training=False)
        encoder.mlm.variables = list(w.values()) + list(heads_w.values())
    return encoder


@pytest.fixture(scope="module")
def tokenizer():
    return AlbertTokenizer(ALBERT_MODEL)


@pytest.fixture(scope="module")
def sst2_inputs(tokenizer):
    packed = tokenizer.packer(MAX_LENGTH)(tokenizer(tf.constant(load_sst2_dev()[:16])))
    return {
        "input_word_ids": tf.cast(packed["token_ids"], tf.int32),
        "input_type_ids": tf.cast(packed["segment_ids"], tf.int32),
        "input_mask": tf.cast(packed["padding_mask"], tf.int32),
    }


def ours(inputs):
    return {
        "token_ids": inputs["input_word_ids"],
        "segment_ids": inputs["input_type_ids"],
        "padding_mask": inputs["input_mask"],
    }


def assert_same_encoder_outputs(actual, expected, inputs):
    """The sequence output on the real tokens (`input_mask` 1) and the pooled output, ≤ ATOL."""
    mask = inputs["input_mask"].numpy()[..., None] == 1
    np.testing.assert_allclose(
        actual["sequence_output"].numpy() * mask,
        expected["sequence_output"].numpy() * mask,
        atol=ATOL,
        rtol=0,
    )
    np.testing.assert_allclose(
        actual["pooled_output"], expected["pooled_output"], atol=ATOL, rtol=0
    )


def test_model_garden_encoder_with_mlm_loads_as_our_pretrainer(tmp_path, sst2_inputs):
    tf.saved_model.save(model_garden_encoder(seed=1, with_mlm=True), str(tmp_path / "encoder"))
    source = str(tmp_path / "encoder")
    assert detect_format(source) == "tfhub"
    model = load_checkpoint(source)
    assert isinstance(model, AlbertPretrainer)
    config = model.backbone.albert_config
    assert (config.num_layers, config.num_heads, config.max_sequence_length) == (
        NUM_LAYERS,
        HEADS,
        MAX_LENGTH,
    )
    reference = tf.saved_model.load(source)
    positions = tf.constant([[1, 2, 3]] * 16, tf.int32)
    expected = reference.mlm({**sst2_inputs, "masked_lm_positions": positions})
    actual = model({**ours(sst2_inputs), "mask_positions": positions})
    np.testing.assert_allclose(actual["mlm_logits"], expected["mlm_logits"], atol=ATOL, rtol=0)
    assert_same_encoder_outputs(model.backbone(ours(sst2_inputs)), expected, sst2_inputs)
    backbone = load_checkpoint(source, model="backbone")
    assert isinstance(backbone, AlbertBackbone)


def test_tf_models_official_encoder_loads_with_its_outputs(tmp_path, sst2_inputs):
    # tf-models-official's own AlbertEncoder (benchmarks/model_garden.py builds it), every
    # weight random, called through the TF-Hub interface's dict of inputs.
    config = AlbertConfig(
        vocabulary_size=VOCABULARY, embedding_dim=EMBEDDING, hidden_dim=HIDDEN, num_heads=HEADS,
        intermediate_dim=INTERMEDIATE, max_sequence_length=MAX_LENGTH, num_layers=NUM_LAYERS,
    )  # fmt: skip
    encoder = model_garden.albert_encoder(config)
    rng = np.random.default_rng(3)
    for variable in encoder.weights:
        scale = 1.0 if "gamma" in variable.name else 0.0
        variable.assign(scale + rng.normal(0, 0.3, variable.shape).astype("float32"))

    def call(inputs, training=False):
        names = ("input_word_ids", "input_mask", "input_type_ids")
        return encoder([inputs[name] for name in names], training=training)

    root = tf.train.Checkpoint()
    root.variables = list(encoder.weights)
    root.__call__ = tf.function(call)
    specs = {name: tf.TensorSpec([None, None], tf.int32, name=name)
             for name in ("input_word_ids", "input_mask", "input_type_ids")}  # fmt: skip
    root.__call__.get_concrete_function(specs, training=False)
    tf.saved_model.save(root, str(tmp_path / "encoder"))

    backbone = load_checkpoint(str(tmp_path / "encoder"))
    assert isinstance(backbone, AlbertBackbone)
    assert backbone.albert_config.num_layers == NUM_LAYERS
    expected = call(sst2_inputs)
    assert_same_encoder_outputs(backbone(ours(sst2_inputs)), expected, sst2_inputs)


def test_missing_and_unexpected_tensors_are_listed(tmp_path):
    # A variable of another name: the one the table expects is missing, the other unused.
    renamed = {"pooler_transform/bias": "pooler_transform/bias_1"}
    encoder = model_garden_encoder(seed=2, with_mlm=False, renamed=renamed)
    tf.saved_model.save(encoder, str(tmp_path / "encoder"))
    with pytest.raises(ValueError, match="2 problem") as raised:
        load_checkpoint(tmp_path / "encoder")
    assert "missing tensor 'pooler_transform/bias'" in str(raised.value)
    assert "unused tensor 'pooler_transform/bias_1'" in str(raised.value)


@pytest.mark.slow
def test_our_tfhub_export_reads_back(tmp_path, tokenizer, sst2_inputs):
    pretrainer = AlbertPretrainer(
        AlbertBackbone(
            vocabulary_size=VOCABULARY,
            embedding_dim=EMBEDDING,
            hidden_dim=HIDDEN,
            intermediate_dim=INTERMEDIATE,
            num_layers=NUM_LAYERS,
            num_heads=4,
            max_sequence_length=MAX_LENGTH,
        )
    )
    rng = np.random.default_rng(7)
    for weight in pretrainer.weights:
        weight.assign(weight.numpy() + rng.normal(0, 0.2, weight.shape).astype("float32"))
    export_tfhub(pretrainer, tokenizer, tmp_path / "hub")
    source = tmp_path / "hub" / "encoder"
    assert find_vocabulary(source) == str(source / "assets" / "sentencepiece.model")
    loaded = load_checkpoint(source)
    assert isinstance(loaded, AlbertPretrainer)
    assert loaded.backbone.albert_config == pretrainer.backbone.albert_config  # num_heads=4
    for name in ("backbone", "masked_lm_head"):
        mine = getattr(pretrainer, name).get_weights()
        for a, b in zip(getattr(loaded, name).get_weights(), mine, strict=True):
            np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(
        loaded.backbone(ours(sst2_inputs))["pooled_output"],
        pretrainer.backbone(ours(sst2_inputs))["pooled_output"],
        atol=ATOL,
        rtol=0,
    )
    assert os.path.isfile(source / "assets" / "albert_config.json")
