"""Run as `python keras_file_run.py WORK_DIR` with KERAS_BACKEND=jax or torch (`conftest.
run_on_backend`, TensorFlow blocked): loads WORK_DIR/model.keras, calls it and its backbone on
the inputs of WORK_DIR/inputs.npz and writes the outputs to WORK_DIR/outputs_<backend>.npz.
Prints one JSON object (the backend)."""

import json
import os
import sys

import keras
import numpy as np

import keras_albert  # noqa: F401  (registers the model classes `load_model` reads)

work_dir = sys.argv[1]
backend = keras.backend.backend()
model = keras.models.load_model(os.path.join(work_dir, "model.keras"))
inputs = dict(np.load(os.path.join(work_dir, "inputs.npz")))
backbone_inputs = {key: value for key, value in inputs.items() if key != "mask_positions"}
outputs = {**model.backbone(backbone_inputs), **model(inputs)}
np.savez(
    os.path.join(work_dir, f"outputs_{backend}.npz"),
    **{key: keras.ops.convert_to_numpy(value) for key, value in outputs.items()},
)
print(json.dumps({"backend": backend}))
