"""Run as `python backend_run.py WORK_DIR` with KERAS_BACKEND=jax or torch (`conftest.
run_on_backend`, TensorFlow blocked): every model of `zoo.MODELS` with the weights TensorFlow
saved in WORK_DIR/<name>.weights.h5, its outputs to WORK_DIR/outputs_<backend>.npz; a few
fine-tuning steps of each of `zoo.TRAINED`, and, on JAX, one fit on two host devices under
`keras.distribution.DataParallel` against one device, and a classifier trained for the
export (WORK_DIR/jax_trained.keras, its logits of WORK_DIR/export_inputs.npz). Prints one
JSON object: the losses and the data-parallel differences."""

import json
import os
import sys

import keras
import numpy as np

from tests.backends import zoo

work_dir = sys.argv[1]
backend = keras.backend.backend()
results = {"backend": backend, "losses": {}}

outputs = {}
for name in zoo.MODELS:
    model = zoo.build(name)
    model.load_weights(os.path.join(work_dir, f"{name}.weights.h5"))
    for key, value in zoo.to_numpy(model(zoo.inference_inputs(name))).items():
        outputs[f"{name}/{key}"] = value
    if name in zoo.TRAINED:
        results["losses"][name] = zoo.fit_losses(name, model)
    if name == "classifier":  # one device's fit, for the data-parallel one below
        one_device_weights = [keras.ops.convert_to_numpy(w) for w in model.weights]
np.savez(os.path.join(work_dir, f"outputs_{backend}.npz"), **outputs)

if backend == "jax":
    import jax

    # The classifier's fit again, under DataParallel over the host devices.
    devices = jax.devices()
    results["num_devices"] = len(devices)
    keras.distribution.set_distribution(keras.distribution.DataParallel(devices=devices))
    model = zoo.build("classifier")
    model.load_weights(os.path.join(work_dir, "classifier.weights.h5"))
    losses = zoo.fit_losses("classifier", model)
    keras.distribution.set_distribution(None)
    results["data_parallel"] = {
        "losses": [results["losses"]["classifier"], losses],
        "max_weight_difference": max(
            float(np.abs(keras.ops.convert_to_numpy(w) - one).max())
            for w, one in zip(model.weights, one_device_weights, strict=True)
        ),
    }

    # A classifier of the real vocabulary's size, trained here, loaded and exported by TF.
    export_inputs = dict(np.load(os.path.join(work_dir, "export_inputs.npz")))
    model = zoo.export_classifier()
    model.compile(
        optimizer=zoo.optimizer(),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    model.fit(export_inputs, np.arange(len(export_inputs["token_ids"])) % 2, verbose=0)
    model.save(os.path.join(work_dir, "jax_trained.keras"))
    np.save(
        os.path.join(work_dir, "jax_trained_logits.npy"),
        keras.ops.convert_to_numpy(model(export_inputs)),
    )

print(json.dumps(results))
