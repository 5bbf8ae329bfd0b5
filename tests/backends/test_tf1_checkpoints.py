"""A checkpoint of the original TF1 code, converted once (on TensorFlow, to `.keras`), gives
the original's outputs on JAX and PyTorch as it does on TensorFlow: the same NumPy
transcription of google-research/albert's forward pass (`tests/convert/test_tf1.py`), the same
tolerance."""

import concurrent.futures
import os

import numpy as np
import pytest

from keras_albert.convert import load_checkpoint
from tests.backends.conftest import run_on_backend
from tests.convert.test_tf1 import original_outputs, pretraining_checkpoint

BACKENDS = ("tensorflow", "jax", "torch")


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    """The original's outputs and each backend's, from one converted checkpoint."""
    work_dir = tmp_path_factory.mktemp("tf1_on_backends")
    checkpoint_dir = work_dir / "tf1"
    checkpoint_dir.mkdir()
    values, inputs = pretraining_checkpoint(checkpoint_dir)
    load_checkpoint(checkpoint_dir).save(work_dir / "model.keras")
    np.savez(work_dir / "inputs.npz", **inputs)
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        runs = [
            pool.submit(run_on_backend, "keras_file_run.py", backend, str(work_dir))
            for backend in BACKENDS[1:]
        ]
        # TensorFlow's side here, from the same file, while the others run.
        loaded = load_checkpoint(work_dir / "model.keras")
        backbone_inputs = {key: value for key, value in inputs.items() if key != "mask_positions"}
        outputs = {**loaded.backbone(backbone_inputs), **loaded(inputs)}
        results = {"tensorflow": {key: np.asarray(value) for key, value in outputs.items()}}
        for run in runs:
            run.result()
    for backend in BACKENDS[1:]:
        results[backend] = dict(np.load(os.path.join(work_dir, f"outputs_{backend}.npz")))
    return original_outputs(values, inputs), results


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_converted_tf1_checkpoint_gives_the_original_outputs(outputs, backend):
    original, results = outputs
    for key, expected in original.items():
        np.testing.assert_allclose(results[backend][key], expected, atol=1e-5, err_msg=key)
    # Both heads are far from constant: the comparison cannot pass on zeros.
    assert original["mlm_logits"].std() > 0.5 and np.abs(original["sop_logits"]).max() > 0.5
