"""TF2 encoder SavedModels in the TF-Hub / Kaggle interface: Model Garden's `AlbertEncoder`
exports, and our own (`keras_albert.export.tfhub`), read into an `AlbertBackbone` (or an
`AlbertPretrainer` when the SavedModel has the `.mlm` sub-object).

The weights are read by variable name (a SavedModel keeps each variable's name) through one of
two declarative tables and the shared checker (`name_table.assign_from_table`):

- Model Garden's (`official/nlp/modeling/networks/albert_encoder.py` and its layers):
  `word_embeddings/embeddings`, `position_embedding/embeddings`, `type_embeddings/embeddings`,
  `embeddings/layer_norm/*`, `embedding_projection/*` (absent when E = H: the identity),
  `transformer/self_attention/{query,key,value,attention_output}/*` (EinsumDense kernels
  `(H, heads, head_dim)`, reshaped to our `(H, H)`), `transformer/self_attention_layer_norm`,
  `transformer/{intermediate,output}/*`, `transformer/output_layer_norm/*`,
  `pooler_transform/*`; with `.mlm`, BertPretrainerV2's `cls/predictions/transform/dense/*`,
  `cls/predictions/transform/LayerNorm/*` and `cls/predictions/output_bias/bias`.
- ours: the variables are named by our weight paths, and `assets/albert_config.json` holds the
  architecture.

Model Garden's SavedModels do not write the architecture: it is read off the tensor shapes,
`num_layers` off the length of `encoder_outputs` of one call, and the activation is assumed to
be the tanh-approximated GELU of Model Garden's `activations.gelu` (the original ALBERT's);
`config=` overrides all of it. The sentence-order head is not in the interface: a pretrainer
read from `.mlm` gets a fresh one. Object-based TF2 *checkpoints* of a Model Garden encoder
(whose keys are tf_keras object paths, not variable names) are not read.
"""

from __future__ import annotations

import os

import numpy as np

from keras_albert.config import AlbertConfig
from keras_albert.convert.name_table import Entry, assign_from_table
from keras_albert.lazy import require_tensorflow
from keras_albert.models import AlbertBackbone, AlbertPretrainer

CONFIG_ASSET = "albert_config.json"  # our export's architecture, in assets/
SAVED_MODEL_FILE = "saved_model.pb"
# What a TF-Hub SavedModel needs TensorFlow for, in the one line said without it.
TFHUB_FEATURE = "load_checkpoint of a TF-Hub SavedModel"
# Model Garden's BERT exports keep `do_lower_case` as a variable; it is no weight.
_IGNORED = (r"^do_lower_case$",)


def is_tfhub_saved_model(directory: str | os.PathLike) -> bool:
    """A TF2 SavedModel directory (not a TF1 Hub module, which has `tfhub_module.pb`)."""
    directory = os.fspath(directory)
    return os.path.isfile(os.path.join(directory, SAVED_MODEL_FILE)) and not os.path.isfile(
        os.path.join(directory, "tfhub_module.pb")
    )


def _tensors(holder) -> dict[str, np.ndarray]:
    return {variable.name.rsplit(":", 1)[0]: variable.numpy() for variable in holder.variables}


def _is_ours(tensors: dict) -> bool:
    return "embedding/token_embedding/embeddings" in tensors


def _num_passes(loaded) -> int:
    """How many times the encoder applies its shared block: one call, counted."""
    tf = require_tensorflow(TFHUB_FEATURE)
    ids = tf.constant([[2, 3]], tf.int32)
    inputs = {"input_word_ids": ids, "input_mask": tf.ones_like(ids), "input_type_ids": ids * 0}
    return len(loaded(inputs)["encoder_outputs"])


def _inferred_config(tensors: dict, num_layers: int) -> AlbertConfig:
    vocabulary_size, embedding_dim = tensors["word_embeddings/embeddings"].shape
    hidden_dim, num_heads, _ = tensors["transformer/self_attention/query/kernel"].shape
    return AlbertConfig(
        vocabulary_size=int(vocabulary_size),
        embedding_dim=int(embedding_dim),
        hidden_dim=int(hidden_dim),
        intermediate_dim=int(tensors["transformer/intermediate/kernel"].shape[1]),
        num_layers=num_layers,
        num_heads=int(num_heads),
        max_sequence_length=int(tensors["position_embedding/embeddings"].shape[0]),
        num_segments=int(tensors["type_embeddings/embeddings"].shape[0]),
        activation="gelu_approximate",
    )


def tfhub_saved_model_config(directory: str | os.PathLike) -> AlbertConfig:
    """The architecture of an encoder SavedModel (see the module docstring)."""
    directory = os.fspath(directory)
    recorded = os.path.join(directory, "assets", CONFIG_ASSET)
    if os.path.isfile(recorded):
        return AlbertConfig.from_json(recorded)
    loaded = require_tensorflow(TFHUB_FEATURE).saved_model.load(directory)
    tensors = _tensors(loaded)
    if _is_ours(tensors):
        raise ValueError(
            f"`config` must be given for {directory!r}: a keras_albert encoder SavedModel "
            f"without assets/{CONFIG_ASSET}. Received: config=None"
        )
    return _inferred_config(tensors, _num_passes(loaded))


def model_garden_table(config: AlbertConfig, with_mlm: bool) -> list[Entry]:
    """Our weight paths ← Model Garden's variable names (one shared block, `sharing="all"`,
    one group: the only layout `AlbertEncoder` has)."""
    hidden, heads = config.hidden_dim, config.num_heads
    head_dim = hidden // heads
    block = "group_0_inner_0"
    source = "transformer/self_attention"
    table = [
        Entry("embedding/token_embedding/embeddings", "word_embeddings/embeddings"),
        Entry("embedding/position_embeddings", "position_embedding/embeddings"),
        Entry("embedding/segment_embedding/embeddings", "type_embeddings/embeddings"),
        Entry("embedding/layer_norm/gamma", "embeddings/layer_norm/gamma"),
        Entry("embedding/layer_norm/beta", "embeddings/layer_norm/beta"),
        Entry("embedding/projection/kernel", "embedding_projection/kernel"),
        Entry("embedding/projection/bias", "embedding_projection/bias"),
    ]
    for ours in ("query", "key", "value"):
        table += [
            Entry(
                f"{block}/attention/{ours}/kernel",
                f"{source}/{ours}/kernel",
                source_shape=(hidden, heads, head_dim),
            ),
            Entry(
                f"{block}/attention/{ours}/bias",
                f"{source}/{ours}/bias",
                source_shape=(heads, head_dim),
            ),
        ]
    table += [
        Entry(
            f"{block}/attention/output/kernel",
            f"{source}/attention_output/kernel",
            source_shape=(heads, head_dim, hidden),
        ),
        Entry(f"{block}/attention/output/bias", f"{source}/attention_output/bias"),
        Entry(f"{block}/attention/layer_norm/gamma", f"{source}_layer_norm/gamma"),
        Entry(f"{block}/attention/layer_norm/beta", f"{source}_layer_norm/beta"),
        Entry(f"{block}/feedforward/intermediate/kernel", "transformer/intermediate/kernel"),
        Entry(f"{block}/feedforward/intermediate/bias", "transformer/intermediate/bias"),
        Entry(f"{block}/feedforward/output/kernel", "transformer/output/kernel"),
        Entry(f"{block}/feedforward/output/bias", "transformer/output/bias"),
        Entry(f"{block}/feedforward/layer_norm/gamma", "transformer/output_layer_norm/gamma"),
        Entry(f"{block}/feedforward/layer_norm/beta", "transformer/output_layer_norm/beta"),
        Entry("pooler/kernel", "pooler_transform/kernel"),
        Entry("pooler/bias", "pooler_transform/bias"),
    ]
    if with_mlm:
        head = "cls/predictions"
        table += [
            Entry("masked_lm_head/dense/kernel", f"{head}/transform/dense/kernel"),
            Entry("masked_lm_head/dense/bias", f"{head}/transform/dense/bias"),
            Entry("masked_lm_head/layer_norm/gamma", f"{head}/transform/LayerNorm/gamma"),
            Entry("masked_lm_head/layer_norm/beta", f"{head}/transform/LayerNorm/beta"),
            Entry("masked_lm_head/output_bias", f"{head}/output_bias/bias"),
        ]
    return table


def _own_table(weights) -> list[Entry]:
    # Our export names its variables by our weight paths (the tied embedding is listed once).
    return [Entry(path, path) for path in dict.fromkeys(variable.path for variable in weights)]


def load_tfhub_saved_model(directory: str | os.PathLike, kind: str | None = None, config=None):
    """An `AlbertBackbone` (or `AlbertPretrainer`, for a SavedModel with `.mlm` unless `kind`
    is "backbone") with the weights of the encoder SavedModel in `directory`.

    `config` (an `AlbertConfig`) overrides the architecture read off the SavedModel.
    """
    directory = os.fspath(directory)
    loaded = require_tensorflow(TFHUB_FEATURE).saved_model.load(directory)
    if not callable(loaded) or not hasattr(loaded, "variables"):
        raise ValueError(
            "`source` must be an encoder SavedModel in the TF-Hub interface (callable with "
            "input_word_ids, input_mask, input_type_ids; with `variables`), e.g. "
            f"<export>/encoder/. Received: source={directory!r}"
        )
    with_mlm = hasattr(loaded, "mlm") and kind != "backbone"
    tensors = _tensors(loaded.mlm if with_mlm else loaded)
    if config is None:
        config = tfhub_saved_model_config(directory)
    backbone = AlbertBackbone.from_albert_config(config)
    model = AlbertPretrainer(backbone) if with_mlm else backbone
    weights = backbone.weights + (model.masked_lm_head.weights if with_mlm else [])
    if _is_ours(tensors):
        table = _own_table(weights)
    else:
        table = model_garden_table(config, with_mlm)
        if "embedding_projection/kernel" not in tensors and config.embedding_dim == (
            config.hidden_dim
        ):
            # Model Garden projects E to H only when they differ: ours is then the identity.
            tensors["embedding_projection/kernel"] = np.eye(config.hidden_dim, dtype="float32")
            tensors["embedding_projection/bias"] = np.zeros(config.hidden_dim, dtype="float32")
    assign_from_table(
        weights,
        table,
        tensors,
        ignore_patterns=_IGNORED,
        source_description=f"TF-Hub encoder SavedModel {directory}",
    )
    return model
