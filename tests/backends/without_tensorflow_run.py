"""Run as `python without_tensorflow_run.py WORK_DIR SENTENCEPIECE_MODEL` without TensorFlow
(an environment without it, or the `sitecustomize` of `conftest.run_on_backend`) and
KERAS_BACKEND=jax or torch: the models, the configs, the presets, the TF-free converters and
the tokenizer's Python path work; what needs TensorFlow says so in one line. Prints one JSON
object."""

import json
import os
import subprocess
import sys

import keras
import numpy as np

import keras_albert
from keras_albert import AlbertClassifier, AlbertConfig, load_checkpoint, save_checkpoint
from keras_albert.models.lora import has_lora, merged_lora
from keras_albert.text.python_tokenizer import PythonTokenizer

SENTENCES = ["A Charming Journey.", "Crème brûlée, über-naïve — 1999!"]

work_dir = sys.argv[1]
results = {
    "tensorflow_loaded": "tensorflow" in sys.modules and sys.modules["tensorflow"] is not None
}
config = AlbertConfig(
    vocabulary_size=64,
    embedding_dim=8,
    hidden_dim=16,
    intermediate_dim=32,
    num_layers=2,
    num_heads=2,
    max_sequence_length=16,
)
model = AlbertClassifier(keras_albert.AlbertBackbone.from_albert_config(config), num_classes=3)
ids = np.array([[2, 10, 11, 3, 0]], "int32")
inputs = {"token_ids": ids, "segment_ids": 0 * ids, "padding_mask": (ids != 0).astype("int32")}
expected = keras.ops.convert_to_numpy(model(inputs))
for name, format in (("model.keras", "keras"), ("hf", "hf"), ("keras_hub", "keras_hub")):
    path = os.path.join(work_dir, name)
    save_checkpoint(model, path, format=format)
    loaded = load_checkpoint(path)
    results[name] = float(np.abs(keras.ops.convert_to_numpy(loaded(inputs)) - expected).max())
model.save_weights(os.path.join(work_dir, "model.weights.h5"))
loaded = load_checkpoint(
    os.path.join(work_dir, "model.weights.h5"), model="classification", config=config, num_classes=3
)
results["model.weights.h5"] = float(
    np.abs(keras.ops.convert_to_numpy(loaded(inputs)) - expected).max()
)
results["preset"] = keras_albert.get_preset("albert_base_v2").hidden_dim


def numpy(x):
    return keras.ops.convert_to_numpy(x)


# LoRA on this backend: `fit` moves the adapters (the token table's among them) and nothing
# frozen; the merged copy (through a `.weights.h5` file) gives the adapted model's outputs.
adapted = load_checkpoint(os.path.join(work_dir, "model.keras"))
adapted.backbone.enable_lora(2)
before = {weight.path: numpy(weight) for weight in adapted.weights}
adapted.compile(
    optimizer=keras.optimizers.SGD(0.5),
    loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
)
adapted.fit(inputs, np.array([1]), epochs=3, verbose=0)
moved = {w.path for w in adapted.weights if np.abs(numpy(w) - before[w.path]).max() > 0}
results["lora_moved"] = sorted(moved)
results["lora_trainable"] = sorted(weight.path for weight in adapted.trainable_weights)
outputs = numpy(adapted(inputs))
results["lora_output_change"] = float(np.abs(outputs - expected).max())
merged = merged_lora(adapted)
results["lora_merged"] = [has_lora(merged), float(np.abs(numpy(merged(inputs)) - outputs).max())]
# The Python path of the tokenizer, from the model's path (read as a local file).
tokenizer = PythonTokenizer(sys.argv[2])
results["ids"] = {sentence: tokenizer.encode(sentence) for sentence in SENTENCES}

errors = {}
for name, use in (
    ("AlbertTokenizer", lambda: keras_albert.AlbertTokenizer("unused.model")),
    ("export_for_serving", lambda: __import__("keras_albert.export").export.export_for_serving),
):
    try:
        use()
    except ImportError as error:
        errors[name] = str(error)
results["errors"] = errors
# A command that needs TensorFlow, as the `keras-albert` command and as the checkout's script:
# one line on stderr, status 1.
tool = os.path.join(os.path.dirname(__file__), "..", "..", "tools", "export_saved_model.py")
for name, command in (
    ("tool", [tool]),
    ("command", ["-m", "keras_albert", "export"]),
):
    completed = subprocess.run(
        [sys.executable, *command, os.path.join(work_dir, "model.keras"), "--name", "sst2"],
        capture_output=True,
        text=True,
    )
    results[name] = [completed.returncode, completed.stderr.strip().splitlines()]
print(json.dumps(results))
