"""Fine-tuning runs side by side (`parallel_runs.finetune_runs`): the same results as one after
another, each run's output in its own log, failures named; SIGTERM to the parent alone stops
its runs (checkpointed) and leaves no process behind, and the rerun resumes them."""

import os
import re
import signal
import sys
import time

import pytest

from keras_albert.finetuning.parallel_runs import LOG_NAME, available_cores, finetune_runs
from tests.finetuning.parallel_run import tiny_runs
from tests.finetuning.test_resume import TIMEOUT_S, finish, latest_step, start


@pytest.mark.slow  # four fine-tuning processes (CI runs it)
def test_side_by_side_runs_equal_runs_one_after_another(tmp_path, capsys):
    finished = []
    together = finetune_runs(
        tiny_runs(tmp_path, "together"),
        processes=2,
        on_finish=lambda index, summary, seconds: finished.append(index),
    )
    alone = finetune_runs(tiny_runs(tmp_path, "alone"), processes=1)
    assert sorted(finished) == [0, 1]
    # Same seeds, same data: the same losses and metrics, whatever the threads per run
    # (only the order of float sums may differ).
    assert len(together) == len(alone) == 2
    for run_together, run_alone in zip(together, alone, strict=True):
        assert run_together["options"]["seed"] == run_alone["options"]["seed"]
        for row_together, row_alone in zip(
            run_together["history"], run_alone["history"], strict=True
        ):
            assert row_together.keys() == row_alone.keys()
            for key, value in row_alone.items():
                assert row_together[key] == pytest.approx(value, abs=1e-5), key
    # The two seeds are different runs, not one run twice.
    assert together[0]["history"][-1]["loss"] != together[1]["history"][-1]["loss"]
    # Side by side, each run's lines went to its own log, not to this process's output.
    for seed in (0, 1):
        log = (tmp_path / "together" / f"seed_{seed}" / LOG_NAME).read_text()
        assert "SST-2 eval after evaluation 2" in log
    assert not (tmp_path / "alone" / "seed_0" / LOG_NAME).exists()
    assert "SST-2 eval after evaluation" in capsys.readouterr().out  # the in-process runs'


def test_a_failed_run_is_named_with_its_log(tmp_path):
    runs = tiny_runs(tmp_path, "bad", seeds=(0,), train_data=str(tmp_path / "missing.tsv"))
    with pytest.raises(RuntimeError, match=r"run 0 \(output_dir=.*seed_0'\) failed: .*missing"):
        finetune_runs(runs, processes=2)


def test_arguments_are_checked(tmp_path):
    with pytest.raises(ValueError, match="`processes` must be"):
        finetune_runs([], processes=0)
    runs = tiny_runs(tmp_path, "same", seeds=(0, 0))
    with pytest.raises(ValueError, match="their own `output_dir`"):
        finetune_runs(runs, processes=2)
    assert available_cores() >= 1


def _descendants(pid: int) -> set[int]:
    """The processes under `pid` (children, theirs, ...), from /proc."""
    parents = {}
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8") as file:
                # "pid (command) state ppid ...": the command may hold spaces and parentheses.
                parents[int(entry)] = int(file.read().rsplit(")", 1)[1].split()[1])
        except (ValueError, OSError):  # not a process, or one that ended meanwhile
            continue
    found, frontier = set(), {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier}
        found |= frontier
    return found


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as file:
            return file.read().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has ended
    except OSError:
        return False


def _stop_in_training(argv, output_dirs, attempt: int) -> list[int]:
    """Starts the job; once both runs train (the `attempt`-th heading of a stretch in each log),
    SIGTERM to the parent alone; checks that it exits 143 with one line after every process of
    the job has ended; returns the steps the runs stopped after."""
    process = start(argv)
    deadline = time.monotonic() + TIMEOUT_S
    while not all(
        output_dir.joinpath(LOG_NAME).exists()
        and output_dir.joinpath(LOG_NAME).read_text().count("evaluation 1/2: steps ") >= attempt
        for output_dir in output_dirs
    ):
        assert time.monotonic() < deadline and process.poll() is None, process.communicate()
        time.sleep(0.05)
    job = _descendants(process.pid)
    assert len(job) >= 2  # the two workers (and multiprocessing's resource tracker)
    process.send_signal(signal.SIGTERM)
    output = finish(process, status=143)
    lines = [line for line in output.splitlines() if line.startswith("interrupted:")]
    assert len(lines) == 1 and "Traceback" not in output, output[-4000:]
    assert lines[0].startswith("interrupted: SIGTERM: 2 of 2 fine-tuning runs stopped")
    # Its workers ended before it (the resource tracker, once it sees the parent gone).
    deadline = time.monotonic() + 30
    while any(_running(pid) for pid in job) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [pid for pid in job if _running(pid)]
    steps = [int(step) for step in re.findall(r"stopped after step (\d+) of ", lines[0])]
    assert len(steps) == 2, lines[0]
    for output_dir, step in zip(output_dirs, steps, strict=True):
        assert latest_step(output_dir) == step  # the checkpoint its interruption wrote
    return steps


@pytest.mark.slow  # three processes started twice (CI runs it)
@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads the processes from /proc")
def test_sigterm_to_the_parent_alone_stops_its_runs_and_the_rerun_resumes(tmp_path):
    """SIGTERM to the parent only (as `timeout`, systemd and container runtimes send it): it
    reaches the runs, which checkpoint and stop; the parent exits 143 after them, leaving no
    process behind; the rerun resumes both runs where they stopped (and stops again the same
    way: the runs are too long to finish before the signal)."""
    argv = [sys.executable, "-m", "tests.finetuning.parallel_run", str(tmp_path), "100000"]
    output_dirs = [tmp_path / "runs" / f"seed_{seed}" for seed in (0, 1)]
    stopped = _stop_in_training(argv, output_dirs, attempt=1)
    stopped_again = _stop_in_training(argv, output_dirs, attempt=2)
    for output_dir, step, step_again in zip(output_dirs, stopped, stopped_again, strict=True):
        log = (output_dir / LOG_NAME).read_text()
        assert f"resuming from {output_dir}/checkpoints/ckpt-{step} (step {step})" in log
        assert step_again >= step
