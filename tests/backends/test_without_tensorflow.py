"""`import keras_albert` and everything that needs no TensorFlow (models, configs, presets,
`.keras`, `.weights.h5`, Hugging Face and keras-hub checkpoints, the tokenizer's Python path)
on JAX without TensorFlow; what needs it says so in one line.

In the environment without TensorFlow that `tools/run.sh test` builds (keras + jax[cpu] and
sentencepiece, the library from this source tree; named by
KERAS_ALBERT_PYTHON_WITHOUT_TENSORFLOW), as CI runs it; a bare `pytest` without that
environment runs the same script here, with TensorFlow made unimportable.
"""

import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_albert import AlbertBackbone
from keras_albert.commands import COMMANDS
from keras_albert.tasks.fill_mask.model import AlbertMaskedLM
from keras_albert.tasks.fill_mask.preprocessor import AlbertMaskedLMPreprocessor
from keras_albert.text.tokenizer import AlbertTokenizer
from tests.backends.conftest import REPOSITORY, TENSORFLOW_MODULES, run_on_backend
from tests.text.text_data import ALBERT_MODEL

NEEDS_TENSORFLOW = (
    "needs TensorFlow, which is not installed. "
    'Install it with pip install "keras-albert[tensorflow]"'
)


def test_models_and_converters_work_without_tensorflow(tmp_path):
    python = os.environ.get("KERAS_ALBERT_PYTHON_WITHOUT_TENSORFLOW")
    if python:
        missing = subprocess.run(
            [python, "-c", "import tensorflow"], capture_output=True, text=True, check=False
        )
        assert missing.returncode == 1 and "No module named 'tensorflow'" in missing.stderr
    # In the environment without TensorFlow nothing is blocked (`tensorflow=True`).
    results = run_on_backend(
        "without_tensorflow_run.py",
        "jax",
        str(tmp_path),
        str(ALBERT_MODEL),
        tensorflow=bool(python),
        python=python or sys.executable,
    )
    assert results["tensorflow_loaded"] is False
    for name in ("model.keras", "model.weights.h5", "hf", "keras_hub"):
        assert results[name] <= 1e-6, name
    assert results["preset"] == 768
    # LoRA: only trainable weights move, the token table's adapters among them (a query or key
    # A, whose gradient waits for its B to leave zero, may not move in three steps); the merged
    # copy is plain with the same outputs.
    assert set(results["lora_moved"]) <= set(results["lora_trainable"])
    token_table = "embedding/token_embedding/lora_embeddings_"
    assert {f"{token_table}a", f"{token_table}b", "logits/kernel"} <= set(results["lora_moved"])
    assert results["lora_output_change"] > 1e-3
    assert results["lora_merged"][0] is False and results["lora_merged"][1] <= 1e-5
    # The tokenizer's Python path without TensorFlow: the ids of `AlbertTokenizer` here.
    tokenizer = AlbertTokenizer(ALBERT_MODEL)
    assert results["ids"] == {text: tokenizer.encode(text) for text in results["ids"]}
    assert len(results["ids"]) == 2 and all(len(ids) > 3 for ids in results["ids"].values())
    assert results["errors"] == {
        name: f"`{name}` {NEEDS_TENSORFLOW}" for name in ("AlbertTokenizer", "export_for_serving")
    }
    for name in ("tool", "command"):
        assert results[name] == [1, [f"error: `keras-albert export` {NEEDS_TENSORFLOW}"]], name


def test_fill_mask_predicts_on_texts_without_tensorflow_as_with_it(tmp_path):
    # A masked LM and its preprocessor saved here (TensorFlow), loaded there (JAX, no
    # TensorFlow: the tokenizer's Python path); `predict` on the same texts gives the same logits.
    keras.utils.set_random_seed(0)
    backbone = AlbertBackbone(
        vocabulary_size=30000, embedding_dim=8, hidden_dim=16, intermediate_dim=32,
        num_layers=2, num_heads=2, max_sequence_length=32,
    )  # fmt: skip
    preprocessor = AlbertMaskedLMPreprocessor(AlbertTokenizer(ALBERT_MODEL), sequence_length=32)
    model = AlbertMaskedLM(backbone, preprocessor=preprocessor)
    model.save(tmp_path / "masked_lm.keras")
    texts = [
        "The capital of France is [MASK].",
        "A text without a mask.",
        "[MASK]s are 2,000[MASK]",
    ]
    expected = model.predict(texts, verbose=0)
    python = os.environ.get("KERAS_ALBERT_PYTHON_WITHOUT_TENSORFLOW")
    results = run_on_backend(
        "fill_mask_without_tensorflow_run.py",
        "jax",
        str(tmp_path),
        str(tmp_path / "masked_lm.keras"),
        json.dumps(texts),
        tensorflow=bool(python),
        python=python or sys.executable,
    )
    assert results["tensorflow_loaded"] is False
    assert results["tokenizer"] == "PythonTokenizer"
    assert (
        results["mask_positions"]
        == preprocessor(tf.constant(texts))["mask_positions"].numpy().tolist()
    )
    np.testing.assert_allclose(np.array(results["logits"]), expected, atol=1e-5, rtol=0)


def import_without_a_backend_chosen(
    tmp_path, blocked: tuple[str, ...], command: tuple[str, ...] = ()
):
    """`import keras_albert` with TensorFlow and `blocked` unimportable, no `KERAS_BACKEND` and
    an empty Keras home: the backend it chose, or what failed. With `command` (its arguments),
    as the installed `keras-albert` runs (its script imports `keras_albert.commands.main`)."""
    script = (
        "import sys\n"
        f"sys.modules.update(dict.fromkeys({TENSORFLOW_MODULES + blocked!r}))\n"
        "import keras_albert, keras\n"
        "print(keras.backend.backend())\n"
    )
    if command:
        script = (
            "import sys\n"
            f"sys.modules.update(dict.fromkeys({TENSORFLOW_MODULES + blocked!r}))\n"
            f"sys.argv = ['/venv/bin/keras-albert', *{command!r}]\n"
            "from keras_albert.commands import main\n"
            "sys.exit(main())\n"
        )
    environment = {k: v for k, v in os.environ.items() if k != "KERAS_BACKEND"}
    environment.update(
        PYTHONPATH=REPOSITORY, KERAS_HOME=str(tmp_path / "keras_home"), JAX_PLATFORMS="cpu"
    )
    python = os.environ.get("KERAS_ALBERT_PYTHON_WITHOUT_TENSORFLOW") or sys.executable
    return subprocess.run(
        [python, "-c", script], env=environment, capture_output=True, text=True, timeout=600
    )


def test_without_tensorflow_or_a_backend_chosen_keras_runs_on_jax(tmp_path):
    completed = import_without_a_backend_chosen(tmp_path, ())
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert completed.stdout.split() == ["jax"]


def test_without_any_backend_installed_the_import_says_what_to_install(tmp_path):
    completed = import_without_a_backend_chosen(tmp_path, ("jax", "torch"))
    assert completed.returncode == 1
    last = completed.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: keras_albert needs a Keras backend: TensorFlow")
    assert 'pip install "keras-albert[tensorflow]"' in last and "KERAS_BACKEND" in last
    assert "No module named 'tensorflow'" not in completed.stderr


def test_without_any_backend_installed_the_command_lists_its_commands(tmp_path):
    completed = import_without_a_backend_chosen(tmp_path, ("jax", "torch"), command=("--help",))
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert completed.stderr == ""
    listed = [line.split()[0] for line in completed.stdout.split("commands:\n")[1].splitlines()[:9]]
    assert listed == list(COMMANDS)


@pytest.mark.parametrize("command", ["convert", "train-tokenizer", "export"])
def test_without_any_backend_installed_a_command_says_what_to_install_in_one_line(
    tmp_path, command
):
    arguments = (command, "--help")
    completed = import_without_a_backend_chosen(tmp_path, ("jax", "torch"), command=arguments)
    assert completed.returncode == 1
    lines = completed.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in completed.stderr, completed.stderr[-3000:]
    assert lines[0].startswith("keras-albert: keras_albert needs a Keras backend: TensorFlow")
    assert 'pip install "keras-albert[tensorflow]"' in lines[0]
