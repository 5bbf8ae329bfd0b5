"""`import keras_albert` and everything that needs no TensorFlow (models, configs, presets,
`.keras`, `.weights.h5`, Hugging Face and keras-hub checkpoints) on JAX with TensorFlow made
unimportable; what needs it says so in one line."""

from tests.backends.conftest import run_on_backend


def test_models_and_converters_work_without_tensorflow(tmp_path):
    results = run_on_backend("without_tensorflow_run.py", "jax", str(tmp_path))
    assert results["tensorflow_loaded"] is False
    for name in ("model.keras", "model.weights.h5", "hf", "keras_hub"):
        assert results[name] <= 1e-6, name
    assert results["preset"] == 768
    assert results["errors"] == {
        name: f"`{name}` needs TensorFlow, which is not installed. "
        "Install it with pip install tensorflow==2.21.*"
        for name in ("AlbertTokenizer", "export_for_serving")
    }
    assert results["tool"] == [
        1,
        [
            "error: `tools/export_saved_model.py` needs TensorFlow, which is not installed. "
            "Install it with pip install tensorflow==2.21.*"
        ],
    ]
