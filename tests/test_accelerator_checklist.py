"""The accelerator checklist's two halves in their CPU mode (`--tiny`): ours
(benchmarks/accelerator_checklist.py) and HF's (benchmarks/accelerator_peers.py). Every
configuration runs, the JSON holds a rate and an MFU for each, and the mixed-precision losses
follow float32's from the same start."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
# Each script trains its tiny model in every precision in a process of its own: the README's
# test command skips them, CI runs them (--run-slow).
pytestmark = pytest.mark.slow


def run_tiny(script: str, tmp_path) -> dict:
    """`python -m benchmarks.<script> --tiny` in a subprocess; its JSON's results."""
    output = tmp_path / "results.json"
    env = {key: value for key, value in os.environ.items() if key != "TF_CONFIG"}
    env["PYTHONPATH"] = str(REPO_ROOT)
    result = subprocess.run(
        [sys.executable, "-m", f"benchmarks.{script}", "--tiny", "--results-json", str(output)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return json.loads(output.read_text())["results"]


def test_tiny_mode_measures_every_configuration_and_checks_the_losses(tmp_path):
    results = run_tiny("accelerator_checklist", tmp_path)
    assert set(results["throughput"]) == {
        "mixed_float16", "mixed_float16_xla", "mixed_bfloat16", "mixed_bfloat16_xla"
    }  # fmt: skip
    for entry in results["throughput"].values():
        assert entry["sequences_per_second"] > 0 and 0 < entry["mfu"] < 1
    for policy in ("mixed_float16", "mixed_bfloat16"):
        check = results["convergence"][policy]
        assert check["passed"] and len(check["losses"]) == 6
        # The same start and a falling curve: both runs trained the same model.
        assert abs(check["losses"][0] - check["float32_losses"][0]) < 0.01
        assert check["losses"][-1] < check["losses"][0]
        assert 0 < check["max_difference"] <= 0.1


def test_peer_script_tiny_mode_measures_hf_and_checks_its_losses(tmp_path):
    """HF on PyTorch, no TensorFlow: a rate and an MFU per precision, and the autocast losses
    follow float32's."""
    results = run_tiny("accelerator_peers", tmp_path)
    assert set(results["throughput"]) == {
        "hf_float32", "hf_autocast_bfloat16", "hf_autocast_float16"
    }  # fmt: skip
    for entry in results["throughput"].values():
        assert entry["sequences_per_second"] > 0 and entry["mfu"] > 0
    for precision in ("autocast_bfloat16", "autocast_float16"):
        check = results["convergence"][precision]
        assert check["passed"] and len(check["losses"]) == 6
        assert abs(check["losses"][0] - check["float32_losses"][0]) < 0.01
        assert check["losses"][-1] < check["losses"][0]
        assert check["max_difference"] <= 0.1
