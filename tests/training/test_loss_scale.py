"""float16's dynamic loss scaling through the one loop (`training.loss_scale`), on one device
and on two mirrored replicas, each run in its own process (loss_scale_run.py).

Keras's own `LossScaleOptimizer` fails the mirrored case: it asks only the first replica
whether its gradient is finite, so the other replica's infinity reaches the weights (seen
while writing this test: every variable NaN from the poisoned step on).
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from keras_albert.training.clipping import AdamW
from keras_albert.training.loss_scale import checkpointed_optimizer, optimizer_for_precision

REPO_ROOT = Path(__file__).resolve().parents[2]
HELPER = Path(__file__).with_name("loss_scale_run.py")


def run_helper(tmp_path, *args) -> dict:
    output = tmp_path / "out.json"
    env = {key: value for key, value in os.environ.items() if key != "TF_CONFIG"}
    env["PYTHONPATH"] = str(REPO_ROOT)
    result = subprocess.run(
        [sys.executable, str(HELPER), args[0], str(output), *map(str, args[1:])],
        env=env, cwd=REPO_ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return json.loads(output.read_text())


# The one-device run with `--run-slow` (CI): the mirrored one, poisoned on one replica, is the
# harder case and runs every time.
@pytest.mark.parametrize(
    "strategy, extra",
    [pytest.param("cpu", (), marks=pytest.mark.slow), ("mirrored", ("--logical-cpus", 2))],
)
def test_a_non_finite_gradient_skips_the_step_halves_the_scale_and_it_grows_back(
    tmp_path, strategy, extra
):
    result = run_helper(tmp_path, strategy, *extra)
    assert result["num_replicas"] == (2 if strategy == "mirrored" else 1)
    rows = result["rows"]
    # Growth every 2 finite steps: 1024 -> 2048 after step 2; step 3 is poisoned (on the last
    # replica only): skipped, nothing moves, scale halved; two finite steps double it again.
    assert [row["step"] for row in rows] == [1, 2, 2, 3, 4, 5]
    assert [row["scale"] for row in rows] == [1024, 2048, 1024, 1024, 2048, 2048]
    assert [row["skipped_steps"] for row in rows] == [0, 0, 1, 0, 0, 0]
    assert rows[2]["change"] == 0.0
    assert all(row["change"] > 0 for i, row in enumerate(rows) if i != 2)
    assert all(row["finite"] for row in rows)


def test_only_float16_scales_and_checkpoints_hold_the_wrapped_optimizer():
    inner = AdamW(1e-3)
    assert optimizer_for_precision(inner, "float32") is inner
    assert optimizer_for_precision(inner, "mixed_bfloat16") is inner
    scaled = optimizer_for_precision(inner, "mixed_float16", initial_scale=4.0)
    assert scaled.inner_optimizer is inner and scaled.initial_scale == 4.0
    assert checkpointed_optimizer(scaled) is inner
    assert checkpointed_optimizer(inner) is inner
