"""The original google-research/albert TF1 checkpoints → keras_albert models.

`tf1_name_table` is the declarative mapping from the original variable names (kernels are
stored 2-D as (in, out), like Keras) to our weight paths: the backbone's and the pretraining
heads' here, a task type's head in its record (`TaskType.checkpoint_names.tf1_heads`).
`load_tf1_weights` reads a checkpoint with `tf.train.load_checkpoint` (no TF1 graph needed)
and assigns through `assign_from_table`, so a missing, unused or misshapen tensor is one loud
error. Optimizer slots and the step counter are ignored by name.
"""

import os
import re

import numpy as np

from keras_albert.config import AlbertConfig
from keras_albert.convert.name_table import Entry, assign_from_table
from keras_albert.lazy import require_tensorflow
from keras_albert.models.backbone import shared_blocks
from keras_albert.tasks.registry import TASK_TYPES, get_task_type, model_kind_of
from keras_albert.tasks.task_type import ForeignHead

# Optimizer state and bookkeeping in released and fine-tuned checkpoints.
TF1_IGNORE_PATTERNS = (
    r"adam_[mv]$",
    r"(^|/)lamb",
    r"_lamb(_[mv])?$",
    r"^global_step$",
    r"^good_steps$",
    r"^loss_scale$",
    r"^_CHECKPOINTABLE_OBJECT_GRAPH$",
)

# Every task type's heads in the original code: (task type name, head), in `TASK_TYPES`' order
# (`run_classifier`'s head before `run_race`'s, which has the same names).
_TASK_HEADS = [
    (task_type.name, head)
    for task_type in TASK_TYPES
    for head in task_type.checkpoint_names.tf1_heads
]

_BLOCK = [  # (our sublayer path, original name inside group_g/inner_group_r)
    ("attention/query", "attention_1/self/query"),
    ("attention/key", "attention_1/self/key"),
    ("attention/value", "attention_1/self/value"),
    ("attention/output", "attention_1/output/dense"),
    ("feedforward/intermediate", "ffn_1/intermediate/dense"),
    ("feedforward/output", "ffn_1/intermediate/output/dense"),
]


def _dense(path: str, name: str) -> list[Entry]:
    return [Entry(f"{path}/kernel", f"{name}/kernel"), Entry(f"{path}/bias", f"{name}/bias")]


def _layer_norm(path: str, name: str) -> list[Entry]:
    return [Entry(f"{path}/gamma", f"{name}/gamma"), Entry(f"{path}/beta", f"{name}/beta")]


def tf1_name_table(
    config: AlbertConfig, kind: str | None = None, head: ForeignHead | None = None
) -> list[Entry]:
    """Our weight paths ↔ the original variable names.

    Args:
        config: the architecture (sharing="all").
        kind: None or "backbone" for a backbone, "pretrainer" for the MLM + SOP heads
            (`cls/...`); for a task type's head, give `head` instead.
        head: a task type's head in the original code (`CheckpointNames.tf1_heads`:
            `run_classifier`'s, `run_race`'s, `run_squad_v1`'s or `run_squad_v2`'s).
    """
    if config.sharing != "all":
        raise ValueError(
            "`sharing` must be 'all' (the original ALBERT shares every layer). "
            f"Received: sharing={config.sharing!r}"
        )
    table = [
        Entry("embedding/token_embedding/embeddings", "bert/embeddings/word_embeddings"),
        Entry("embedding/position_embeddings", "bert/embeddings/position_embeddings"),
        Entry("embedding/segment_embedding/embeddings", "bert/embeddings/token_type_embeddings"),
        *_layer_norm("embedding/layer_norm", "bert/embeddings/LayerNorm"),
        *_dense("embedding/projection", "bert/encoder/embedding_hidden_mapping_in"),
        *_dense("pooler", "bert/pooler/dense"),
    ]
    for group, inner, ours in shared_blocks(config):
        theirs = f"bert/encoder/transformer/group_{group}/inner_group_{inner}"
        for our_sublayer, original in _BLOCK:
            table += _dense(f"{ours}/{our_sublayer}", f"{theirs}/{original}")
        table += _layer_norm(f"{ours}/attention/layer_norm", f"{theirs}/LayerNorm")
        table += _layer_norm(f"{ours}/feedforward/layer_norm", f"{theirs}/LayerNorm_1")
    if kind == "pretrainer":
        table += [
            *_dense("masked_lm_head/dense", "cls/predictions/transform/dense"),
            *_layer_norm("masked_lm_head/layer_norm", "cls/predictions/transform/LayerNorm"),
            Entry("masked_lm_head/output_bias", "cls/predictions/output_bias"),
            # Stored (2, H): the original multiplies with transpose_b=True.
            Entry("sentence_order_head/dense/kernel", "cls/seq_relationship/output_weights", True),
            Entry("sentence_order_head/dense/bias", "cls/seq_relationship/output_bias"),
        ]
    elif kind not in (None, "backbone"):
        raise ValueError(
            "`kind` must be None, 'backbone' or 'pretrainer' (a task type's head is given as "
            f"`head`). Received: kind={kind!r}"
        )
    if head is not None:
        table += [Entry(*name) for name in head.names]
    return table


def read_tf1_checkpoint(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """All tensors of a TF1 checkpoint (a prefix like `model.ckpt-100`, or its directory)."""
    tf = require_tensorflow("read_tf1_checkpoint")
    path = os.fspath(path)
    if os.path.isdir(path):
        latest = tf.train.latest_checkpoint(path)
        if latest is None and os.path.exists(os.path.join(path, "variables", "variables.index")):
            latest = os.path.join(path, "variables", "variables")  # a TF-Hub module
        # Releases shipped without a 'checkpoint' file (brightmart/albert_zh's
        # albert_model.ckpt.*): their one checkpoint prefix.
        prefixes = sorted(
            name[: -len(".index")] for name in os.listdir(path) if name.endswith(".index")
        )
        if latest is None and len(prefixes) == 1:
            latest = os.path.join(path, prefixes[0])
        if latest is None:
            raise ValueError(
                f"No TF1 checkpoint in directory {path!r}: `path` must hold a 'checkpoint' file, "
                f"one PREFIX.index or variables/variables.index. Received: path={path!r}"
            )
        path = latest
    if not os.path.exists(path + ".index"):
        raise ValueError(
            f"`path` must be a TF1 checkpoint prefix; {path + '.index'!r} not found. "
            f"Received: path={path!r}"
        )
    reader = tf.train.load_checkpoint(path)
    return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()}


def tf1_head(tensors, kind: str | None = None) -> tuple[str, ForeignHead | None]:
    """The kind of model a checkpoint's heads make ("backbone" when it has none), and for a
    task type's head, which of its original heads it is (`CheckpointNames.tf1_heads`; its
    `options` are the head's, e.g. `answerability`). Heads of the same names read as the
    first task type's (`run_race`'s as `run_classifier`'s), unless `kind` (the kind asked
    for) has that head too."""
    if "cls/predictions/output_bias" in tensors:
        return "pretrainer", None
    for name, head in _TASK_HEADS:
        if head.found_in(tensors):
            asked = [h for n, h in _TASK_HEADS if n == kind and h.names == head.names]
            return (kind, asked[0]) if asked else (name, head)
    return "backbone", None


def load_tf1_weights(model, tensors) -> None:
    """Fills an `AlbertBackbone`, `AlbertPretrainer` or the head of a task type the original
    code has (`TaskType.checkpoint_names.tf1_heads`: `AlbertClassifier`,
    `AlbertMultipleChoice` (`run_race`), `AlbertQuestionAnswerer`) from TF1 tensors."""
    kind = model_kind_of(model)
    head = None
    if kind not in ("backbone", "pretrainer"):
        heads = get_task_type(kind).checkpoint_names.tf1_heads
        if not heads:
            raise ValueError(
                f"The original ALBERT code has no {kind.replace('_', ' ')} head; load a "
                f"backbone from the TF1 checkpoint and build an {type(model).__name__} on it."
            )
        fitting = [candidate for candidate in heads if candidate.fits(model)]
        if not fitting:
            raise ValueError(
                f"`model` must have one of the original code's {kind} heads "
                f"({', '.join(repr(dict(h.options)) for h in heads)}). Received: "
                f"model={type(model).__name__}"
            )
        head = fitting[0]
    config = model.albert_config if kind == "backbone" else model.backbone.albert_config
    ignore = list(TF1_IGNORE_PATTERNS)
    if kind == "backbone":
        # A backbone may be loaded from any checkpoint: the heads are deliberately left out.
        scopes = {"cls"} | {
            name.split("/")[0] for _, task_head in _TASK_HEADS for _, name, _ in task_head.names
        }
        ignore += [f"^({'|'.join(re.escape(scope) for scope in sorted(scopes))})(/|$)"]
    assign_from_table(
        model.weights,
        tf1_name_table(config, kind if head is None else None, head),
        tensors,
        ignore_patterns=ignore,
        source_description="TF1 ALBERT checkpoint",
    )
