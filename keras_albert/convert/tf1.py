"""The original google-research/albert TF1 checkpoints → keras_albert models.

`tf1_name_table` is the declarative mapping from the original variable names (kernels are
stored 2-D as (in, out), like Keras) to our weight paths. `load_tf1_weights` reads a
checkpoint with `tf.train.load_checkpoint` (no TF1 graph needed) and assigns through
`assign_from_table`, so a missing, unused or misshapen tensor is one loud error. Optimizer
slots and the step counter are ignored by name.
"""

import os

import numpy as np

from keras_albert.config import AlbertConfig
from keras_albert.convert.name_table import Entry, assign_from_table
from keras_albert.lazy import require_tensorflow
from keras_albert.models import (
    AlbertBackbone,
    AlbertClassifier,
    AlbertMultipleChoice,
    AlbertPretrainer,
    AlbertTokenClassifier,
)
from keras_albert.models.backbone import shared_blocks
from keras_albert.models.question_answerer import AlbertQuestionAnswerer

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

# The original SQuAD v2.0 head (`squad_utils.create_v2_model`): our AnswerClassHead sublayer →
# its variable scope. The LayerNorm is TF1 contrib's (`LayerNorm/gamma`, `LayerNorm/beta`).
_ANSWER_CLASS_HEAD = [
    ("start_logits_dense", "start_logits/dense"),
    ("end_logits_dense_0", "end_logits/dense_0"),
    ("end_logits_dense_1", "end_logits/dense_1"),
    ("answer_class_dense_0", "answer_class/dense_0"),
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
    config: AlbertConfig, kind: str | None = None, answerability: str = "null_span"
) -> list[Entry]:
    """Our weight paths ↔ the original variable names.

    Args:
        config: the architecture (sharing="all").
        kind: the model's kind (`keras_albert.tasks.registry.MODEL_KINDS`): None or "backbone"
            for a backbone, "pretrainer" for the MLM + SOP heads (`cls/...`),
            "classification" for `run_classifier`'s `output_weights` / `output_bias` (also
            "multiple_choice", `run_race`'s head: the same names, `output_weights` [1, H]),
            "question_answering": `run_squad_v1`'s `cls/squad/output_weights` [2, H] /
            `output_bias` (`answerability` "null_span") or `run_squad_v2`'s answer-class head
            (`start_logits/`, `end_logits/`, `answer_class/`; `answerability` "answer_class").
        answerability: the question-answering head's (`AlbertQuestionAnswerer.answerability`).
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
    elif kind in ("classification", "multiple_choice"):
        table += [
            Entry("logits/kernel", "output_weights", transpose=True),
            Entry("logits/bias", "output_bias"),
        ]
    elif kind == "question_answering" and answerability == "null_span":
        table += [
            # Stored (2, H): row 0 scores starts, row 1 ends, multiplied with transpose_b=True.
            Entry("span_logits/kernel", "cls/squad/output_weights", transpose=True),
            Entry("span_logits/bias", "cls/squad/output_bias"),
        ]
    elif kind == "question_answering":
        for ours, original in _ANSWER_CLASS_HEAD:
            table += _dense(f"answer_class_head/{ours}", original)
        table += [
            *_layer_norm("answer_class_head/end_logits_layer_norm", "end_logits/LayerNorm"),
            Entry("answer_class_head/answer_class_dense_1/kernel", "answer_class/dense_1/kernel"),
        ]
    elif kind not in (None, "backbone"):
        raise ValueError(
            "`kind` must be None, 'backbone', 'pretrainer', 'classification', 'multiple_choice' "
            f"or 'question_answering' (the original code's heads). Received: kind={kind!r}"
        )
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


def tf1_head(tensors) -> tuple[str, str | None]:
    """The kind of model a checkpoint's heads make ("backbone" when it has none), and the
    question-answering head's answerability ("null_span": `run_squad_v1`, "answer_class":
    `run_squad_v2`; None for the other kinds). `run_race`'s head reads as "classification"
    (the same names)."""
    if "cls/predictions/output_bias" in tensors:
        return "pretrainer", None
    if "output_weights" in tensors:
        return "classification", None
    if "cls/squad/output_weights" in tensors:
        return "question_answering", "null_span"
    if "answer_class/dense_1/kernel" in tensors:
        return "question_answering", "answer_class"
    return "backbone", None


def load_tf1_weights(model, tensors) -> None:
    """Fills an `AlbertBackbone`, `AlbertPretrainer`, `AlbertClassifier` or
    `AlbertQuestionAnswerer` or `AlbertMultipleChoice` (`run_race`) from TF1 tensors."""
    if isinstance(model, AlbertTokenClassifier):
        raise ValueError(
            "The original ALBERT code has no token classification head; load a backbone from "
            "the TF1 checkpoint and build an AlbertTokenClassifier on it."
        )
    answerability = "null_span"
    if isinstance(model, AlbertPretrainer):
        kind, config = "pretrainer", model.backbone.albert_config
    elif isinstance(model, (AlbertClassifier, AlbertMultipleChoice)):
        kind, config = "classification", model.backbone.albert_config
    elif isinstance(model, AlbertQuestionAnswerer):
        kind, answerability = "question_answering", model.answerability
        config = model.backbone.albert_config
    elif isinstance(model, AlbertBackbone):
        kind, config = None, model.albert_config
    else:
        raise ValueError(
            "`model` must be an AlbertBackbone, AlbertPretrainer or AlbertClassifier. "
            f"Received: model={type(model).__name__}"
        )
    ignore = list(TF1_IGNORE_PATTERNS)
    if kind is None:
        # A backbone may be loaded from any checkpoint: the heads are deliberately left out.
        ignore += [
            r"^cls/",
            r"^output_(weights|bias)$",
            r"^(start_logits|end_logits|answer_class)/",
        ]
    assign_from_table(
        model.weights,
        tf1_name_table(config, kind, answerability),
        tensors,
        ignore_patterns=ignore,
        source_description="TF1 ALBERT checkpoint",
    )
