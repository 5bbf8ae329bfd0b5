"""Run as `python remat_run.py WORK_DIR CASE...` with KERAS_BACKEND=jax or torch
(`conftest.run_on_backend`, TensorFlow blocked): for each named case of `zoo.REMAT_CASES` the
difference between the gradients with and without remat (`zoo.remat_difference`), and on JAX
the bytes the backward pass keeps of the forward pass with and without it, for 12 passes of
hidden 64 on batch 8 × 128 tokens (`benchmarks.memory`). Prints one JSON object."""

import json
import sys

import keras

from tests.backends import zoo

results = {
    "differences": {case: zoo.remat_difference(**zoo.REMAT_CASES[case]) for case in sys.argv[2:]}
}
if keras.backend.backend() == "jax":
    from benchmarks import memory

    architecture = dict(memory.SMALL, num_layers=12)
    results["residual_bytes"] = memory.measure(architecture, 8, 128, compiled=False)
print(json.dumps(results))
