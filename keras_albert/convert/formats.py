"""What a checkpoint source is: `detect_format` tells the forms `load_checkpoint` reads apart
(`FORMATS`, `ACCEPTED_FORMS`), and which run files a training output holds (`RUN_FILES`, read
by `keras_albert.training.run_records.read_record`)."""

import os

from keras_albert.config import PRESETS
from keras_albert.convert.keras_hub import is_keras_hub_preset
from keras_albert.convert.model_garden import is_tfhub_saved_model
from keras_albert.lazy import require_tensorflow

# What needs TensorFlow when a training output holds TF checkpoints and no .keras file.
TRAINING_CHECKPOINTS = "load_checkpoint of a training output's TF checkpoints"

FORMATS = (
    "auto",
    "preset",
    "config",
    "keras",
    "weights",
    "hf",
    "keras_hub",
    "tf1",
    "tfhub",
    "training_output",
)
ACCEPTED_FORMS = (
    f"a preset name ({', '.join(PRESETS)})",
    "a config JSON file (ours, albert_config.json or a Hugging Face config.json)",
    "a .keras file of an AlbertBackbone, AlbertPretrainer or AlbertClassifier",
    "a .weights.h5 file, with `config` giving the architecture",
    "a Hugging Face directory (config.json + model.safetensors or pytorch_model.bin)",
    "a keras-hub preset directory (config.json of its AlbertBackbone + model.weights.h5)",
    "an original TF1 directory (albert_config.json + model.ckpt-*) or a checkpoint prefix "
    "(with .index), with `config` for a prefix",
    "a TF-Hub / Kaggle encoder SavedModel directory (Model Garden's AlbertEncoder interface, "
    "or ours from export_saved_model.py --format tfhub)",
    "a training output directory (pretrainer.keras or one .keras file, or checkpoints/ckpt-N "
    "with the config recorded in run.json or summary.json)",
    "a Hugging Face Hub name, hf://owner/name or hf://owner/name@revision (downloaded into "
    "huggingface_hub's cache; HF_HUB_OFFLINE=1 reads a cached one)",
    "a Kaggle Models handle, kaggle://owner/model/framework/variation[/version] (keras-hub's "
    "preset handles; downloaded into kagglehub's cache)",
)
# A pretraining output's files (see keras_albert.pretraining.driver).
RUN_FILES = ("run.json", "summary.json")


class CheckpointNotFoundError(FileNotFoundError, ValueError):
    """A checkpoint path that does not exist (both a `FileNotFoundError` and a `ValueError`)."""


def detect_format(source: str | os.PathLike) -> str:
    """The form of `source`: one of `FORMATS` but "auto"; one error listing them otherwise."""
    source = os.fspath(source)
    if source in PRESETS and not os.path.exists(source):
        return "preset"
    if os.path.isfile(source):
        if source.endswith(".weights.h5"):
            return "weights"
        if source.endswith(".keras"):
            return "keras"
        if source.endswith(".json") or _starts_with_brace(source):
            return "config"
    elif os.path.isdir(source):
        if is_keras_hub_preset(source):  # before "hf": both have a config.json
            return "keras_hub"
        if os.path.isfile(os.path.join(source, "config.json")):
            return "hf"
        if os.path.isfile(os.path.join(source, "albert_config.json")):
            return "tf1"
        if is_tfhub_saved_model(source):
            return "tfhub"
        if training_output_model(source) or latest_training_checkpoint(source):
            return "training_output"
    elif os.path.isfile(source + ".index"):
        return "tf1"
    else:
        raise CheckpointNotFoundError(
            f"Checkpoint not found: {source!r} is no existing file, directory, TF1 checkpoint "
            f"prefix (PREFIX.index) or preset name. Received: source={source!r}"
        )
    forms = "".join(f"\n  - {form}" for form in ACCEPTED_FORMS)
    raise ValueError(
        f"Cannot tell the checkpoint format: `source` must be one of:{forms}\n"
        f"Received: source={source!r}"
    )


def _starts_with_brace(path: str) -> bool:
    """A JSON object whatever the file's name (a config saved as `albert.cfg`, say)."""
    with open(path, "rb") as file:
        return file.read(64).lstrip().startswith(b"{")


def training_output_model(directory: str) -> str | None:
    """`pretrainer.keras`, else the directory's only `.keras` file."""
    names = sorted(name for name in os.listdir(directory) if name.endswith(".keras"))
    if "pretrainer.keras" in names:
        return os.path.join(directory, "pretrainer.keras")
    return os.path.join(directory, names[0]) if len(names) == 1 else None


def latest_training_checkpoint(directory: str) -> str | None:
    checkpoints = os.path.join(directory, "checkpoints")
    if not os.path.isdir(checkpoints):
        return None
    tf = require_tensorflow(TRAINING_CHECKPOINTS)
    return tf.train.latest_checkpoint(checkpoints)
