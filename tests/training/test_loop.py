"""The loop's pieces that need no cluster: replicas' shares of global batches, the step
progress line, history.csv across a resume."""

import csv
import io

import numpy as np
import pytest
import tensorflow as tf

from keras_albert.training.logs import HistoryCsv
from keras_albert.training.loop import replica_share
from keras_albert.training.progress import StepProgress, StepRate, format_duration


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


def test_the_rate_counts_from_the_first_mark_once_there_is_a_second():
    ticks = iter([0.0, 40.0, 50.0, 60.0])
    rate = StepRate(clock=lambda: next(ticks))
    rate.begin(0)
    assert rate.mark(10) == 10 / 40  # the first stretch alone: compilation included
    assert rate.mark(30) == 20 / 10  # from the first mark on
    assert rate.mark(50) == 40 / 20
    never_begun = StepRate(clock=lambda: 0.0)
    assert never_begun.mark(5) is None  # its first mark starts the count


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
