"""`AnswerClassHead` against a NumPy reference written from google-research/albert's
`squad_utils.create_v2_model` (same random weights)."""

import numpy as np
import pytest

from keras_albert.layers.answer_class_head import AnswerClassHead
from tests.helpers import check_layer_roundtrips, to_numpy

HIDDEN = 8
K = 3


def packed_batch(rng, batch=4, seq=16):
    """Segment ids and padding of `[CLS] q [SEP] c [SEP] pad`, and the original's p_mask."""
    segment_ids = np.zeros((batch, seq), np.int32)
    padding_mask = np.zeros((batch, seq), np.int32)
    p_mask = np.ones((batch, seq), np.float32)
    for row in range(batch):
        query = int(rng.integers(1, 4))
        context = int(rng.integers(K + 1, seq - query - 3 + 1))
        length = query + context + 3
        padding_mask[row, :length] = 1
        segment_ids[row, query + 2 : length] = 1
        p_mask[row, 0] = 0  # [CLS]
        p_mask[row, query + 2 : query + 2 + context] = 0  # the context
    return segment_ids, padding_mask, p_mask


def log_softmax(x):
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def layer_norm(x, gamma, beta, epsilon=1e-12):
    mean = x.mean(-1, keepdims=True)
    variance = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(variance + epsilon) * gamma + beta


def reference(weights, output, p_mask, start_positions):
    """The original's graph, in NumPy: output (batch, seq, H), p_mask 1 = not a span position."""
    w = {path.split("/", 1)[1]: value for path, value in weights.items()}
    start_logits = (output @ w["start_logits_dense/kernel"])[..., 0] + w["start_logits_dense/bias"]
    start_masked = start_logits * (1 - p_mask) - 1e30 * p_mask
    start_log_probs = log_softmax(start_masked)

    def end_log_probs(start_feature):  # (batch, H) → (batch, seq)
        tiled = np.broadcast_to(start_feature[:, None], output.shape)
        hidden = np.tanh(
            np.concatenate([output, tiled], -1) @ w["end_logits_dense_0/kernel"]
            + w["end_logits_dense_0/bias"]
        )
        hidden = layer_norm(
            hidden, w["end_logits_layer_norm/gamma"], w["end_logits_layer_norm/beta"]
        )
        logits = (hidden @ w["end_logits_dense_1/kernel"])[..., 0] + w["end_logits_dense_1/bias"]
        return log_softmax(logits * (1 - p_mask) - 1e30 * p_mask)

    batch = np.arange(len(output))
    start_top_index = np.argsort(-start_log_probs, axis=-1)[:, :K]
    start_top_log_probs = np.take_along_axis(start_log_probs, start_top_index, -1)
    end_top_index, end_top_log_probs = [], []
    for i in range(K):
        ends = end_log_probs(output[batch, start_top_index[:, i]])
        top = np.argsort(-ends, axis=-1)[:, :K]
        end_top_index.append(top)
        end_top_log_probs.append(np.take_along_axis(ends, top, -1))
    start_probs = np.exp(start_masked - start_masked.max(-1, keepdims=True))
    start_probs /= start_probs.sum(-1, keepdims=True)
    start_feature = np.einsum("bl,blh->bh", start_probs, output)
    answer = np.tanh(
        np.concatenate([start_feature, output[:, 0]], -1) @ w["answer_class_dense_0/kernel"]
        + w["answer_class_dense_0/bias"]
    )
    cls_logits = (answer @ w["answer_class_dense_1/kernel"])[:, 0]
    return {
        "start_log_probs": start_log_probs,
        "end_log_probs": end_log_probs(output[batch, start_positions]),
        "start_top_log_probs": start_top_log_probs,
        "start_top_index": start_top_index,
        "end_top_log_probs": np.stack(end_top_log_probs, 1).reshape(len(output), K * K),
        "end_top_index": np.stack(end_top_index, 1).reshape(len(output), K * K),
        "cls_logits": cls_logits,
    }


def randomized_head(rng, output, segment_ids, padding_mask):
    head = AnswerClassHead(HIDDEN, num_start_candidates=K, num_end_candidates=K, name="head")
    head(output, segment_ids, padding_mask)
    for weight in head.weights:
        weight.assign(rng.normal(size=weight.shape).astype("float32") * 0.5)
    return head


def test_matches_the_original_definition():
    rng = np.random.default_rng(0)
    segment_ids, padding_mask, p_mask = packed_batch(rng)
    output = rng.normal(size=(*segment_ids.shape, HIDDEN)).astype("float32")
    head = randomized_head(rng, output, segment_ids, padding_mask)
    # Gold starts anywhere valid (incl. [CLS]).
    start_positions = np.array([rng.choice(np.flatnonzero(row == 0)) for row in p_mask])

    actual = to_numpy(head(output, segment_ids, padding_mask, start_positions))
    weights = {w.path: w.numpy().astype("float64") for w in head.weights}
    expected = reference(weights, output.astype("float64"), p_mask, start_positions)
    valid = p_mask == 0
    for name in ("start_log_probs", "end_log_probs"):
        np.testing.assert_allclose(actual[name][valid], expected[name][valid], atol=1e-5)
        assert (actual[name][~valid] < -1e20).all(), name
    np.testing.assert_array_equal(actual["start_top_index"], expected["start_top_index"])
    for name in ("start_top_log_probs", "cls_logits"):
        np.testing.assert_allclose(actual[name], expected[name], atol=1e-5, err_msg=name)

    # Inference (no gold starts): the beam, and the end conditioned on the best start.
    inference = to_numpy(head(output, segment_ids, padding_mask))
    np.testing.assert_array_equal(inference["end_top_index"], expected["end_top_index"])
    for name in ("start_top_log_probs", "end_top_log_probs", "cls_logits"):
        np.testing.assert_allclose(inference[name], expected[name], atol=1e-5, err_msg=name)
    best = reference(weights, output.astype("float64"), p_mask, expected["start_top_index"][:, 0])
    np.testing.assert_allclose(
        inference["end_log_probs"][valid], best["end_log_probs"][valid], atol=1e-5
    )


def test_roundtrips(tmp_path):
    rng = np.random.default_rng(1)
    segment_ids, padding_mask, _ = packed_batch(rng, batch=2)
    output = rng.normal(size=(*segment_ids.shape, HIDDEN)).astype("float32")
    head = AnswerClassHead(HIDDEN, num_start_candidates=K, num_end_candidates=2)
    check_layer_roundtrips(head, (output, segment_ids, padding_mask), tmp_path, atol=1e-5)


@pytest.mark.parametrize(
    "arguments, message",
    [({"hidden_dim": 0}, "hidden_dim"), ({"hidden_dim": 8, "num_end_candidates": 0}, "num_end")],
)
def test_bad_arguments_name_the_value(arguments, message):
    with pytest.raises(ValueError, match=message):
        AnswerClassHead(**arguments)
