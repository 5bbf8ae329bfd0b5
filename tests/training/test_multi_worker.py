"""`tools/pretrain.py --strategy multi_worker` on two local worker processes (TF_CONFIG on
127.0.0.1, CPU): the same result as one process with the same global batch, only the chief's
artifacts, a worker killed mid-run stops the job and the rerun resumes to the same end, and a
run with dropout resumes bit for bit."""

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

from keras_albert import AlbertConfig
from tests.pretraining.test_driver import back_to, write_config, write_records
from tests.pretraining.test_subprocess import (
    environment,
    final_weights,
    history,
    pretrain_command,
)
from tests.training.test_strategy import MAX_PORT_ATTEMPTS, PORT_CLASH, free_port, tf_config

# Bounded time for the survivor of a killed peer to fail (TensorFlow's coordination service
# notices the missing heartbeats, then the collective fails).
PEER_FAILURE_S = 120
# A whole run of the workers (generous: the suite's machine may be loaded).
TIMEOUT_S = 600
TRAIN_STEPS = 16


# Worker processes trained, killed and rerun: the README's test command skips them, CI
# runs them (--run-slow).
pytestmark = pytest.mark.slow


def start_workers(commands, tmp_path, attempt, output=subprocess.PIPE):
    """One process per command, worker i with TF_CONFIG index i and its own TMPDIR (where a
    worker that is not the chief writes its checkpoints)."""
    workers = [f"127.0.0.1:{free_port()}" for _ in commands]
    processes = []
    for index, command in enumerate(commands):
        scratch = tmp_path / f"tmp-{attempt}-worker{index}"
        scratch.mkdir(exist_ok=True)
        env = {**environment(), "TF_CONFIG": tf_config(workers, index), "TMPDIR": str(scratch)}
        processes.append(
            subprocess.Popen(
                command,
                env=env,
                stdout=output,
                stderr=subprocess.STDOUT,
                text=True,
                cwd=os.getcwd(),
            )  # fmt: skip
        )
    return processes


def wait_all(processes, timeout_s=TIMEOUT_S):
    deadline = time.monotonic() + timeout_s
    outputs = []
    try:
        for process in processes:
            output, _ = process.communicate(timeout=max(deadline - time.monotonic(), 1))
            outputs.append(output or "")
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait()
    return outputs


def run_workers(commands, tmp_path):
    """Runs the workers to the end (fresh ports when one was taken meanwhile)."""
    for attempt in range(MAX_PORT_ATTEMPTS):
        processes = start_workers(commands, tmp_path, attempt)
        outputs = wait_all(processes)
        clash = any(
            p.returncode != 0 and PORT_CLASH.search(o)
            for p, o in zip(processes, outputs, strict=True)
        )
        if not clash:
            break
    for process, output in zip(processes, outputs, strict=True):
        assert process.returncode == 0, output[-4000:]
    return outputs


def multi_worker_command(tmp_path, output_dir, extra=()):
    command = pretrain_command(tmp_path, output_dir, TRAIN_STEPS, extra)
    command[command.index("--strategy") + 1] = "multi_worker"
    return command


@pytest.fixture
def data(tmp_path):
    # 1 to 4 real predictions per record: each worker's half of a batch has its own count,
    # which the loss must weight by the global count to equal one device.
    for i in range(2):
        write_records(tmp_path / f"train-{i}.tfrecord", 40, seed=i)
    return tmp_path


def test_two_workers_equal_one_process_and_only_the_chief_writes(data):
    tmp_path = data
    one = tmp_path / "one"
    reference = subprocess.Popen(
        pretrain_command(tmp_path, one, TRAIN_STEPS), env=environment(),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    shared = tmp_path / "shared"
    command = multi_worker_command(tmp_path, shared)
    chief_output, worker_output = run_workers([command, command], tmp_path)
    (reference_output,) = wait_all([reference])
    assert reference.returncode == 0, reference_output[-4000:]

    differences = [
        float(np.abs(a - b).max())
        for a, b in zip(final_weights(one), final_weights(shared), strict=True)
    ]
    # float32: the workers' halves are summed in another order than one device's batch, and
    # LAMB (sqrt(v), tensor norms) carries the rounding on (float64 is not an option here:
    # the model keeps some float32 variables, and the collective all-reduce packs every
    # gradient into one tensor of one dtype).
    print("max weight difference", max(differences))
    assert max(differences) <= 1e-4, max(differences)
    one_rows, shared_rows = history(one), history(shared)
    assert [row["step"] for row in shared_rows] == ["4", "8", "12", "16"]
    for a, b in zip(one_rows, shared_rows, strict=True):
        for name in ("loss", "mlm_loss", "sop_loss", "mlm_accuracy", "sop_accuracy"):
            np.testing.assert_allclose(float(b[name]), float(a[name]), rtol=1e-6, err_msg=name)
    summary = json.loads((shared / "summary.json").read_text())
    assert summary["num_workers"] == 2 and summary["num_replicas"] == 2
    assert summary["strategy"] == "CollectiveAllReduceStrategy"  # MultiWorkerMirroredStrategy
    # Only the chief's artifacts: one summary (printed by the chief only), and the other
    # worker's checkpoint directory removed.
    assert "pretraining summary" in chief_output and "pretraining summary" not in worker_output
    assert sorted(os.listdir(shared)) == sorted(os.listdir(one))
    for scratch in tmp_path.glob("tmp-*-worker*"):
        left = list(scratch.glob("keras_albert-*"))
        assert not left, left


def test_two_workers_reading_their_own_files(data):
    """`--input-sharding files`: each worker reads one of the two files; the run trains to the
    end with half of each global batch from each worker's own stream, and says so in
    run.json."""
    tmp_path = data
    shared = tmp_path / "files"
    command = multi_worker_command(tmp_path, shared, ("--input-sharding", "files"))
    run_workers([command, command], tmp_path)
    summary = json.loads((shared / "summary.json").read_text())
    assert summary["step"] == TRAIN_STEPS and summary["num_workers"] == 2
    assert json.loads((shared / "run.json").read_text())["input_sharding"] == "files"
    assert [row["step"] for row in history(shared)] == ["4", "8", "12", "16"]


def test_a_killed_worker_stops_the_job_and_the_rerun_resumes(data):
    tmp_path = data
    reference = tmp_path / "reference"
    reference_process = subprocess.Popen(
        pretrain_command(tmp_path, reference, TRAIN_STEPS), env=environment(),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    shared = tmp_path / "shared"
    command = multi_worker_command(tmp_path, shared)
    for attempt in range(MAX_PORT_ATTEMPTS):
        chief, worker = start_workers([command, command], tmp_path, attempt)
        deadline = time.monotonic() + TIMEOUT_S
        # Kill worker 1 once the chief has logged step 8 (its checkpoint saved first).
        while time.monotonic() < deadline and chief.poll() is None:
            rows = history(shared) if (shared / "history.csv").exists() else []
            if any(int(row["step"]) >= 8 for row in rows):
                break
            time.sleep(0.05)
        if chief.poll() is not None:  # a port clash: try again with other ports
            output = wait_all([chief, worker])[0]
            assert PORT_CLASH.search(output), output[-4000:]
            continue
        worker.send_signal(signal.SIGKILL)
        killed_at = time.monotonic()
        (chief_output,) = wait_all([chief], timeout_s=PEER_FAILURE_S)
        wait_all([worker])
        break
    stopped_after = time.monotonic() - killed_at
    assert chief.returncode not in (0, None), chief_output[-4000:]
    assert stopped_after < PEER_FAILURE_S
    assert not (shared / "summary.json").exists()
    message = chief_output.strip().splitlines()[-1]
    assert message.startswith("error: ") and "worker" in message.lower(), chief_output[-3000:]

    outputs = run_workers([command, command], tmp_path)
    resumed = re.findall(r"resuming from \S+ \(step (\d+)\)", outputs[0])
    assert resumed and int(resumed[0]) >= 8, outputs[0][-3000:]
    (reference_output,) = wait_all([reference_process])
    assert reference_process.returncode == 0, reference_output[-4000:]
    # One row per step, whatever the chief logged before the kill.
    assert [int(row["step"]) for row in history(shared)] == [4, 8, 12, 16]
    differences = [
        float(np.abs(a - b).max())
        for a, b in zip(final_weights(reference), final_weights(shared), strict=True)
    ]
    assert max(differences) <= 1e-4, max(differences)


def test_two_workers_with_dropout_resume_bit_for_bit(data):
    """Every worker restores the dropout generators from the chief's checkpoint: the resumed
    run draws the masks the uninterrupted one drew on both workers, and ends where it ended."""
    tmp_path = data
    shared = tmp_path / "dropout"
    command = multi_worker_command(tmp_path, shared)
    config = write_config(tmp_path / "dropout.json", dropout=0.1, attention_dropout=0.1)
    command[command.index("--config") + 1] = config
    run_workers([command, command], tmp_path)
    final = final_weights(shared)
    back_to(shared, 8)
    for output in run_workers([command, command], tmp_path):
        assert "(step 8)" in output and "no dropout state" not in output, output[-3000:]
    for expected, actual in zip(final, final_weights(shared), strict=True):
        np.testing.assert_array_equal(actual, expected)


# ----------------------------------------------------------------------------------------------
# Fine-tuning: the same loop, the SST-2 sample.

FINETUNE_TOOL = Path(__file__).resolve().parents[2] / "tools" / "finetune.py"
GLUE_DIR = Path(__file__).resolve().parents[1] / "data" / "glue"
SPM = Path(__file__).resolve().parents[1] / "data" / "30k-clean.model"


def finetune_command(tmp_path, output_dir, strategy):
    config = tmp_path / "albert_config.json"
    if not config.exists():
        AlbertConfig(
            vocabulary_size=30000, embedding_dim=16, hidden_dim=32, intermediate_dim=64,
            num_layers=2, num_heads=2, max_sequence_length=32,
        ).to_json(config)  # fmt: skip
    return [
        sys.executable, str(FINETUNE_TOOL), "--dataset", "sst2",
        "--train-data", str(GLUE_DIR / "sst2_train.tsv"),
        "--eval-data", str(GLUE_DIR / "sst2_dev.tsv"),
        "--config", str(config), "--vocabulary", str(SPM),
        "--sequence-length", "32", "--batch-size", "8", "--train-steps", "6", "--epochs", "3",
        "--learning-rate", "1e-3", "--warmup-steps", "1", "--dropout", "0", "--seed", "3",
        "--strategy", strategy, "--jit-compile", "false", "--verbose", "0",
        "--output-dir", str(output_dir),
    ]  # fmt: skip


def test_finetuning_on_two_workers_equals_one_process(tmp_path):
    one = tmp_path / "one"
    reference = subprocess.Popen(
        finetune_command(tmp_path, one, "cpu"), env=environment(),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    shared = tmp_path / "shared"
    command = finetune_command(tmp_path, shared, "multi_worker")
    chief_output, worker_output = run_workers([command, command], tmp_path)
    (reference_output,) = wait_all([reference])
    assert reference.returncode == 0, reference_output[-4000:]

    one_summary = json.loads((one / "summary.json").read_text())
    summary = json.loads((shared / "summary.json").read_text())
    assert summary["num_workers"] == 2 and summary["num_replicas"] == 2
    assert summary["strategy"] == "CollectiveAllReduceStrategy"
    # The train logs (each replica's half of every batch, summed) and the evaluations.
    one_rows, shared_rows = history(one), history(shared)
    assert [row["step"] for row in shared_rows] == ["2", "4", "6"]
    for a, b in zip(one_rows, shared_rows, strict=True):
        for name in ("loss", "accuracy", "val_loss", "val_accuracy"):
            np.testing.assert_allclose(float(b[name]), float(a[name]), rtol=1e-5, err_msg=name)
    assert summary["best_epoch"] == one_summary["best_epoch"]
    differences = [
        float(np.abs(a - b).max())
        for a, b in zip(
            keras.models.load_model(one / "best.keras").get_weights(),
            keras.models.load_model(shared / "best.keras").get_weights(),
            strict=True,
        )
    ]
    assert max(differences) <= 1e-5, max(differences)
    # Only the chief's artifacts: the other worker's temporary directory is gone.
    assert sorted(os.listdir(shared)) == sorted(os.listdir(one))
    assert '"best_epoch"' in chief_output and '"best_epoch"' not in worker_output
    for scratch in tmp_path.glob("tmp-*-worker*"):
        left = list(scratch.glob("keras_albert-*"))
        assert not left, left


def test_sigterm_to_one_worker_stops_both_at_the_same_checkpointed_step(tmp_path):
    """The signal reaches the worker that is not the chief only; the workers agree after each
    step (an all-reduce of their flags), both save the same step (the chief keeps it) and
    exit 143 with one line each; the rerun of both resumes there and finishes."""
    shared = tmp_path / "shared"
    command = finetune_command(tmp_path, shared, "multi_worker")
    command[command.index("--train-steps") + 1] = "12"
    chief, worker = start_workers([command, command], tmp_path, 0)
    checkpoints = shared / "checkpoints"
    deadline = time.monotonic() + TIMEOUT_S
    try:
        while time.monotonic() < deadline and chief.poll() is None:
            if (checkpoints / "checkpoint").exists():  # after the first evaluation (step 4)
                worker.send_signal(signal.SIGSTOP)  # the chief waits for it at the next step
                break
            time.sleep(0.005)
        assert chief.poll() is None, "the run ended before the signal"
        worker.send_signal(signal.SIGTERM)
        worker.send_signal(signal.SIGCONT)
    finally:
        outputs = wait_all([chief, worker])
    for process, output in zip((chief, worker), outputs, strict=True):
        assert process.returncode == 143, output[-4000:]
        lines = [line for line in output.splitlines() if line.startswith("interrupted: SIGTERM")]
        assert len(lines) == 1 and "Traceback" not in output, output[-4000:]
    stopped = int(re.search(r"stopped after step (\d+) of 12", outputs[0]).group(1))
    # The same step on both, and the worker names the chief's checkpoint, not its own copy.
    path = f"{checkpoints / f'ckpt-{stopped}'} written"
    assert path in outputs[0] and f"stopped after step {stopped} of 12" in outputs[1]
    assert path in outputs[1]
    state = (checkpoints / "checkpoint").read_text()
    assert f'model_checkpoint_path: "ckpt-{stopped}"' in state and 4 <= stopped < 12

    outputs = run_workers([command, command], tmp_path)
    assert f"(step {stopped})" in outputs[0] and f"(step {stopped})" in outputs[1]
    assert [row["step"] for row in history(shared)] == ["4", "8", "12"]
