"""keras-hub's ALBERT weights: the name table between our weight paths and keras-hub's variable
paths, and where each variable lies in a preset's weights files.

Keras's `save_weights` writes each layer of those models under its class name in snake case,
numbered in the order of `model.layers` (`layers/dense` is the embedding projection,
`layers/dense_1` the pooler), its variables as `vars/0`, `vars/1` in creation order (kernel then
bias, gamma then beta); the files are read and written here with h5py, without keras_hub.
`keras_hub_name_table` maps our weight paths to keras-hub's variable paths through the one
checker (`name_table.assign_from_table`); `weights_file_location` places each keras-hub variable
in `model.weights.h5` (the backbone) or `task.weights.h5` (the head). The preset directory
around these files, and both directions of the conversion, are `keras_albert.convert.keras_hub`.
"""

import re

import h5py
import numpy as np

from keras_albert.config import AlbertConfig
from keras_albert.convert.name_table import Entry
from keras_albert.models.backbone import shared_blocks
from keras_albert.tasks.registry import get_task_type

# (our sublayer path, keras-hub sublayer path) inside one transformer block.
_BLOCK_SUBLAYERS = [
    ("attention/query", "self_attention_layer/query"),
    ("attention/key", "self_attention_layer/key"),
    ("attention/value", "self_attention_layer/value"),
    ("attention/output", "self_attention_layer/attention_output"),
    ("attention/layer_norm", "self_attention_layer_norm"),
    ("feedforward/intermediate", "feedforward_intermediate_dense"),
    ("feedforward/output", "feedforward_output_dense"),
    ("feedforward/layer_norm", "feedforward_layer_norm"),
]
# keras-hub layer → its group in Keras's weights file (key: snake-case class, numbered in
# `model.layers` order). The transformer blocks are `layers/transformer_encoder[_k]`, k the
# block's index in creation order (group-major), with their sublayers under the attribute
# names below.
_FILE_GROUPS = {
    "token_embedding": "layers/reversible_embedding",
    "position_embedding": "layers/position_embedding",
    "segment_embedding": "layers/embedding",
    "embeddings_layer_norm": "layers/layer_normalization",
    "embedding_projection": "layers/dense",
    "pooled_dense": "layers/dense_1",
    # task.weights.h5
    "logits": "layers/dense",
    "mlm_head": "layers/masked_lm_head",
    "mlm_head/intermediate_dense": "layers/masked_lm_head/_intermediate_dense",
    "mlm_head/intermediate_layer_norm": "layers/masked_lm_head/_intermediate_layer_norm",
}
_BLOCK_FILE_GROUPS = {
    "self_attention_layer/query": "_self_attention_layer/query_dense",
    "self_attention_layer/key": "_self_attention_layer/key_dense",
    "self_attention_layer/value": "_self_attention_layer/value_dense",
    "self_attention_layer/attention_output": "_self_attention_layer/output_dense",
    "self_attention_layer_norm": "_self_attention_layer_norm",
    "feedforward_intermediate_dense": "_feedforward_intermediate_dense",
    "feedforward_output_dense": "_feedforward_output_dense",
    "feedforward_layer_norm": "_feedforward_layer_norm",
}
_VARIABLE_INDEX = {"kernel": 0, "bias": 1, "gamma": 0, "beta": 1, "embeddings": 0, "output_bias": 0}
_BLOCK_NAME = re.compile(r"^group_(\d+)_inner_layer_(\d+)/(.+)$")


def entries_for(ours: str, theirs: str, variables=("kernel", "bias")) -> list[Entry]:
    """`ours/<variable>` ↔ `theirs/<variable>` for each of `variables`."""
    return [Entry(f"{ours}/{variable}", f"{theirs}/{variable}") for variable in variables]


def keras_hub_name_table(config: AlbertConfig, head: str | None = None) -> list[Entry]:
    """Our weight paths ↔ keras-hub's variable paths (`variable.path` in its models).

    Args:
        config: the architecture.
        head: None (a backbone), "pretrainer" (`AlbertMaskedLM`'s `mlm_head`; keras-hub has no
            sentence-order head) or the name of a task type whose head keras-hub has
            (`TaskType.checkpoint_names.keras_hub_head`: "classification",
            `AlbertTextClassifier`'s `logits`).
    """
    hidden, heads = config.hidden_dim, config.num_heads
    per_head = (hidden, heads, hidden // heads)  # EinsumDense kernels
    norm = ("gamma", "beta")
    table = [
        Entry("embedding/token_embedding/embeddings", "token_embedding/embeddings"),
        Entry("embedding/position_embeddings", "position_embedding/embeddings"),
        Entry("embedding/segment_embedding/embeddings", "segment_embedding/embeddings"),
        *entries_for("embedding/layer_norm", "embeddings_layer_norm", norm),
        *entries_for("embedding/projection", "embedding_projection"),
    ]
    for group, inner, ours in shared_blocks(config):
        theirs = f"group_{group}_inner_layer_{inner}"
        for our_sublayer, their_sublayer in _BLOCK_SUBLAYERS:
            path, their_path = f"{ours}/{our_sublayer}", f"{theirs}/{their_sublayer}"
            if our_sublayer in ("attention/query", "attention/key", "attention/value"):
                table += [
                    Entry(f"{path}/kernel", f"{their_path}/kernel", source_shape=per_head),
                    Entry(f"{path}/bias", f"{their_path}/bias", source_shape=per_head[1:]),
                ]
            elif our_sublayer == "attention/output":
                table += [
                    Entry(
                        f"{path}/kernel",
                        f"{their_path}/kernel",
                        source_shape=per_head[1:] + (hidden,),
                    ),
                    Entry(f"{path}/bias", f"{their_path}/bias"),
                ]
            else:
                variables = norm if our_sublayer.endswith("layer_norm") else ("kernel", "bias")
                table += entries_for(path, their_path, variables)
    table += entries_for("pooler", "pooled_dense")
    if head not in (None, "pretrainer"):
        table += [
            Entry(*name) for name in get_task_type(head).checkpoint_names.keras_hub_head.names
        ]
    elif head == "pretrainer":
        table += [
            Entry("masked_lm_head/output_bias", "mlm_head/output_bias"),
            *entries_for("masked_lm_head/dense", "mlm_head/intermediate_dense"),
            *entries_for("masked_lm_head/layer_norm", "mlm_head/intermediate_layer_norm", norm),
        ]
    return table


def weights_file_location(source_name: str, config: AlbertConfig) -> tuple[str, str]:
    """`(file, dataset path)` of a keras-hub variable: "model" (the backbone's
    model.weights.h5) or "task" (task.weights.h5)."""
    layer, variable = source_name.rsplit("/", 1)
    index = _VARIABLE_INDEX[variable]
    block = _BLOCK_NAME.match(layer)
    if block:
        number = int(block[1]) * config.num_inner_repetitions + int(block[2])
        key = "layers/transformer_encoder" + (f"_{number}" if number else "")
        return "model", f"{key}/{_BLOCK_FILE_GROUPS[block[3]]}/vars/{index}"
    file = "task" if layer == "logits" or layer.startswith("mlm_head") else "model"
    return file, f"{_FILE_GROUPS[layer]}/vars/{index}"


def read_weights_file(path: str) -> dict[str, np.ndarray]:
    """Every dataset of a Keras weights file, by its path in the file."""
    tensors = {}

    def visit(name, item):
        if isinstance(item, h5py.Dataset):
            if item.attrs.get("dtype") == "bfloat16":
                raise ValueError(
                    f"`source` must hold float weights; {path!r} stores {name} as bfloat16. "
                    "Received: a bfloat16 preset (load it in keras-hub and save it as float32)"
                )
            tensors[name] = np.asarray(item[()])

    with h5py.File(path, "r") as file:
        file.visititems(visit)
    return tensors


def write_weights_file(path: str, datasets: dict[str, np.ndarray], names: dict[str, str]):
    """A Keras weights file: `names` gives each layer group's `vars` its layer name (as Keras
    writes it; informative only)."""
    with h5py.File(path, "w") as file:
        for dataset, value in sorted(datasets.items()):
            file[dataset] = value
        for group, name in names.items():
            if group in file:
                file[group].attrs["name"] = name
