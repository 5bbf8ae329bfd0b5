"""The layers, each against a NumPy reference of its formula, plus serialization."""

import keras
import numpy as np
import pytest
import tensorflow as tf
from keras import ops

from keras_albert.layers import (
    FactorizedEmbedding,
    FeedForward,
    MaskedLMHead,
    SelfAttention,
    SentenceOrderHead,
    TransformerEncoder,
)
from keras_albert.layers.layer_norm import constant_weights
from tests.export.serving_harness import integer_transposes
from tests.helpers import check_layer_roundtrips, random_inputs
from tests.layers.served_kernels import ONEDNN_BFLOAT16, assert_within_eigen_softmax, served_kernels

EPSILON = 1e-12


def layer_norm(x, gamma, beta):
    mean = x.mean(-1, keepdims=True)
    variance = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(variance + EPSILON) * gamma + beta


def gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))


def randomize(layer, seed=0):
    rng = np.random.default_rng(seed)
    for weight in layer.weights:
        weight.assign(rng.normal(0, 0.5, weight.shape).astype("float32"))


def dense(x, layer):
    return x @ layer.kernel.numpy() + layer.bias.numpy()


def test_factorized_embedding_matches_formula(tmp_path):
    inputs = random_inputs(vocabulary_size=20, batch_size=2, sequence_length=6)
    layer = FactorizedEmbedding(20, embedding_dim=4, hidden_dim=10, max_sequence_length=8)
    layer(inputs["token_ids"], inputs["segment_ids"])
    randomize(layer)
    x = (
        layer.token_embedding.embeddings.numpy()[inputs["token_ids"]]
        + layer.segment_embedding.embeddings.numpy()[inputs["segment_ids"]]
        + layer.position_embeddings.numpy()[:6]
    )
    x = layer_norm(x, layer.layer_norm.gamma.numpy(), layer.layer_norm.beta.numpy())
    expected = dense(x, layer.projection)
    actual = layer(inputs["token_ids"], inputs["segment_ids"])
    np.testing.assert_allclose(actual, expected, atol=1e-5, rtol=0)
    assert layer.count_params() == 20 * 4 + 8 * 4 + 2 * 4 + 2 * 4 + 4 * 10 + 10
    check_layer_roundtrips(layer, (inputs["token_ids"], inputs["segment_ids"]), tmp_path)


def test_factorized_embedding_rejects_long_sequences_and_bad_arguments():
    layer = FactorizedEmbedding(20, embedding_dim=4, hidden_dim=10, max_sequence_length=8)
    with pytest.raises(ValueError, match="length 9.*max_sequence_length=8"):
        layer(np.ones((1, 9), "int32"), np.zeros((1, 9), "int32"))
    with pytest.raises(ValueError, match="vocabulary_size=0"):
        FactorizedEmbedding(0, embedding_dim=4, hidden_dim=10)
    with pytest.raises(ValueError, match="dropout=1.5"):
        FactorizedEmbedding(20, embedding_dim=4, hidden_dim=10, dropout=1.5)


def numpy_attention(layer, x, padding_mask):
    batch, seq, hidden = x.shape
    heads, head_dim = layer.num_heads, hidden // layer.num_heads

    def split(t):
        return t.reshape(batch, seq, heads, head_dim).transpose(0, 2, 1, 3)

    q, k, v = (split(dense(x, d)) for d in (layer.query_dense, layer.key_dense, layer.value_dense))
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(head_dim)
    scores = scores + (1 - padding_mask[:, None, None, :]) * -10000.0
    probabilities = np.exp(scores - scores.max(-1, keepdims=True))
    probabilities /= probabilities.sum(-1, keepdims=True)
    context = (probabilities @ v).transpose(0, 2, 1, 3).reshape(batch, seq, hidden)
    ln = layer.layer_norm
    return layer_norm(x + dense(context, layer.output_dense), ln.gamma.numpy(), ln.beta.numpy())


def test_self_attention_matches_formula_and_ignores_padding(tmp_path):
    rng = np.random.default_rng(1)
    x = rng.normal(size=(2, 5, 12)).astype("float32")
    padding_mask = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], "int32")
    layer = SelfAttention(num_heads=3)
    layer(x, padding_mask)
    randomize(layer, seed=2)
    actual = np.asarray(layer(x, padding_mask))
    np.testing.assert_allclose(actual, numpy_attention(layer, x, padding_mask), atol=1e-5)

    changed = x.copy()
    changed[1, 3:] = rng.normal(size=(2, 12))
    again = np.asarray(layer(changed, padding_mask))
    np.testing.assert_allclose(again[1, :3], actual[1, :3], atol=1e-6)
    check_layer_roundtrips(layer, (x, padding_mask), tmp_path, atol=1e-5)


def test_self_attention_needs_divisible_heads():
    with pytest.raises(ValueError, match="hidden_dim=10, num_heads=3"):
        SelfAttention(num_heads=3)(np.ones((1, 2, 10), "float32"))


class _Probabilities(keras.layers.Layer):
    """The attention softmax of a bfloat16 `SelfAttention`, of scores given in float32."""

    def __init__(self, attention):
        super().__init__(dtype="bfloat16", name="probabilities")
        self.attention = attention

    def call(self, scores):
        return self.attention._softmax(ops.cast(scores, "bfloat16"))


def test_served_bfloat16_softmax_is_the_float32_softmax_rounded_once_where_onednn_runs():
    # Served, the bfloat16 scores go to one softmax kernel without the casts to float32 and
    # back; oneDNN's computes in float32, so the probabilities are the same bits. Eigen's
    # (without oneDNN) computes in bfloat16, within that format's bound.
    rng = np.random.default_rng(4)
    scores = rng.normal(0, 3, (2, 3, 40, 40)).astype("float32")
    scores[1, :, :, 30:] -= 10000.0  # padded keys
    attention = SelfAttention(num_heads=3, dtype="bfloat16")
    layer = _Probabilities(attention)
    with constant_weights():  # as served: no casts between the scores and the probabilities
        spec = tf.TensorSpec([None] * 4, "bfloat16")
        graph = tf.function(attention._softmax).get_concrete_function(spec).graph
    assert {op.type for op in graph.get_operations()} == {"Placeholder", "Softmax", "Identity"}
    kernels, served = served_kernels(layer, scores)
    assert ("_MklSoftmax" if ONEDNN_BFLOAT16 else "Softmax") in kernels, sorted(kernels)
    trained = layer(scores)  # outside serving: the explicit float32 softmax
    rounded_scores = ops.cast(ops.cast(scores, "bfloat16"), "float32")
    exact = keras.ops.softmax(rounded_scores, axis=-1)
    np.testing.assert_array_equal(
        np.asarray(ops.cast(trained, "float32")),
        np.asarray(ops.cast(ops.cast(exact, "bfloat16"), "float32")),
    )
    served = np.asarray(ops.cast(served, "float32"))
    if ONEDNN_BFLOAT16:
        np.testing.assert_array_equal(served, np.asarray(ops.cast(trained, "float32")))
    else:  # Eigen's kernel computes in bfloat16: within that arithmetic's bound
        assert not np.array_equal(served, np.asarray(ops.cast(trained, "float32")))
        assert_within_eigen_softmax(served, np.asarray(rounded_scores))


def test_feedforward_matches_formula(tmp_path):
    x = np.random.default_rng(3).normal(size=(2, 4, 6)).astype("float32")
    layer = FeedForward(intermediate_dim=10)
    layer(x)
    randomize(layer, seed=4)
    inner = gelu_tanh(dense(x, layer.intermediate_dense))
    ln = layer.layer_norm
    expected = layer_norm(x + dense(inner, layer.output_dense), ln.gamma.numpy(), ln.beta.numpy())
    np.testing.assert_allclose(layer(x), expected, atol=1e-5, rtol=0)
    check_layer_roundtrips(layer, (x,), tmp_path)
    with pytest.raises(ValueError, match="activation='gelu_fast'"):
        FeedForward(intermediate_dim=10, activation="gelu_fast")


def test_transformer_encoder_is_attention_then_feedforward(tmp_path):
    x = np.random.default_rng(5).normal(size=(2, 4, 8)).astype("float32")
    mask = np.array([[1, 1, 1, 1], [1, 1, 0, 0]], "int32")
    block = TransformerEncoder(num_heads=2, intermediate_dim=16, activation="relu")
    block(x, mask)
    randomize(block, seed=6)
    expected = block.feedforward(block.attention(x, padding_mask=mask))
    np.testing.assert_allclose(block(x, mask), expected, atol=1e-6)
    assert block.count_params() == 4 * (8 * 8 + 8) + 2 * 8 + (8 * 16 + 16 + 16 * 8 + 8) + 2 * 8
    check_layer_roundtrips(block, (x, mask), tmp_path, atol=1e-5)


def test_masked_lm_head_is_tied_to_the_embedding_table():
    table = keras.layers.Embedding(11, 4)
    table.build((None,))
    head = MaskedLMHead(table, embedding_dim=4, activation="relu")
    sequence = np.random.default_rng(7).normal(size=(2, 5, 6)).astype("float32")
    positions = np.array([[0, 3], [4, 1]], "int32")
    head(sequence, positions)
    randomize(head, seed=8)
    randomize(table, seed=9)

    gathered = np.take_along_axis(sequence, positions[..., None], axis=1)
    x = np.maximum(dense(gathered, head.dense), 0)
    x = layer_norm(x, head.layer_norm.gamma.numpy(), head.layer_norm.beta.numpy())
    expected = x @ table.embeddings.numpy().T + head.output_bias.numpy()
    np.testing.assert_allclose(head(sequence, positions), expected, atol=1e-5, rtol=0)

    # Tied, not copied: changing the table changes the head's output; the head owns no table.
    table.embeddings.assign(table.embeddings.numpy() * 2.0)
    np.testing.assert_allclose(
        head(sequence, positions),
        x @ table.embeddings.numpy().T + head.output_bias.numpy(),
        atol=1e-5,
        rtol=0,
    )
    # The head tracks the table (so it is saved with it) but adds only dense + LayerNorm + bias.
    own = [w for w in head.weights if w is not table.embeddings]
    assert len(own) == len(head.weights) - 1
    assert sum(int(np.prod(w.shape)) for w in own) == (6 * 4 + 4) + 2 * 4 + 11
    with pytest.raises(ValueError, match="must be a keras.layers.Embedding"):
        MaskedLMHead(table.embeddings, embedding_dim=4)

    # Its training step has no integer Transpose (oneDNN's `E0000 … DT_INT64` line).
    @tf.function
    def loss_and_gradients(sequence):
        with tf.GradientTape() as tape:
            tape.watch(sequence)
            loss = tf.reduce_sum(head(sequence, positions))
        return loss, tape.gradient(loss, [sequence, *head.trainable_weights])

    graph = loss_and_gradients.get_concrete_function(tf.constant(sequence)).graph.as_graph_def()
    assert integer_transposes(graph) == []


def test_sentence_order_head(tmp_path):
    pooled = np.random.default_rng(10).normal(size=(3, 6)).astype("float32")
    head = SentenceOrderHead()
    head(pooled)
    randomize(head, seed=11)
    np.testing.assert_allclose(head(pooled), dense(pooled, head.dense), atol=1e-6)
    check_layer_roundtrips(head, (pooled,), tmp_path)
    assert ops.convert_to_numpy(head(pooled)).dtype == np.float32
