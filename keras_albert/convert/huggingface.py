"""Hugging Face transformers ALBERT weights ↔ keras_albert models.

The HF names of the backbone and the pretraining heads live here, those of a task type's head
in its record (`TaskType.checkpoint_names`: the HF class, the head's weights, its config
fields). `hf_name_table(config, ...)` is the declarative mapping; `load_hf_weights(model,
tensors)` fills an `AlbertBackbone`, `AlbertPretrainer` or the head of a task type that
transformers has (`AlbertClassifier`, `AlbertMultipleChoice`, `AlbertTokenClassifier`, the
null-span `AlbertQuestionAnswerer`) from a dict of arrays;
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
from keras_albert.models.backbone import shared_blocks
from keras_albert.tasks.registry import TASK_TYPES, get_task_type, model_kind_of
from keras_albert.tasks.task_type import CheckpointNames
from keras_albert.text.files import apply_umask, write_atomically

# The HF classes of the models that are no task type's head, written as the first of each kind.
_BASE_ARCHITECTURES = {
    "AlbertModel": "backbone",
    "AlbertForPreTraining": "pretrainer",
    "AlbertForMaskedLM": "pretrainer",
}
# HF architecture name → the kind of model we build for it.
HF_ARCHITECTURES = {
    **_BASE_ARCHITECTURES,
    **{
        task_type.checkpoint_names.hf_architecture: task_type.name
        for task_type in TASK_TYPES
        if task_type.checkpoint_names.hf_architecture is not None
    },
}
# HF's head modules (prefixes of their weights' names), skipped when a backbone is loaded.
_HF_HEAD_MODULES = sorted(
    {"predictions", "sop_classifier"}
    | {
        name.rsplit(".", 1)[0]
        for task_type in TASK_TYPES
        if task_type.checkpoint_names.hf_head is not None
        for _, name, _ in task_type.checkpoint_names.hf_head.names
    }
)

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


def _hf_head(model) -> tuple[str, CheckpointNames | None]:
    """`model`'s kind, and for a task type's head its names (`TaskType.checkpoint_names`),
    checked to have a Hugging Face counterpart."""
    kind = model_kind_of(model)
    if kind in ("backbone", "pretrainer"):
        return kind, None
    names = get_task_type(kind).checkpoint_names
    if names.hf_head is None:
        raise ValueError(
            f"`model` must have a Hugging Face counterpart; transformers has no {kind} head. "
            f"Received: model={type(model).__name__}"
        )
    for key, value in names.hf_head.options.items():
        if getattr(model, key) != value:
            raise ValueError(
                f"`{key}` must be {value!r}: Hugging Face's {names.hf_architecture} has only "
                f"that head. Received: {key}={getattr(model, key)!r}"
            )
    return kind, names


def _table_for(model) -> tuple[list[Entry], dict[str, str]]:
    kind, names = _hf_head(model)
    if names is not None:
        table = hf_name_table(model.backbone.albert_config, backbone_prefix="albert.")
        table += [Entry(*name) for name in names.hf_head.names]
        return table, {}
    if kind == "pretrainer":
        config = model.backbone.albert_config
        table = hf_name_table(config, heads=True, backbone_prefix="albert.")
        # HF stores the tied decoder twice (weight = the token table, bias = predictions.bias).
        aliases = {
            "predictions.decoder.weight": "albert.embeddings.word_embeddings.weight",
            "predictions.decoder.bias": "predictions.bias",
        }
        return table, aliases
    return hf_name_table(model.albert_config), {}


def load_hf_weights(
    model,
    tensors: Mapping[str, np.ndarray],
    allow_uninitialized: Iterable[str] = (),
    ignore_heads: bool = False,
) -> list[str]:
    """Fills `model` from HF-named arrays; returns the weights left as initialized.

    Args:
        model: an `AlbertBackbone`, `AlbertPretrainer`, or the head of a task type that
            transformers has (`TaskType.checkpoint_names.hf_architecture`).
        tensors: HF parameter name → array (a `state_dict` or a safetensors file).
        allow_uninitialized: regexes of our weight paths that may be absent from `tensors`
            and keep their fresh initialization (e.g. the pooler and SOP head when loading
            an `AlbertForMaskedLM`, which has neither). Everything else must be present.
        ignore_heads: for a backbone, skip HF head tensors instead of refusing them.
    """
    tensors = dict(tensors)
    kind, names = _hf_head(model)
    if names is not None and not names.hf_pooler:
        # HF builds that class without a pooler (question answering, token classification);
        # ours keeps its unused one.
        allow_uninitialized = [*allow_uninitialized, r"^pooler/"]
    if kind == "backbone":
        tensors = {k.removeprefix("albert."): v for k, v in tensors.items()}
    table, aliases = _table_for(model)
    return assign_from_table(
        model.weights,
        table,
        tensors,
        aliases=aliases,
        # Buffers HF may keep in a state_dict are not weights.
        ignore_patterns=[r"position_ids$", r"token_type_ids$"]
        + ([rf"^({'|'.join(_HF_HEAD_MODULES)})\."] if ignore_heads else []),
        allow_uninitialized=allow_uninitialized,
        source_description="Hugging Face ALBERT weights",
    )


def hf_weights_from_model(model) -> dict[str, np.ndarray]:
    """Our weights under HF names (the tied decoder is not repeated).

    The pooler is left out where HF's class has none (`CheckpointNames.hf_pooler`: question
    answering, token classification).
    """
    table, _ = _table_for(model)
    _, names = _hf_head(model)
    if names is not None and not names.hf_pooler:
        table = [entry for entry in table if not entry.weight_path.startswith("pooler/")]
    return read_from_table(model.weights, table)


def hf_architecture(model) -> str:
    """The HF class that holds the same weights as `model`."""
    kind, names = _hf_head(model)
    if names is not None:
        return names.hf_architecture
    return {"backbone": "AlbertModel", "pretrainer": "AlbertForPreTraining"}[kind]


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
    kind, names = _hf_head(model)
    backbone = model if kind == "backbone" else model.backbone
    hf_config = backbone.albert_config.to_hf_config()
    hf_config["architectures"] = [architecture]
    if names is not None and names.hf_config is not None:
        hf_config.update(names.hf_config(model))  # the head's fields: num_labels, ...
    with open(os.path.join(path, "config.json"), "w", encoding="utf-8") as f:
        json.dump(hf_config, f, indent=2, sort_keys=True)
    tensors = hf_weights_from_model(model)
    save_file(tensors, os.path.join(path, "model.safetensors"), metadata={"format": "pt"})
    apply_umask(os.path.join(path, "model.safetensors"))
