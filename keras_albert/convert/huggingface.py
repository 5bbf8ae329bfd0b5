"""Hugging Face transformers ALBERT weights ↔ keras_albert models.

The HF names live only here. `hf_name_table(config, ...)` is the declarative mapping;
`load_hf_weights(model, tensors)` fills an `AlbertBackbone`, `AlbertPretrainer`,
`AlbertClassifier`, `AlbertMultipleChoice` or `AlbertTokenClassifier` from a dict of arrays;
`read_hf_directory` / `write_hf_directory` read and write a model directory (`config.json` +
`model.safetensors`, or a `pytorch_model.bin` read with `torch.load(weights_only=True)` only).
Never any network.
"""

import json
import os
from collections.abc import Iterable, Mapping

import numpy as np

from keras_albert.config import AlbertConfig
from keras_albert.convert.name_table import Entry, assign_from_table, read_from_table
from keras_albert.models import (
    AlbertBackbone,
    AlbertClassifier,
    AlbertMultipleChoice,
    AlbertPretrainer,
    AlbertTokenClassifier,
)
from keras_albert.models.backbone import shared_blocks
from keras_albert.models.question_answerer import AlbertQuestionAnswerer
from keras_albert.text.files import apply_umask, write_atomically

# HF architecture name → the kind of model we build for it.
HF_ARCHITECTURES = {
    "AlbertModel": "backbone",
    "AlbertForPreTraining": "pretrainer",
    "AlbertForMaskedLM": "pretrainer",
    "AlbertForSequenceClassification": "classification",
    "AlbertForQuestionAnswering": "question_answering",
    "AlbertForMultipleChoice": "multiple_choice",
    "AlbertForTokenClassification": "token_classification",
}

# Our models with one `classifier` linear on top of `albert.*`, and their HF class.
_CLASSIFIER_HEADS = {
    AlbertClassifier: "AlbertForSequenceClassification",
    AlbertMultipleChoice: "AlbertForMultipleChoice",
    AlbertTokenClassifier: "AlbertForTokenClassification",
}

# (our sublayer path, HF module name) inside one transformer block.
_BLOCK_LINEARS = [
    ("attention/query", "attention.query"),
    ("attention/key", "attention.key"),
    ("attention/value", "attention.value"),
    ("attention/output", "attention.dense"),
    ("feedforward/intermediate", "ffn"),
    ("feedforward/output", "ffn_output"),
]
_BLOCK_LAYER_NORMS = [
    ("attention/layer_norm", "attention.LayerNorm"),
    ("feedforward/layer_norm", "full_layer_layer_norm"),
]


def _linear(path: str, hf_name: str) -> list[Entry]:
    return [
        Entry(f"{path}/kernel", f"{hf_name}.weight", transpose=True),
        Entry(f"{path}/bias", f"{hf_name}.bias"),
    ]


def _layer_norm(path: str, hf_name: str) -> list[Entry]:
    return [Entry(f"{path}/gamma", f"{hf_name}.weight"), Entry(f"{path}/beta", f"{hf_name}.bias")]


def hf_name_table(
    config: AlbertConfig, heads: bool = False, backbone_prefix: str = ""
) -> list[Entry]:
    """The mapping between our weight paths and HF's parameter names.

    Args:
        config: the architecture (must use sharing="all": HF has no other).
        heads: include the pretraining heads (`AlbertForPreTraining`'s `predictions` and
            `sop_classifier`).
        backbone_prefix: HF's prefix on backbone names: "" for `AlbertModel`, "albert." for
            the models with heads.
    """
    if config.sharing != "all":
        raise ValueError(
            "`sharing` must be 'all' (HF ALBERT shares every layer). "
            f"Received: sharing={config.sharing!r}"
        )
    p = backbone_prefix
    table = [
        Entry("embedding/token_embedding/embeddings", f"{p}embeddings.word_embeddings.weight"),
        Entry("embedding/position_embeddings", f"{p}embeddings.position_embeddings.weight"),
        Entry(
            "embedding/segment_embedding/embeddings", f"{p}embeddings.token_type_embeddings.weight"
        ),
        *_layer_norm("embedding/layer_norm", f"{p}embeddings.LayerNorm"),
        *_linear("embedding/projection", f"{p}encoder.embedding_hidden_mapping_in"),
        *_linear("pooler", f"{p}pooler"),
    ]
    for group, inner, ours in shared_blocks(config):
        theirs = f"{p}encoder.albert_layer_groups.{group}.albert_layers.{inner}"
        for our_sublayer, hf_module in _BLOCK_LINEARS:
            table += _linear(f"{ours}/{our_sublayer}", f"{theirs}.{hf_module}")
        for our_sublayer, hf_module in _BLOCK_LAYER_NORMS:
            table += _layer_norm(f"{ours}/{our_sublayer}", f"{theirs}.{hf_module}")
    if heads:
        table += [
            Entry("masked_lm_head/output_bias", "predictions.bias"),
            *_linear("masked_lm_head/dense", "predictions.dense"),
            *_layer_norm("masked_lm_head/layer_norm", "predictions.LayerNorm"),
            *_linear("sentence_order_head/dense", "sop_classifier.classifier"),
        ]
    return table


def _linear_head_architecture(model) -> str | None:
    for model_class, architecture in _CLASSIFIER_HEADS.items():
        if isinstance(model, model_class):
            return architecture
    return None


def _table_for(model) -> tuple[list[Entry], dict[str, str]]:
    if _linear_head_architecture(model) is not None:
        table = hf_name_table(model.backbone.albert_config, backbone_prefix="albert.")
        table += _linear("logits", "classifier")
        return table, {}
    if isinstance(model, AlbertQuestionAnswerer):
        if model.answerability != "null_span":
            raise ValueError(
                "Hugging Face's AlbertForQuestionAnswering has only the null-span head. "
                f"Received: answerability={model.answerability!r}"
            )
        table = hf_name_table(model.backbone.albert_config, backbone_prefix="albert.")
        table += _linear("span_logits", "qa_outputs")
        return table, {}
    if isinstance(model, AlbertPretrainer):
        config = model.backbone.albert_config
        table = hf_name_table(config, heads=True, backbone_prefix="albert.")
        # HF stores the tied decoder twice (weight = the token table, bias = predictions.bias).
        aliases = {
            "predictions.decoder.weight": "albert.embeddings.word_embeddings.weight",
            "predictions.decoder.bias": "predictions.bias",
        }
        return table, aliases
    if isinstance(model, AlbertBackbone):
        return hf_name_table(model.albert_config), {}
    raise ValueError(
        f"`model` must be an ALBERT model of keras_albert. Received: model={type(model).__name__}"
    )


def load_hf_weights(
    model,
    tensors: Mapping[str, np.ndarray],
    allow_uninitialized: Iterable[str] = (),
    ignore_heads: bool = False,
) -> list[str]:
    """Fills `model` from HF-named arrays; returns the weights left as initialized.

    Args:
        model: an `AlbertBackbone`, `AlbertPretrainer`, `AlbertClassifier`,
            `AlbertMultipleChoice`, `AlbertTokenClassifier` or (null-span)
            `AlbertQuestionAnswerer`.
        tensors: HF parameter name → array (a `state_dict` or a safetensors file).
        allow_uninitialized: regexes of our weight paths that may be absent from `tensors`
            and keep their fresh initialization (e.g. the pooler and SOP head when loading
            an `AlbertForMaskedLM`, which has neither). Everything else must be present.
        ignore_heads: for a backbone, skip HF head tensors instead of refusing them.
    """
    tensors = dict(tensors)
    if isinstance(model, AlbertQuestionAnswerer):
        # HF builds AlbertForQuestionAnswering without a pooler; ours keeps its unused one.
        allow_uninitialized = [*allow_uninitialized, r"^pooler/"]
    if isinstance(model, AlbertBackbone):
        tensors = {k.removeprefix("albert."): v for k, v in tensors.items()}
    table, aliases = _table_for(model)
    if isinstance(model, AlbertTokenClassifier):
        # HF builds `AlbertForTokenClassification` without a pooler; ours is unused there.
        allow_uninitialized = [*allow_uninitialized, r"^pooler/"]
    return assign_from_table(
        model.weights,
        table,
        tensors,
        aliases=aliases,
        # Buffers HF may keep in a state_dict are not weights.
        ignore_patterns=[r"position_ids$", r"token_type_ids$"]
        + ([r"^(predictions|sop_classifier|classifier|qa_outputs)\."] if ignore_heads else []),
        allow_uninitialized=allow_uninitialized,
        source_description="Hugging Face ALBERT weights",
    )


def hf_weights_from_model(model) -> dict[str, np.ndarray]:
    """Our weights under HF names (the tied decoder is not repeated).

    The pooler is left out for question answering and token classification: HF builds
    `AlbertForQuestionAnswering` and `AlbertForTokenClassification` without one.
    """
    table, _ = _table_for(model)
    if isinstance(model, (AlbertQuestionAnswerer, AlbertTokenClassifier)):
        table = [entry for entry in table if not entry.weight_path.startswith("pooler/")]
    return read_from_table(model.weights, table)


def hf_architecture(model) -> str:
    """The HF class that holds the same weights as `model`."""
    if _linear_head_architecture(model) is not None:
        return _linear_head_architecture(model)
    if isinstance(model, AlbertQuestionAnswerer):
        return "AlbertForQuestionAnswering"
    if isinstance(model, AlbertPretrainer):
        return "AlbertForPreTraining"
    if isinstance(model, AlbertBackbone):
        return "AlbertModel"
    raise ValueError(
        "`model` must be an AlbertBackbone, AlbertPretrainer or AlbertClassifier. "
        f"Received: model={type(model).__name__}"
    )


def hf_labels(hf_config: dict) -> list[str] | None:
    """The tag names of a HF config (`id2label`), or None when they are HF's `LABEL_<i>`."""
    id2label = hf_config.get("id2label")
    if not id2label:
        return None
    labels = [id2label.get(str(i), id2label.get(i)) for i in range(len(id2label))]
    if any(label is None for label in labels) or labels == [
        f"LABEL_{i}" for i in range(len(labels))
    ]:
        return None
    return labels


def read_hf_directory(path: str | os.PathLike) -> tuple[dict, dict[str, np.ndarray]]:
    """`(config.json as a dict, name → array)` from a local HF model directory."""
    path = os.fspath(path)
    config_path = os.path.join(path, "config.json")
    if not os.path.isfile(config_path):
        raise ValueError(
            f"`path` must be a Hugging Face model directory; {config_path!r} not found. "
            f"Received: path={path!r}"
        )
    with open(config_path, encoding="utf-8") as f:
        hf_config = json.load(f)
    safetensors_path = os.path.join(path, "model.safetensors")
    bin_path = os.path.join(path, "pytorch_model.bin")
    if os.path.isfile(safetensors_path):
        from safetensors.numpy import load_file

        return hf_config, load_file(safetensors_path)
    if os.path.isfile(bin_path):
        return hf_config, _read_pytorch_bin(bin_path)
    raise ValueError(
        "`path` must hold model.safetensors or pytorch_model.bin; no weights found. "
        f"Received: path={path!r}"
    )


def _read_pytorch_bin(path: str) -> dict[str, np.ndarray]:
    try:
        import torch
    except ImportError as error:
        raise ValueError(
            f"Reading {path!r} needs PyTorch; convert it to model.safetensors or install torch."
        ) from error
    try:
        # weights_only: never run pickled code from a downloaded file.
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:
        raise ValueError(
            f"Refused to load {path!r}: it is not a plain dictionary of tensors "
            f"(torch.load(weights_only=True) failed: {error})"
        ) from error
    if not isinstance(state, dict):
        raise ValueError(
            f"Refused {path!r}: it must hold a dict of tensors. Received: a {type(state).__name__}"
        )
    not_tensors = sorted(k for k, v in state.items() if not isinstance(v, torch.Tensor))
    if not_tensors:
        raise ValueError(
            f"Refused {path!r}: every entry must be a tensor. Received: non-tensor entries "
            f"{not_tensors}"
        )
    return {name: tensor.detach().cpu().numpy() for name, tensor in state.items()}


def write_hf_directory(
    model, path: str | os.PathLike, extra_files: Mapping[str, bytes] | None = None
) -> None:
    """Writes `config.json` + `model.safetensors` that `transformers` loads, to `path`: a new
    or empty directory (written beside, then renamed into place: a failure leaves nothing).

    `extra_files` (relative path → bytes) are written with them: the tokenizer, or the files
    of a format that wraps a Hugging Face directory (`TaskType.checkpoint_format`)."""

    def write(directory: str) -> None:
        _write_hf_files(model, directory)
        for relative, content in (extra_files or {}).items():
            target = os.path.join(directory, relative)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, "wb") as file:
                file.write(content)
            apply_umask(target)

    write_atomically(path, write, directory=True)


def _write_hf_files(model, path: str) -> None:
    from safetensors.numpy import save_file

    architecture = hf_architecture(model)
    backbone = model if isinstance(model, AlbertBackbone) else model.backbone
    hf_config = backbone.albert_config.to_hf_config()
    hf_config["architectures"] = [architecture]
    if isinstance(model, AlbertClassifier):
        hf_config["num_labels"] = model.num_classes
        hf_config["classifier_dropout_prob"] = model.dropout
        if model.num_classes == 1:
            hf_config["problem_type"] = "regression"
    if isinstance(model, AlbertQuestionAnswerer):
        hf_config["num_labels"] = 2  # qa_outputs: start and end
    if isinstance(model, AlbertTokenClassifier):
        hf_config["num_labels"] = model.num_labels
        if model.labels is not None:
            hf_config["id2label"] = dict(enumerate(model.labels))
            hf_config["label2id"] = {label: i for i, label in enumerate(model.labels)}
    if isinstance(model, (AlbertMultipleChoice, AlbertTokenClassifier)):
        hf_config["classifier_dropout_prob"] = model.dropout
    with open(os.path.join(path, "config.json"), "w", encoding="utf-8") as f:
        json.dump(hf_config, f, indent=2, sort_keys=True)
    tensors = hf_weights_from_model(model)
    save_file(tensors, os.path.join(path, "model.safetensors"), metadata={"format": "pt"})
    apply_umask(os.path.join(path, "model.safetensors"))
