"""Running a benchmark script in its CPU mode (`--tiny`) from a test: a subprocess, its JSON."""

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.backends.conftest import tensorflow_blocker

REPO_ROOT = Path(__file__).resolve().parents[1]
# XLA's CPU compiler without its costly LLVM passes: the tiny run's two train steps compile in
# a third of the time; these tests check what runs and trains, not its speed.
FAST_XLA = {"XLA_FLAGS": "--xla_backend_optimization_level=0 --xla_llvm_disable_expensive_passes"}


def run_tiny(
    script: str, tmp_path, *flags: str, tensorflow: bool = True, extra_env: dict | None = None
) -> dict:
    """`python -m benchmarks.<script> --tiny FLAGS` in a subprocess (`extra_env` added to its
    environment); its JSON."""
    output = tmp_path / "results.json"
    env = {key: value for key, value in os.environ.items() if key != "TF_CONFIG"}
    path = [str(REPO_ROOT)] if tensorflow else [tensorflow_blocker(str(tmp_path)), str(REPO_ROOT)]
    env.update(PYTHONPATH=os.pathsep.join(path), JAX_PLATFORMS="cpu", **(extra_env or {}))
    result = subprocess.run(
        [sys.executable, "-m", f"benchmarks.{script}", "--tiny", "--results-json", str(output),
         *flags],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return json.loads(output.read_text())
