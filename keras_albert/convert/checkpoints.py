"""One call from a local checkpoint to the right keras_albert model, and back out.

`load_checkpoint(path)` recognizes, with no network access:
- a Hugging Face directory (`config.json` + `model.safetensors` or `pytorch_model.bin`);
- an original TF1 release (`albert_config.json` + `model.ckpt-*`, a TF-Hub module's
  `variables/`, or a checkpoint prefix with `config=` given);
- a `.keras` file saved by keras_albert.
`save_checkpoint(model, destination)` writes `.keras`, `.weights.h5` or a HF directory.
"""

import os

import keras

from keras_albert.config import AlbertConfig
from keras_albert.convert.huggingface import (
    HF_ARCHITECTURES,
    hf_labels,
    load_hf_weights,
    read_hf_directory,
    write_hf_directory,
)
from keras_albert.convert.tf1 import load_tf1_weights, read_tf1_checkpoint, tf1_heads
from keras_albert.models import (
    AlbertBackbone,
    AlbertClassifier,
    AlbertMultipleChoice,
    AlbertPretrainer,
    AlbertTokenClassifier,
)

FORMATS = ("auto", "hf", "tf1", "keras")
MODEL_KINDS = (
    "backbone",
    "pretrainer",
    "classifier",
    "multiple_choice",
    "token_classifier",
)
# Kinds whose head is one `classifier` linear (HF) / `output_weights` (TF1).
_LINEAR_HEADS = ("classifier", "multiple_choice", "token_classifier")


def detect_format(path: str | os.PathLike) -> str:
    """ "hf", "tf1" or "keras" for a local checkpoint path; a clear error otherwise."""
    path = os.fspath(path)
    if path.endswith(".keras") and os.path.isfile(path):
        return "keras"
    if os.path.isdir(path):
        if os.path.isfile(os.path.join(path, "config.json")):
            return "hf"
        if os.path.isfile(os.path.join(path, "albert_config.json")):
            return "tf1"
    elif os.path.isfile(path + ".index"):
        return "tf1"
    raise ValueError(
        f"Cannot tell the checkpoint format of {path!r}. Expected a Hugging Face directory "
        "(config.json + model.safetensors), an original ALBERT directory (albert_config.json "
        "+ model.ckpt-*), a TF1 checkpoint prefix (with .index), or a .keras file."
    )


def load_checkpoint(
    path: str | os.PathLike,
    format: str = "auto",
    model: str | None = None,
    config: AlbertConfig | None = None,
    num_classes: int | None = None,
):
    """Builds the model a local checkpoint holds and loads its weights.

    Args:
        path: the checkpoint (see the module docstring).
        format: "auto", "hf", "tf1" or "keras".
        model: force the model kind, one of `MODEL_KINDS`; by default the checkpoint's own
            (its HF architecture, or the heads its tensors carry). A backbone can be taken
            from any checkpoint (the heads are skipped). A TF1 `run_race` checkpoint has the
            names of a one-output classifier: load it with model="multiple_choice".
        config: the architecture, for a TF1 checkpoint prefix without albert_config.json.
        num_classes: for a classifier (classes) or token classifier (tags), when the
            checkpoint does not say.
    """
    if format not in FORMATS:
        raise ValueError(f"`format` must be one of {FORMATS}. Received: format={format!r}")
    path = os.fspath(path)
    if format == "auto":
        format = detect_format(path)
    if format == "keras":
        return keras.models.load_model(path)
    if format == "hf":
        return _load_hf(path, model, num_classes)
    return _load_tf1(path, model, config, num_classes)


def _build(kind: str, config: AlbertConfig, num_classes: int | None, labels=None):
    backbone = AlbertBackbone.from_albert_config(config)
    if kind == "backbone":
        return backbone
    if kind == "pretrainer":
        return AlbertPretrainer(backbone)
    if kind == "classifier":
        if num_classes is None:
            raise ValueError("Building a classifier needs `num_classes`; the checkpoint has none.")
        return AlbertClassifier(backbone, num_classes=num_classes)
    if kind == "multiple_choice":
        return AlbertMultipleChoice(backbone)
    if kind == "token_classifier":
        if num_classes is None:
            raise ValueError(
                "Building a token classifier needs `num_classes` (the number of tags); "
                "the checkpoint has none."
            )
        if labels is not None and len(labels) != num_classes:
            labels = None  # the checkpoint's names do not fit the head asked for
        return AlbertTokenClassifier(backbone, num_labels=num_classes, labels=labels)
    raise ValueError(f"`model` must be one of {MODEL_KINDS}. Received: model={kind!r}")


def _load_hf(path: str, kind: str | None, num_classes: int | None):
    hf_config, tensors = read_hf_directory(path)
    architecture = (hf_config.get("architectures") or ["AlbertModel"])[0]
    if architecture not in HF_ARCHITECTURES:
        raise ValueError(
            f"Unsupported Hugging Face architecture {architecture!r} in {path}/config.json. "
            f"Supported: {sorted(HF_ARCHITECTURES)}."
        )
    own_kind = HF_ARCHITECTURES[architecture]
    kind = kind or own_kind
    own_head = kind == own_kind and kind in _LINEAR_HEADS
    if own_head and num_classes is None and "classifier.weight" in tensors:
        num_classes = int(tensors["classifier.weight"].shape[0])  # (num_labels, hidden)
    labels = hf_labels(hf_config) if own_head else None
    model = _build(kind, AlbertConfig.from_hf_config(hf_config), num_classes, labels)
    allow_uninitialized = []
    if architecture == "AlbertForMaskedLM" and kind == "pretrainer":
        allow_uninitialized = [r"^pooler/", r"^sentence_order_head/"]  # MaskedLM has neither
    if kind in _LINEAR_HEADS and own_kind != kind:
        allow_uninitialized = [r"^logits/"]  # a fresh head on a pretrained body
    fresh = load_hf_weights(
        model, tensors, allow_uninitialized=allow_uninitialized, ignore_heads=kind == "backbone"
    )
    _report_fresh(fresh, path)
    return model


def _load_tf1(path: str, kind: str | None, config: AlbertConfig | None, num_classes):
    if os.path.isdir(path) and config is None:
        config = AlbertConfig.from_json(os.path.join(path, "albert_config.json"))
    if config is None:
        raise ValueError(
            f"A TF1 checkpoint prefix ({path!r}) needs `config` (its albert_config.json)."
        )
    tensors = read_tf1_checkpoint(path)
    own_heads = tf1_heads(tensors)
    kind = kind or {"pretraining": "pretrainer", "classifier": "classifier"}.get(
        own_heads, "backbone"
    )
    if kind == "classifier" and num_classes is None and own_heads == "classifier":
        num_classes = int(tensors["output_weights"].shape[0])
    model = _build(kind, config, num_classes)
    load_tf1_weights(model, tensors)
    return model


def _report_fresh(fresh: list[str], path: str) -> None:
    if fresh:
        print(
            f"keras_albert: {len(fresh)} weights are not in {path} and keep their fresh "
            f"initialization: {', '.join(sorted(fresh))}"
        )


def save_checkpoint(model, destination: str | os.PathLike, format: str = "auto") -> None:
    """Writes `model` as `.keras`, `.weights.h5`, or a Hugging Face directory ("hf")."""
    destination = os.fspath(destination)
    if format == "auto":
        format = "keras" if destination.endswith((".keras", ".weights.h5")) else "hf"
    if format == "keras":
        if destination.endswith(".weights.h5"):
            model.save_weights(destination)
        else:
            model.save(destination)
    elif format == "hf":
        write_hf_directory(model, destination)
    else:
        raise ValueError(
            f"`format` must be 'auto', 'keras' or 'hf' for writing. Received: {format!r}"
        )
