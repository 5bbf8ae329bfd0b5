"""`AlbertQuestionAnswerer`: outputs, masking, losses and serialization of both heads."""

import keras
import numpy as np
import pytest

from keras_albert import AlbertQuestionAnswerer
from tests.helpers import check_model_roundtrips, random_inputs, tiny_backbone, to_numpy


def labels(inputs, seed=0, first=1):
    """Start/end in each row's real tokens from `first`, [CLS] (unanswerable) for the first row."""
    rng = np.random.default_rng(seed)
    lengths = inputs["padding_mask"].sum(1)
    starts = np.array([rng.integers(first, n - 2) for n in lengths])
    ends = np.minimum(starts + 1, lengths - 2)
    starts[0] = ends[0] = 0
    impossible = (starts == 0).astype("int32")
    return {
        **inputs,
        "start_positions": starts.astype("int32"),
        "end_positions": ends.astype("int32"),
        "is_impossible": impossible,
    }


@pytest.mark.parametrize("answerability", ["null_span", "answer_class"])
def test_roundtrips(answerability, tmp_path):
    model = AlbertQuestionAnswerer(tiny_backbone(), answerability=answerability)
    inputs = random_inputs(batch_size=2, sequence_length=12)
    check_model_roundtrips(model, inputs, tmp_path, atol=1e-5)


def test_null_span_outputs_are_float32_and_mask_padding():
    model = AlbertQuestionAnswerer(tiny_backbone(dtype="mixed_float16"))
    inputs = random_inputs(batch_size=3, sequence_length=12)
    outputs = to_numpy(model(inputs))
    padding = inputs["padding_mask"] == 0
    assert padding.any()
    for name in ("start_logits", "end_logits"):
        assert outputs[name].dtype == np.float32 and outputs[name].shape == (3, 12)
        assert (outputs[name][padding] == -1e9).all()
        assert (np.abs(outputs[name][~padding]) < 100).all()


def test_null_span_loss_is_the_mean_of_start_and_end_cross_entropy():
    model = AlbertQuestionAnswerer(tiny_backbone())
    arrays = labels(random_inputs(batch_size=3, sequence_length=12))
    x, y = model.training_targets(arrays)
    model.compile(optimizer="sgd", **model.training_loss())
    outputs = to_numpy(model(x))

    def cross_entropy(logits, positions):
        logits = logits - logits.max(-1, keepdims=True)
        log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
        return -log_probs[np.arange(len(positions)), positions].mean()

    expected = (
        cross_entropy(outputs["start_logits"], arrays["start_positions"])
        + cross_entropy(outputs["end_logits"], arrays["end_positions"])
    ) / 2
    loss = model.evaluate(x, y, verbose=0, return_dict=True)["loss"]
    assert loss == pytest.approx(expected, rel=1e-5)


def test_answer_class_loss_and_conditioning_on_the_gold_start():
    model = AlbertQuestionAnswerer(tiny_backbone(), answerability="answer_class", dropout=0.0)
    inputs = random_inputs(batch_size=3, sequence_length=12, pad=False)
    # [CLS] q q [SEP] context ... [SEP]: the context starts at position 4.
    inputs["segment_ids"] = np.where(np.arange(12) >= 4, 1, 0)[None].repeat(3, 0).astype("int32")
    arrays = labels(inputs)
    arrays["start_positions"][1:] = [5, 7]
    arrays["end_positions"][1:] = [6, 9]
    x, y = model.training_targets(arrays)
    outputs = to_numpy(model(x))
    # The end depends on the start it is conditioned on.
    unconditioned = to_numpy(model(inputs))
    assert not np.allclose(outputs["end_log_probs"], unconditioned["end_log_probs"])
    # Question, [SEP] and the final [SEP] can neither start nor end a span; [CLS] can.
    blocked = np.array([1, 2, 3, 11])
    assert (outputs["start_log_probs"][:, blocked] < -1e20).all()
    assert (outputs["start_log_probs"][:, 0] > -1e20).all()

    rows = np.arange(3)
    start = -outputs["start_log_probs"][rows, arrays["start_positions"]].mean()
    end = -outputs["end_log_probs"][rows, arrays["end_positions"]].mean()
    logits, target = outputs["cls_logits"], arrays["is_impossible"]
    sigmoid_ce = np.mean(
        np.maximum(logits, 0) - logits * target + np.log1p(np.exp(-np.abs(logits)))
    )
    model.compile(optimizer="sgd", **model.training_loss())
    loss = model.evaluate(x, y, verbose=0, return_dict=True)["loss"]
    assert loss == pytest.approx((start + end) / 2 + 0.5 * sigmoid_ce, rel=1e-5)


def test_answer_class_fits_a_batch():
    model = AlbertQuestionAnswerer(tiny_backbone(), answerability="answer_class")
    inputs = random_inputs(batch_size=4, sequence_length=12, pad=False)
    inputs["segment_ids"] = np.where(np.arange(12) >= 3, 1, 0)[None].repeat(4, 0).astype("int32")
    arrays = labels(inputs, seed=3, first=3)
    x, y = model.training_targets(arrays)
    model.compile(optimizer=keras.optimizers.Adam(1e-2), **model.training_loss())
    history = model.fit(x, y, epochs=30, batch_size=4, verbose=0).history["loss"]
    assert history[-1] < 0.5 * history[0]


@pytest.mark.parametrize(
    "arguments, message",
    [
        ({"answerability": "cls"}, "answerability"),
        ({"num_start_candidates": 0}, "num_start_candidates"),
        ({"dropout": 1.5}, "dropout"),
    ],
)
def test_bad_arguments_name_the_value(arguments, message):
    with pytest.raises(ValueError, match=message):
        AlbertQuestionAnswerer(tiny_backbone(), **arguments)
