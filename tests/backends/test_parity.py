"""JAX and PyTorch against TensorFlow, same weights, float32: every model class's outputs
(≤ 1e-5), a few fine-tuning steps of the task models `zoo.TRAINED` names and a pretraining
step with `compile` + `fit` (losses within 1e-4 relative), JAX's `DataParallel` over two host
devices against one, and a `.keras` file trained on JAX, loaded and served (the project's TF
Serving export) by TensorFlow.

The other backends run in subprocesses (`backend_run.py`, KERAS_BACKEND is read when Keras is
imported), with TensorFlow blocked, both at once while this process computes TensorFlow's
side; the files in between are `.weights.h5` and `.npz`.
"""

import concurrent.futures
import json
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_albert.export import export_for_serving
from keras_albert.text.tokenizer import AlbertTokenizer
from tests.backends import zoo
from tests.backends.conftest import run_on_backend
from tests.text.text_data import ALBERT_MODEL, load_sst2_dev

# Every model on three backends at once (≈ 75 s): with the slow tests, which CI runs. In every
# run, test_tf1_checkpoints.py compares a pretrainer's outputs on the three backends and
# test_without_tensorflow.py runs the models and converters on JAX.
pytestmark = pytest.mark.slow

BACKENDS = ("jax", "torch")
OUTPUT_ATOL = 1e-5
LOSS_RTOL = 1e-4


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    work_dir = tmp_path_factory.mktemp("backends")
    for name in zoo.MODELS:
        zoo.build(name).save_weights(os.path.join(work_dir, f"{name}.weights.h5"))
    # Used at once: the next `zoo.build` seeds, which drops its SentencePiece resource
    # (tests/conftest.py says why).
    tokenizer = AlbertTokenizer(ALBERT_MODEL)
    sentences = load_sst2_dev()[:8]
    packed = tokenizer.packer(zoo.EXPORT_SEQUENCE_LENGTH)(tokenizer(tf.constant(sentences)))
    export_inputs = {key: np.asarray(value) for key, value in packed.items()}
    np.savez(os.path.join(work_dir, "export_inputs.npz"), **export_inputs)

    host_devices = {"XLA_FLAGS": "--xla_force_host_platform_device_count=2"}
    with concurrent.futures.ThreadPoolExecutor(len(BACKENDS)) as pool:
        futures = {
            backend: pool.submit(
                run_on_backend,
                "backend_run.py",
                backend,
                str(work_dir),
                env=host_devices if backend == "jax" else None,
            )
            for backend in BACKENDS
        }
        outputs, losses = {}, {}
        for name in zoo.MODELS:
            model = zoo.build(name)
            for key, value in zoo.to_numpy(model(zoo.inference_inputs(name))).items():
                outputs[f"{name}/{key}"] = value
            if name in zoo.TRAINED:
                losses[name] = zoo.fit_losses(name, model)
        results = {backend: future.result() for backend, future in futures.items()}
    results["tensorflow"] = {"losses": losses}
    for backend in BACKENDS:
        results[backend]["outputs"] = dict(
            np.load(os.path.join(work_dir, f"outputs_{backend}.npz"))
        )
    results["tensorflow"]["outputs"] = outputs
    np.savez(os.path.join(work_dir, "outputs_tensorflow.npz"), **outputs)
    with open(os.path.join(work_dir, "losses.json"), "w") as file:  # to read after a run
        json.dump({backend: results[backend]["losses"] for backend in results}, file)
    return work_dir, results, sentences, export_inputs


@pytest.mark.parametrize("backend", BACKENDS)
def test_every_model_outputs_what_tensorflow_does(runs, backend):
    _, results, *_ = runs
    expected, actual = results["tensorflow"]["outputs"], results[backend]["outputs"]
    assert sorted(actual) == sorted(expected)
    assert {key.split("/")[0] for key in expected} == set(zoo.MODELS)
    for key, value in expected.items():
        if np.issubdtype(value.dtype, np.integer):  # the answer-class head's top indices
            # Positions outside the context all score -1e30: their order is a tie's.
            candidate = expected[key.replace("_index", "_log_probs")] > -1e20
            np.testing.assert_array_equal(actual[key][candidate], value[candidate], err_msg=key)
        else:
            np.testing.assert_allclose(actual[key], value, atol=OUTPUT_ATOL, rtol=0, err_msg=key)


@pytest.mark.parametrize("backend", BACKENDS)
def test_fine_tuning_and_pretraining_losses_follow_tensorflow(runs, backend):
    _, results, *_ = runs
    expected, actual = results["tensorflow"]["losses"], results[backend]["losses"]
    assert sorted(actual) == sorted(zoo.TRAINED)
    for name, losses in expected.items():
        assert len(losses) == zoo.NUM_BATCHES
        assert max(losses) < 20, name  # labels the heads can predict (not masked positions)
        np.testing.assert_allclose(actual[name], losses, rtol=LOSS_RTOL, err_msg=name)


def test_jax_data_parallel_over_two_devices_equals_one_device(runs):
    _, results, *_ = runs
    data_parallel = results["jax"]["data_parallel"]
    assert results["jax"]["num_devices"] == 2
    one_device, two_devices = data_parallel["losses"]
    np.testing.assert_allclose(two_devices, one_device, rtol=1e-5)
    assert data_parallel["max_weight_difference"] <= 1e-5


def test_a_keras_file_trained_on_jax_loads_and_serves_on_tensorflow(runs, tmp_path):
    work_dir, _, sentences, export_inputs = runs
    jax_logits = np.load(os.path.join(work_dir, "jax_trained_logits.npy"))
    model = keras.models.load_model(os.path.join(work_dir, "jax_trained.keras"))
    np.testing.assert_allclose(model(export_inputs), jax_logits, atol=OUTPUT_ATOL, rtol=0)

    # A new tokenizer: the fixture's SentencePiece resource went with the seeding after it.
    tokenizer = AlbertTokenizer(ALBERT_MODEL)
    version_dir = export_for_serving(
        model,
        tokenizer,
        base_dir=tmp_path,
        name="sst2",
        max_sequence_length=zoo.EXPORT_SEQUENCE_LENGTH,
    )
    served = tf.saved_model.load(version_dir).signatures["serving_default"]
    outputs = served(text=tf.constant(sentences))
    np.testing.assert_allclose(outputs["logits"], jax_logits, atol=OUTPUT_ATOL, rtol=0)
    np.testing.assert_allclose(
        outputs["probabilities"], tf.nn.softmax(jax_logits), atol=OUTPUT_ATOL, rtol=0
    )
