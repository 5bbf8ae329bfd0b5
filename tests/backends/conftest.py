"""Fixtures of the backend tests: a Python that runs a script on another Keras backend, in a
subprocess (KERAS_BACKEND is read once, when Keras is imported), with TensorFlow importable or
not."""

import json
import os
import subprocess
import sys

import pytest

REPOSITORY = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HERE = os.path.dirname(os.path.abspath(__file__))
# The modules a Python without TensorFlow cannot import (`sys.modules[name] = None`).
TENSORFLOW_MODULES = ("tensorflow", "tensorflow_text", "tensorflow_serving", "tensorflow_hub")


def tensorflow_blocker(directory: str) -> str:
    """A folder under `directory` holding a `sitecustomize` that makes TensorFlow
    unimportable; put it first on PYTHONPATH."""
    shim = os.path.join(directory, "without_tensorflow")
    os.makedirs(shim, exist_ok=True)
    with open(os.path.join(shim, "sitecustomize.py"), "w") as file:
        file.write(
            f"import sys\nfor name in {TENSORFLOW_MODULES!r}:\n    sys.modules[name] = None\n"
        )
    return shim


def run_on_backend(
    script: str,
    backend: str,
    *args: str,
    tensorflow: bool = False,
    env: dict | None = None,
    python: str = sys.executable,
) -> dict:
    """Runs `tests/backends/<script> ARGS` with `python` under `backend`; returns the JSON object
    it prints last. Without `tensorflow` a `sitecustomize` (on a temporary PYTHONPATH) blocks
    it (in an environment without TensorFlow, it has nothing to block)."""
    path = [REPOSITORY]
    if not tensorflow:
        path.insert(0, tensorflow_blocker(args[0]))
    environment = {
        **os.environ,
        "KERAS_BACKEND": backend,
        "PYTHONPATH": os.pathsep.join(path),
        "TF_CPP_MIN_LOG_LEVEL": "3",
        "JAX_PLATFORMS": "cpu",
        **(env or {}),
    }
    completed = subprocess.run(
        [python, os.path.join(HERE, script), *args],
        env=environment,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if completed.returncode != 0:
        pytest.fail(f"{script} on {backend} failed:\n{completed.stderr[-6000:]}")
    return json.loads(completed.stdout.strip().splitlines()[-1])
