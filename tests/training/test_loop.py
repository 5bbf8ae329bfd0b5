"""The loop's pieces that need no cluster: replicas' shares of global batches, the step
progress line, history.csv across a resume, the pretraining sums and loss against NumPy."""

import csv
import io

import numpy as np
import pytest
import tensorflow as tf

from keras_albert.training.logs import HistoryCsv
from keras_albert.training.loop import replica_share
from keras_albert.training.losses import pretraining_logs, pretraining_loss, pretraining_sums
from keras_albert.training.progress import StepProgress, format_duration


def global_batches(sizes):
    rows = np.arange(sum(sizes))
    bounds = np.cumsum([0, *sizes])
    batches = [(rows[a:b], -rows[a:b]) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
    return tf.data.Dataset.from_generator(
        lambda: iter(batches),
        output_signature=(tf.TensorSpec([None], tf.int64), tf.TensorSpec([None], tf.int64)),
    )


@pytest.mark.parametrize("pipelines", [1, 2, 4])
def test_replicas_together_see_the_global_batches(pipelines):
    """4 replicas over 1, 2 or 4 input pipelines (workers): replica r gets rows
    [2r, 2r + 2) of each global batch of 8, whatever the number of pipelines; a short last
    batch (5 rows) gives shorter and empty shares, one per replica all the same."""
    replicas, sizes = 4, [8, 8, 5]
    shares = {}
    for pipeline in range(pipelines):
        context = tf.distribute.InputContext(pipelines, pipeline, replicas)
        elements = list(replica_share(global_batches(sizes), 8, context))
        local = replicas // pipelines
        assert len(elements) == local * len(sizes)
        for index, (rows, negated) in enumerate(elements):
            np.testing.assert_array_equal(negated, -rows)
            replica = pipeline * local + index % local
            shares.setdefault(replica, []).append(rows.numpy().tolist())
    for replica in range(replicas):
        first = [2 * replica, 2 * replica + 1]
        last = [row for row in (16 + 2 * replica, 17 + 2 * replica) if row < 21]
        assert shares[replica] == [first, [8 + row for row in first], last]


def test_one_replica_keeps_the_dataset():
    dataset = global_batches([8])
    assert replica_share(dataset, 8, tf.distribute.InputContext(1, 0, 1)) is dataset


def test_progress_line_has_rate_and_time_left():
    out = io.StringIO()
    ticks = iter([100.0, 130.0, 140.0, 150.0])
    progress = StepProgress(2000, names=("loss",), stream=out, clock=lambda: next(ticks))
    progress.on_train_begin(100)
    progress.on_log(150, {"loss": 4.81234})  # 50 steps in 30 s, compilation included
    progress.on_log(200, {"loss": 4.5})  # 50 steps in 10 s: 5 steps/s, 1800 steps left
    progress.on_log(2000, {"loss": 4.0})
    lines = out.getvalue().splitlines()
    assert lines[0] == "step 150/2000 · 1.67 steps/s · 18m 30s left · loss 4.812"
    assert lines[1] == "step 200/2000 · 5 steps/s · 6m 00s left · loss 4.500"
    assert lines[2].startswith("step 2000/2000 · ") and "done" in lines[2]
    assert [format_duration(s) for s in (42, 612, 11_100)] == ["42s", "10m 12s", "3h 05m"]


def read_rows(path):
    with open(path, encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_history_has_one_row_per_step_after_a_resume(tmp_path, capsys):
    path = str(tmp_path / "history.csv")
    first = HistoryCsv(path, ("step", "loss"))
    first.on_train_begin(0)
    for step in (10, 20, 30):
        first.on_log(step, {"step": step, "loss": 1.0 / step})
    # Killed after logging step 30 but with its last checkpoint at 20: the rerun resumes at 20.
    second = HistoryCsv(path, ("step", "loss"))
    second.on_train_begin(20)
    assert "1 row(s) past step 20" in capsys.readouterr().out
    for step in (30, 40):
        second.on_log(step, {"step": step, "loss": 2.0 / step, "val_loss": 0.5})
    rows = read_rows(path)
    assert [row["step"] for row in rows] == ["10", "20", "30", "40"]
    assert float(rows[2]["loss"]) == 2.0 / 30  # the rerun's value
    assert [row["val_loss"] for row in rows] == ["", "", "0.5", "0.5"]  # a new column


def log_softmax(logits):
    shifted = logits - logits.max(-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))


def test_pretraining_sums_and_loss_against_numpy():
    """Split into two shares with different numbers of real predictions, the shares' losses
    (each normalized by the global counts) add up to the original's loss of the whole batch."""
    rng = np.random.default_rng(0)
    mlm_logits = rng.standard_normal((6, 3, 7))
    sop_logits = rng.standard_normal((6, 2))
    mlm_labels = rng.integers(0, 7, (6, 3))
    sop_labels = rng.integers(0, 2, 6)
    counts = np.array([1, 1, 1, 3, 3, 2])
    mlm_weights = (np.arange(3)[None] < counts[:, None]).astype(np.float64)

    def sums(rows):
        return pretraining_sums(
            {"mlm_logits": mlm_labels[rows], "sop_logits": sop_labels[rows]},
            {
                "mlm_logits": tf.constant(mlm_logits[rows]),
                "sop_logits": tf.constant(sop_logits[rows]),
            },
            {"mlm_logits": mlm_weights[rows], "sop_logits": np.ones(len(sop_labels[rows]))},
        )

    halves = [sums(slice(0, 3)), sums(slice(3, 6))]
    totals = {key: halves[0][key] + halves[1][key] for key in halves[0]}
    loss = sum(float(pretraining_loss(half, totals, 2.0)) for half in halves)

    mlm_nll = -np.take_along_axis(log_softmax(mlm_logits), mlm_labels[..., None], -1)[..., 0]
    sop_nll = -np.take_along_axis(log_softmax(sop_logits), sop_labels[:, None], -1)[:, 0]
    mlm = (mlm_weights * mlm_nll).sum() / (mlm_weights.sum() + 1e-5)
    np.testing.assert_allclose(loss, mlm + 2.0 * sop_nll.mean(), rtol=1e-12)
    logs = pretraining_logs({key: float(value) for key, value in totals.items()}, 2.0)
    hits = (mlm_logits.argmax(-1) == mlm_labels) * mlm_weights
    np.testing.assert_allclose(logs["mlm_loss"], (mlm_weights * mlm_nll).sum() / 11, rtol=1e-12)
    np.testing.assert_allclose(logs["mlm_accuracy"], hits.sum() / 11, rtol=1e-12)
    np.testing.assert_allclose(logs["sop_loss"], sop_nll.mean(), rtol=1e-12)
    np.testing.assert_allclose(logs["loss"], logs["mlm_loss"] + 2.0 * logs["sop_loss"])
    # Each share normalized by its own count (the original per TPU core) would differ.
    per_share = sum(float(pretraining_loss(half, half, 2.0)) for half in halves) / 2
    assert abs(per_share - loss) > 1e-2
