"""`tools/pretrain.py` in subprocesses: killed with SIGKILL and rerun, it ends where an
uninterrupted run ends; MirroredStrategy on 2 logical CPUs trains like one device."""

import csv
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf

from tests.pretraining.test_driver import back_to, write_config, write_records

# Pretraining processes killed and rerun, and on two logical CPUs: the README's test
# command skips them, CI runs them (--run-slow).
pytestmark = pytest.mark.slow

REPO_ROOT = Path(__file__).resolve().parents[2]
TOOL = REPO_ROOT / "tools" / "pretrain.py"
TIMEOUT_S = 240
# Sets up logical CPU devices (which must happen before TensorFlow initializes) and runs the
# CLI with the remaining arguments.
WITH_LOGICAL_CPUS = """
import runpy, sys
import tensorflow as tf
(cpu,) = tf.config.list_physical_devices("CPU")
count = int(sys.argv.pop(1))
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * count)
sys.argv[0] = {tool!r}
runpy.run_path({tool!r}, run_name="__main__")
"""


def environment():
    env = {key: value for key, value in os.environ.items() if key != "TF_CONFIG"}
    env.update(PYTHONPATH=str(REPO_ROOT), KERAS_BACKEND="tensorflow", TF_CPP_MIN_LOG_LEVEL="2")
    return env


def start(command, output=subprocess.PIPE):
    return subprocess.Popen(
        command, env=environment(), cwd=REPO_ROOT, stdout=output, stderr=subprocess.STDOUT,
        text=True,
    )  # fmt: skip


def finish(*processes, timeout_s=TIMEOUT_S):
    """Waits for processes started together; fails with the output of one that failed."""
    deadline = time.monotonic() + timeout_s
    outputs = []
    try:
        for process in processes:
            output, _ = process.communicate(timeout=max(deadline - time.monotonic(), 1))
            outputs.append(output)
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
    for process, output in zip(processes, outputs, strict=True):
        assert process.returncode == 0, output[-4000:]
    return outputs


def final_weights(output_dir):
    return keras.models.load_model(Path(output_dir) / "pretrainer.keras").get_weights()


def history(output_dir):
    with open(Path(output_dir) / "history.csv", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def pretrain_command(tmp_path, output_dir, train_steps, extra=()):
    return [
        sys.executable, str(TOOL),
        "--config", write_config(tmp_path / "config.json"),
        "--train-data", str(tmp_path / "train-*.tfrecord"),
        "--output-dir", str(output_dir),
        "--train-steps", str(train_steps), "--batch-size", "8",
        "--learning-rate", "0.01", "--warmup-steps", "4",
        "--log-every-steps", "4", "--checkpoint-every-steps", "4",
        "--strategy", "cpu", "--jit-compile", "false", "--seed", "7",
        "--deterministic", "--verbose", "0", *extra,
    ]  # fmt: skip


def test_killed_with_sigkill_and_rerun_ends_like_an_uninterrupted_run(tmp_path):
    """The rerun restores weights, optimizer slots and step from the last checkpoint and skips
    the batches already consumed. With deterministic ops the result is bit-identical (atol 0):
    the same batches meet the same weights in the same order, and restoring a checkpoint is an
    exact copy, so no tolerance is needed."""
    for i in range(3):
        write_records(tmp_path / f"train-{i}.tfrecord", 40, seed=i)
    train_steps = 40
    reference = tmp_path / "reference"
    reference_process = start(pretrain_command(tmp_path, reference, train_steps))

    interrupted = tmp_path / "interrupted"
    command = pretrain_command(tmp_path, interrupted, train_steps)
    process = start(command, output=subprocess.DEVNULL)
    log = interrupted / "history.csv"
    deadline = time.monotonic() + TIMEOUT_S
    try:
        # Kill on a logged step, not on a timer: once step 12 is in history.csv (its checkpoint
        # is saved before the row is written), 28 steps before the run would end.
        while time.monotonic() < deadline and process.poll() is None:
            if log.exists() and any(int(row["step"]) >= 12 for row in history(interrupted)):
                break
            time.sleep(0.02)
        assert process.poll() is None, "the run ended before it could be killed"
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    assert not (interrupted / "summary.json").exists()
    killed_at = len(history(interrupted))
    checkpoints = tf.train.get_checkpoint_state(str(interrupted / "checkpoints"))
    last_checkpoint = int(checkpoints.model_checkpoint_path.rsplit("-", 1)[1])
    assert 12 <= last_checkpoint < train_steps

    (rerun_output,) = finish(start(command))
    resumed = re.findall(r"resuming from \S+ \(step (\d+)\)", rerun_output)
    assert len(resumed) == 1, rerun_output[-4000:]
    resume_step = int(resumed[0])
    assert resume_step == last_checkpoint
    finish(reference_process)
    rows = history(interrupted)
    steps = [int(row["step"]) for row in rows]
    # One row per logged step: the rows logged after the checkpoint the rerun resumed from
    # were dropped (those steps ran again), then the rerun's rows every 4 steps.
    assert steps == list(range(4, train_steps + 1, 4))
    assert f"row(s) past step {resume_step}" in rerun_output or killed_at * 4 == resume_step
    killed_at = resume_step // 4
    # The rerun reports the time it spent.
    summary = json.loads((interrupted / "summary.json").read_text())
    assert summary["trained_steps_this_run"] == train_steps - resume_step
    assert 0 < summary["train_seconds_this_run"] <= summary["wall_seconds_this_run"]
    for expected, actual in zip(final_weights(reference), final_weights(interrupted), strict=True):
        np.testing.assert_array_equal(actual, expected)
    # The rerun's logged losses are the reference's at the same steps.
    reference_loss = {row["step"]: row["loss"] for row in history(reference)}
    for row in rows[killed_at:]:
        assert row["loss"] == reference_loss[row["step"]], row["step"]


def test_mirrored_on_two_logical_cpus_equals_one_device(tmp_path):
    """Same global batch split over two replicas, through the same loop as one device. With a
    varied number of real predictions per record (1 to 4), the replicas' halves hold
    different counts, so a per-replica normalizer would weight them wrongly: the loop
    normalizes by the global count. In float32 the replicas' partial sums round differently
    and LAMB (which divides by sqrt(v) and by tensor norms) carries that on: after 16 steps
    the weights agree to ~1e-5 and the logged losses to ~1e-6, not bit for bit. The
    held-out set (21 records: a short last batch of 5, split 4 + 1 over the replicas) gives
    the same evaluation."""
    for i in range(2):
        write_records(tmp_path / f"train-{i}.tfrecord", 40, seed=i)
    write_records(tmp_path / "eval.tfrecord", 21, seed=9)
    train_steps = 16
    one = tmp_path / "one"
    mirrored = tmp_path / "mirrored"
    evaluation = ["--eval-data", str(tmp_path / "eval.tfrecord"), "--eval-every-steps", "8"]
    command = pretrain_command(tmp_path, mirrored, train_steps, evaluation)
    command[command.index("--strategy") + 1] = "mirrored"
    finish(
        start(pretrain_command(tmp_path, one, train_steps, evaluation)),
        start([sys.executable, "-c", WITH_LOGICAL_CPUS.format(tool=str(TOOL)), "2", *command[2:]]),
    )

    one_rows, mirrored_rows = history(one), history(mirrored)
    for a, b in zip(one_rows, mirrored_rows, strict=True):
        for name in ("loss", "mlm_loss", "sop_loss"):
            np.testing.assert_allclose(float(b[name]), float(a[name]), rtol=2e-5, err_msg=name)
    differences = [
        float(np.abs(a - b).max())
        for a, b in zip(final_weights(one), final_weights(mirrored), strict=True)
    ]
    assert max(differences) <= 1e-4, differences
    assert float(one_rows[-1]["loss"]) < float(one_rows[0]["loss"])  # it trained
    one_eval = json.loads((one / "summary.json").read_text())["eval"]
    mirrored_summary = json.loads((mirrored / "summary.json").read_text())
    assert mirrored_summary["num_replicas"] == 2
    assert mirrored_summary["eval_records_evaluated"] == 21
    for name, value in one_eval.items():
        np.testing.assert_allclose(mirrored_summary["eval"][name], value, rtol=2e-5, err_msg=name)
    assert [row["val_loss"] != "" for row in mirrored_rows] == [False, True, False, True]


def test_mirrored_with_dropout_resumes_bit_for_bit(tmp_path):
    """Under MirroredStrategy each dropout generator is one mirrored variable (the replicas
    advance it together, each drawing its own masks from it): the checkpoint holds it once and
    the restore sets every replica's copy, so the resumed run ends where the uninterrupted one
    ended."""
    for i in range(2):
        write_records(tmp_path / f"train-{i}.tfrecord", 40, seed=i)
    output = tmp_path / "mirrored"
    command = pretrain_command(tmp_path, output, 16)
    config = write_config(tmp_path / "dropout.json", dropout=0.1, attention_dropout=0.1)
    command[command.index("--config") + 1] = config
    command[command.index("--strategy") + 1] = "mirrored"
    mirrored = [sys.executable, "-c", WITH_LOGICAL_CPUS.format(tool=str(TOOL)), "2", *command[2:]]
    finish(start(mirrored))
    final = final_weights(output)
    back_to(output, 8)
    (rerun_output,) = finish(start(mirrored))
    assert "(step 8)" in rerun_output and "no dropout state" not in rerun_output
    assert json.loads((output / "summary.json").read_text())["num_replicas"] == 2
    for expected, actual in zip(final, final_weights(output), strict=True):
        np.testing.assert_array_equal(actual, expected)


def test_mirrored_with_dropout_and_remat_trains_as_without(tmp_path):
    """`--remat` under MirroredStrategy, with dropout: each replica's recomputation draws its
    forward pass's masks, so the run trains as without remat (to the rounding of kernels
    TensorFlow fuses differently around the recomputation), and its model is rematerialized."""
    for i in range(2):
        write_records(tmp_path / f"train-{i}.tfrecord", 40, seed=i)
    config = write_config(tmp_path / "dropout.json", dropout=0.1, attention_dropout=0.1)
    processes = []
    for name, extra in (("plain", ()), ("remat", ("--remat",))):
        command = pretrain_command(tmp_path, tmp_path / name, 8, extra)
        command[command.index("--config") + 1] = config
        command[command.index("--strategy") + 1] = "mirrored"
        code = WITH_LOGICAL_CPUS.format(tool=str(TOOL))
        processes.append(start([sys.executable, "-c", code, "2", *command[2:]]))
    finish(*processes)
    for a, b in zip(history(tmp_path / "plain"), history(tmp_path / "remat"), strict=True):
        np.testing.assert_allclose(float(b["loss"]), float(a["loss"]), rtol=2e-5)
    for a, b in zip(
        final_weights(tmp_path / "plain"), final_weights(tmp_path / "remat"), strict=True
    ):
        np.testing.assert_allclose(b, a, atol=1e-4)
    remat = keras.models.load_model(tmp_path / "remat" / "pretrainer.keras")
    assert remat.backbone.remat is True
    assert json.loads((tmp_path / "remat" / "summary.json").read_text())["num_replicas"] == 2


# The MLM loss of one global batch under MirroredStrategy on 2 logical CPUs, in float64.
MIRRORED_MLM_LOSS = """
import sys
import numpy as np
import tensorflow as tf
(cpu,) = tf.config.list_physical_devices("CPU")
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
from keras_albert.pretraining.losses import MaskedLMLoss
data = np.load(sys.argv[1])
strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
loss = MaskedLMLoss(dtype="float64")
def shard(context):
    start = context.replica_id_in_sync_group * 4
    return [tf.constant(data[name][start : start + 4]) for name in ("labels", "logits", "weights")]
per_replica = strategy.experimental_distribute_values_from_function(shard)
values = strategy.run(lambda labels, logits, weights: loss(labels, logits, weights), per_replica)
total = strategy.reduce(tf.distribute.ReduceOp.SUM, values, axis=None)
np.save(sys.argv[2], total.numpy())
"""


def test_mirrored_mlm_loss_normalizes_each_replica_by_its_own_real_predictions(tmp_path):
    """`MaskedLMLoss` (what `model.fit` uses; the drivers' loop normalizes globally instead):
    with 1 to 4 real predictions per example, the replicas' halves of a global batch of 8
    hold different counts: the summed replica losses (what the gradient follows) are the mean
    over replicas of each one's weighted NLL over its own weight sum, as the original did per
    TPU core, which here differs from the global normalizer."""
    rng = np.random.default_rng(0)
    counts = np.array([1, 1, 1, 2, 4, 4, 3, 4])  # replica 0: 5 real predictions, replica 1: 15
    weights = (np.arange(4)[None, :] < counts[:, None]).astype(np.float64)
    logits = rng.standard_normal((8, 4, 16)) * 3.0
    labels = rng.integers(0, 16, (8, 4))
    np.savez(tmp_path / "batch.npz", labels=labels, logits=logits, weights=weights)
    script = [sys.executable, "-c", MIRRORED_MLM_LOSS, str(tmp_path / "batch.npz")]
    finish(start([*script, str(tmp_path / "loss.npy")]))
    mirrored = float(np.load(tmp_path / "loss.npy"))

    shifted = logits - logits.max(-1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
    nll = -np.take_along_axis(log_probs, labels[..., None], -1)[..., 0]
    per_replica = [
        (weights[half] * nll[half]).sum() / (weights[half].sum() + 1e-5)
        for half in (slice(0, 4), slice(4, 8))
    ]
    global_loss = (weights * nll).sum() / (weights.sum() + 1e-5)
    np.testing.assert_allclose(mirrored, np.mean(per_replica), rtol=1e-12)
    assert abs(np.mean(per_replica) - global_loss) > 1e-2  # the case is exercised


def test_sigterm_checkpoints_the_step_exits_143_and_the_rerun_loses_no_step(tmp_path):
    """SIGTERM inside a log interval: the current step finishes, its checkpoint is written,
    the run exits 143 with one line naming it; the rerun resumes there and ends bit for bit
    as an uninterrupted run."""
    for i in range(2):
        write_records(tmp_path / f"train-{i}.tfrecord", 40, seed=i)
    train_steps = 24
    extra = ("--log-every-steps", "12", "--checkpoint-every-steps", "12")
    reference = tmp_path / "reference"
    reference_process = start(pretrain_command(tmp_path, reference, train_steps, extra))
    interrupted = tmp_path / "interrupted"
    command = pretrain_command(tmp_path, interrupted, train_steps, extra)
    process = start(command)
    deadline = time.monotonic() + TIMEOUT_S
    try:
        # Once step 12's checkpoint is registered, the run is inside the second interval.
        while time.monotonic() < deadline and process.poll() is None:
            if tf.train.latest_checkpoint(str(interrupted / "checkpoints")):
                process.send_signal(signal.SIGSTOP)
                break
            time.sleep(0.005)
        assert process.poll() is None, "the run ended before the signal"
        process.send_signal(signal.SIGTERM)
        process.send_signal(signal.SIGCONT)
        output, _ = process.communicate(timeout=TIMEOUT_S)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 143, output[-4000:]
    lines = [line for line in output.splitlines() if line.startswith("interrupted: SIGTERM")]
    assert len(lines) == 1 and "Traceback" not in output, output[-4000:]
    stopped = int(re.search(r"stopped after step (\d+) of 24", lines[0]).group(1))
    latest = tf.train.latest_checkpoint(str(interrupted / "checkpoints"))
    assert latest.endswith(f"ckpt-{stopped}") and f"ckpt-{stopped}" in lines[0]
    assert 12 <= stopped < train_steps and not (interrupted / "run.lock").exists()

    (rerun_output,) = finish(start(command))
    assert f"(step {stopped})" in rerun_output  # no step lost
    finish(reference_process)
    for expected, actual in zip(final_weights(reference), final_weights(interrupted), strict=True):
        np.testing.assert_array_equal(actual, expected)
