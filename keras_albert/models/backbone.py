"""`AlbertBackbone`: factorized embedding → shared transformer blocks → pooler."""

import contextlib

import keras

from keras_albert.config import AlbertConfig, get_preset
from keras_albert.layers import (
    FactorizedEmbedding,
    FeedForward,
    SelfAttention,
    TransformerEncoder,
)
from keras_albert.models.cast_once import cast_once
from keras_albert.models.functional import FunctionalModel
from keras_albert.validation import require_bool, require_int

# The layers `enable_lora` adapts by default: every weight matrix of the backbone, the V×E
# token table among them. ALBERT keeps most of its parameters in that table (68 % of the main
# job's model) and shares one block across depth, so adapters on the query and value
# projections alone (LoRA's paper, keras-hub's default) are few and leave the words' meanings
# frozen; on the main job's SST-2 setup they fall 20 points short of full fine-tuning, these
# come within noise of it (docs/guides/backends.md#6-lora).
LORA_LAYER_NAMES = (
    "token_embedding",
    "projection",
    "query",
    "key",
    "value",
    "output",
    "intermediate",
    "pooler",
)
# Every dense and embedding layer of a backbone, by name: what `enable_lora` can adapt.
ADAPTABLE_LAYER_NAMES = (*LORA_LAYER_NAMES, "segment_embedding")


@keras.saving.register_keras_serializable(package="keras_albert")
class AlbertBackbone(FunctionalModel):
    """The ALBERT encoder network (Lan et al., 2020, "ALBERT: A Lite BERT", arXiv:1909.11942).

    Token ids become E-wide factorized embeddings projected to H, then `num_layers`
    applications of transformer blocks whose weights are shared across depth, then a tanh
    pooler on the first ([CLS]) token. With the default `sharing="all"` and one group there
    is ONE `TransformerEncoder` object, called `num_layers` times, so the parameter count
    does not depend on `num_layers`. Groups generalize this as the original does: layer i
    runs the `num_inner_repetitions` blocks of group `i * num_groups // num_layers` in turn.
    `sharing` reproduces the paper's ablation (Table 4): "attention" shares only the
    attention halves, "ffn" only the feed-forward halves, "none" is BERT.

    Inputs: `token_ids`, `segment_ids` and `padding_mask` (1 = real token), each
    `(batch, seq)` int32. Outputs: a dict with `sequence_output` `(batch, seq, H)` and
    `pooled_output` `(batch, H)`, plus `encoder_layer_outputs` (a list of `num_layers`
    `(batch, seq, H)` tensors, the output of every layer) when `output_all_layers=True`.
    Under a mixed-precision policy the outputs have the compute dtype (e.g. float16);
    LayerNorm and softmax are computed in float32 regardless, and the shared blocks' float32
    weights are cast to the compute dtype once a call, not once a pass (`cast_once`; a model
    built on `backbone.output` runs the layers without the backbone's `call`, and casts per
    pass). `dtype_policy` reads back the policy given (Keras's functional `Model` would report
    float32 and `get_config` would save float32), so task heads built on
    `backbone.dtype_policy` share it.

    With `remat=True` every application of an encoder layer (the shared block, each time) is
    rematerialized in training: the backward pass recomputes its activations from its input
    instead of keeping them, so a step keeps one `(batch, seq, H)` input per application and
    not every intermediate of all `num_layers`, at the cost of a second forward pass through
    the blocks. The gradients are the same, dropout included (`keras_albert.layers.remat`);
    inference and exports are unaffected.

    Depth-elastic: with `sharing="all"`, `at_depth(k)` is the same weights applied `k`
    times instead of `num_layers` (a backbone configured with `num_layers=k`; with groups,
    layer i of k runs group `i * num_groups // k`, so every group is still used in order,
    each `k / num_groups` times, and `k` must be a multiple of `num_groups`).
    `encoder_steps_at_depth(k)` lists the shared blocks that depth applies, in order.

    Args:
        All fields of `keras_albert.AlbertConfig` (vocabulary_size, embedding_dim,
        hidden_dim, intermediate_dim, num_layers, num_heads, num_groups,
        num_inner_repetitions, max_sequence_length, num_segments, dropout,
        attention_dropout, activation, initializer_range, layer_norm_epsilon, sharing),
        validated by it.
        output_all_layers: bool, also output every layer's sequence output.
        remat: bool, rematerialize (gradient checkpointing) every application of an encoder
            layer in training.
        dtype: a dtype or `keras.DTypePolicy` for the whole model.

    Example:
    >>> import numpy as np
    >>> from keras_albert import AlbertBackbone
    >>> backbone = AlbertBackbone(vocabulary_size=64, embedding_dim=8, hidden_dim=16,
    ...                           intermediate_dim=32, num_layers=3, num_heads=2)
    >>> ids = np.array([[2, 10, 11, 3, 0]])
    >>> outputs = backbone({"token_ids": ids, "segment_ids": np.zeros_like(ids),
    ...                     "padding_mask": (ids != 0).astype("int32")})
    >>> tuple(outputs["pooled_output"].shape)
    (1, 16)
    """

    def __init__(
        self,
        vocabulary_size,
        embedding_dim,
        hidden_dim,
        intermediate_dim,
        num_layers,
        num_heads,
        num_groups=1,
        num_inner_repetitions=1,
        max_sequence_length=512,
        num_segments=2,
        dropout=0.0,
        attention_dropout=None,
        activation="gelu_approximate",
        initializer_range=0.02,
        layer_norm_epsilon=1e-12,
        sharing="all",
        output_all_layers=False,
        remat=False,
        dtype=None,
        **kwargs,
    ):
        require_bool("remat", remat)
        config = AlbertConfig(
            vocabulary_size=vocabulary_size,
            embedding_dim=embedding_dim,
            hidden_dim=hidden_dim,
            intermediate_dim=intermediate_dim,
            num_layers=num_layers,
            num_heads=num_heads,
            num_groups=num_groups,
            num_inner_repetitions=num_inner_repetitions,
            max_sequence_length=max_sequence_length,
            num_segments=num_segments,
            dropout=dropout,
            attention_dropout=dropout if attention_dropout is None else attention_dropout,
            activation=activation,
            initializer_range=initializer_range,
            layer_norm_epsilon=layer_norm_epsilon,
            sharing=sharing,
        )

        # === Layers ===
        self.embedding = FactorizedEmbedding(
            vocabulary_size=config.vocabulary_size,
            embedding_dim=config.embedding_dim,
            hidden_dim=config.hidden_dim,
            max_sequence_length=config.max_sequence_length,
            num_segments=config.num_segments,
            dropout=config.dropout,
            layer_norm_epsilon=config.layer_norm_epsilon,
            initializer_range=config.initializer_range,
            dtype=dtype,
            name="embedding",
        )
        # One entry per application, in order. The same object appearing at several depths IS
        # the weight sharing; `encoder_layers` lists the distinct objects.
        self.encoder_steps = _encoder_steps(config, dtype, remat)
        self.pooler = keras.layers.Dense(
            config.hidden_dim,
            activation="tanh",
            kernel_initializer=keras.initializers.TruncatedNormal(stddev=config.initializer_range),
            dtype=dtype,
            name="pooler",
        )

        # === Functional model ===
        token_ids = keras.Input(shape=(None,), dtype="int32", name="token_ids")
        segment_ids = keras.Input(shape=(None,), dtype="int32", name="segment_ids")
        padding_mask = keras.Input(shape=(None,), dtype="int32", name="padding_mask")

        x = self.embedding(token_ids, segment_ids)  # (batch, seq, H)
        layer_outputs = []
        for layer_steps in _group_by_layer(self.encoder_steps, config):
            for step in layer_steps:
                if isinstance(step, TransformerEncoder):
                    x = step(x, padding_mask=padding_mask)
                else:
                    attention, feedforward = step
                    x = feedforward(attention(x, padding_mask=padding_mask))
            layer_outputs.append(x)
        outputs = {"sequence_output": x, "pooled_output": self.pooler(x[:, 0, :])}
        if output_all_layers:
            outputs["encoder_layer_outputs"] = layer_outputs

        super().__init__(
            inputs={
                "token_ids": token_ids,
                "segment_ids": segment_ids,
                "padding_mask": padding_mask,
            },
            outputs=outputs,
            dtype=dtype,
            **kwargs,
        )
        if dtype is not None:
            # The functional Model drops `dtype`: without this the policy reads back float32,
            # `get_config` saves float32 and a reloaded mixed-precision backbone is float32.
            self.dtype_policy = dtype
        self.albert_config = config
        self.output_all_layers = output_all_layers
        self.remat = remat

    def call(self, inputs, training=None, mask=None, **kwargs):
        if self.compute_dtype == self.variable_dtype:  # float32, or served in bfloat16
            return super().call(inputs, training=training, mask=mask, **kwargs)
        # The shared blocks' (and, with sharing="attention" or "ffn", the unshared halves'),
        # each cast once here for all the passes that read it.
        weights = [weight for layer in self.encoder_layers for weight in layer.weights]
        with cast_once(weights, self.compute_dtype):
            return super().call(inputs, training=training, mask=mask, **kwargs)

    def enable_lora(self, rank: int, target_layer_names=None) -> None:
        """LoRA (Hu et al., 2021, arXiv:2106.09685) through Keras's own `enable_lora` of the
        `Dense` and `Embedding` layers named in `target_layer_names` (every layer of that
        name: "output" is the attention's and the feed-forward's). None (the default): every
        weight matrix of the backbone (`LORA_LAYER_NAMES`: the token table, its projection, the
        attention's four projections, the feed-forward's two and the pooler);
        `("query", "value")` is keras-hub's `Backbone.enable_lora`. Every other weight of the
        backbone is frozen, so that only the adapters (rank `rank`, shared across depth as the
        blocks are; with the adapted dense layers' biases) and a task head built on the
        backbone train. A saved model (`.keras`, `.weights.h5`) carries the adapters merged
        into their weights (`kernel + A·B·alpha/rank`) and loads as a plain backbone;
        `keras_albert.models.lora.merged_lora` merges them in memory."""
        require_int("rank", rank, 1)
        if target_layer_names is None:
            target_layer_names = LORA_LAYER_NAMES
        layers = self._flatten_layers(include_self=False)
        adaptable = [
            layer
            for layer in layers
            if isinstance(layer, (keras.layers.Dense, keras.layers.Embedding))
        ]
        names = sorted({layer.name for layer in adaptable})
        unknown = [name for name in target_layer_names if name not in names]
        if isinstance(target_layer_names, str) or not target_layer_names or unknown:
            raise ValueError(
                f"`target_layer_names` must name dense or embedding layers of the backbone "
                f"({', '.join(names)}). Received: target_layer_names={target_layer_names!r}"
            )
        self.trainable = True
        for layer in layers:
            layer.trainable = False
        for layer in adaptable:
            if layer.name in target_layer_names:
                layer.trainable = True
                layer.enable_lora(rank)

    @property
    def token_embedding(self):
        """The `keras.layers.Embedding` holding the V×E table (tied to the MLM head)."""
        return self.embedding.token_embedding

    @property
    def encoder_layers(self):
        """The distinct transformer layers (blocks or halves), each listed once."""
        distinct = []
        for step in self.encoder_steps:
            for layer in step if isinstance(step, tuple) else (step,):
                if not any(layer is seen for seen in distinct):
                    distinct.append(layer)
        return distinct

    def check_depth(self, num_layers: int) -> None:
        """Raises a ValueError unless `num_layers` is a depth `at_depth` can run."""
        config = self.albert_config
        require_int("num_layers", num_layers, 1)
        if num_layers > config.num_layers:
            raise ValueError(
                f"`num_layers` must be at most the trained depth num_layers={config.num_layers}. "
                f"Received: num_layers={num_layers}"
            )
        if config.sharing != "all":
            raise ValueError(
                "`num_layers` other than the trained depth needs weights shared across depth "
                f"(sharing='all'); this backbone has sharing={config.sharing!r}. "
                f"Received: num_layers={num_layers}"
            )
        if num_layers % config.num_groups:
            raise ValueError(
                f"`num_layers` must be a multiple of num_groups={config.num_groups} (every "
                f"group runs the same number of times). Received: num_layers={num_layers}"
            )

    def encoder_steps_at_depth(self, num_layers: int) -> list:
        """The shared blocks `num_layers` passes apply, in order (the objects, not copies)."""
        self.check_depth(num_layers)
        config = self.albert_config
        repetitions = config.num_inner_repetitions
        blocks = self.encoder_layers  # group_0_inner_0, group_0_inner_1, ..., group_1_inner_0
        groups = [blocks[g * repetitions : (g + 1) * repetitions] for g in range(config.num_groups)]
        return [
            block
            for i in range(num_layers)
            for block in groups[i * config.num_groups // num_layers]
        ]

    def at_depth(self, num_layers: int) -> "AlbertBackbone":
        """A new backbone holding a copy of these weights, applied `num_layers` times.

        Same architecture but `num_layers` (see the class docstring for groups); the
        parameter count does not depend on the depth, so every weight carries over.
        """
        self.check_depth(num_layers)
        return self._copy(num_layers=num_layers, name=f"{self.name}_depth_{num_layers}")

    @classmethod
    def from_albert_config(cls, config: AlbertConfig, **kwargs) -> "AlbertBackbone":
        """A randomly initialized backbone with the architecture `config`."""
        return cls(**config.to_dict(), **kwargs)

    @classmethod
    def from_preset(cls, source, **kwargs) -> "AlbertBackbone":
        """The backbone of `source` (anything `keras_albert.load_checkpoint` reads: a run
        directory, a `.keras` file, a Hugging Face directory, an original TF1 release, a
        keras-hub preset, a TF-Hub encoder, a preset name), with its weights; see
        `keras_albert.convert.presets.from_preset`."""
        from keras_albert.models.task import load_preset

        return load_preset(cls, source, **kwargs)

    @classmethod
    def from_preset_name(cls, name: str, **kwargs) -> "AlbertBackbone":
        """A randomly initialized backbone of a released architecture, e.g. "albert_base_v2"."""
        return cls.from_albert_config(get_preset(name), **kwargs)

    def with_dtype_policy(self, dtype) -> "AlbertBackbone":
        """This backbone under the dtype policy `dtype` (e.g. `"mixed_bfloat16"` to train in
        bfloat16): itself when it already has it, else a copy with the same weights (rounded
        where the new policy stores variables in fewer bits)."""
        policy = keras.DTypePolicy(dtype) if isinstance(dtype, str) else dtype
        if policy.name == self.dtype_policy.name:
            return self
        return self._copy(dtype=policy)

    def with_remat(self, remat: bool) -> "AlbertBackbone":
        """This backbone with `remat` (see the class docstring): itself when it already has
        it, else a copy with the same weights."""
        require_bool("remat", remat)
        return self if remat == self.remat else self._copy(remat=remat)

    def _copy(self, **changes) -> "AlbertBackbone":
        """A new backbone of this configuration with `changes`, holding a copy of these weights."""
        copy = type(self).from_config({**self.get_config(), **changes})
        copy.set_weights(self.get_weights())
        return copy

    def get_config(self):
        return {
            **self.albert_config.to_dict(),
            "output_all_layers": self.output_all_layers,
            "remat": self.remat,
            "name": self.name,
            "trainable": self.trainable,
            "dtype": keras.saving.serialize_keras_object(self.dtype_policy),
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if isinstance(config.get("dtype"), dict):
            config["dtype"] = keras.saving.deserialize_keras_object(config["dtype"])
        return cls(**config)


def block_name(group: int, inner: int) -> str:
    """The name of the shared block of `group` at inner repetition `inner` (`sharing="all"`),
    the first part of its weights' paths; the converters' name tables read it."""
    return f"group_{group}_inner_{inner}"


def shared_blocks(config: AlbertConfig) -> list[tuple[int, int, str]]:
    """(group, inner repetition, `block_name`) of every shared block, groups first."""
    return [
        (group, inner, block_name(group, inner))
        for group in range(config.num_groups)
        for inner in range(config.num_inner_repetitions)
    ]


def _encoder_steps(config: AlbertConfig, dtype, remat: bool) -> list:
    """The block (or (attention, feed-forward) pair) applied at each step, in order; with
    `remat`, each marked for `keras.RematScope` (by its name: not its sublayers, whose
    recomputation would nest in the block's)."""

    common = dict(
        dropout=config.dropout,
        layer_norm_epsilon=config.layer_norm_epsilon,
        initializer_range=config.initializer_range,
        dtype=dtype,
    )
    attention_arguments = dict(
        num_heads=config.num_heads, attention_dropout=config.attention_dropout
    )
    feedforward_arguments = dict(
        intermediate_dim=config.intermediate_dim, activation=config.activation
    )

    def marked(name):
        if not remat:
            return contextlib.nullcontext()
        return keras.RematScope(mode="list_of_layers", layer_names=[name])

    def block(name):
        with marked(name):
            return TransformerEncoder(
                **attention_arguments, **feedforward_arguments, **common, name=name
            )

    def attention(name):
        with marked(name):
            return SelfAttention(**attention_arguments, **common, name=name)

    def feedforward(name):
        with marked(name):
            return FeedForward(**feedforward_arguments, **common, name=name)

    num_layers = config.num_layers
    if config.sharing == "all":
        groups = [
            [block(block_name(g, r)) for r in range(config.num_inner_repetitions)]
            for g in range(config.num_groups)
        ]
        # Same rule as the original: layer i runs group int(i / num_layers * num_groups).
        return [
            inner
            for i in range(num_layers)
            for inner in groups[i * config.num_groups // num_layers]
        ]
    if config.sharing == "none":
        return [block(f"layer_{i}") for i in range(num_layers)]
    if config.sharing == "attention":
        shared = attention("shared_attention")
        return [(shared, feedforward(f"layer_{i}_feedforward")) for i in range(num_layers)]
    shared = feedforward("shared_feedforward")  # sharing == "ffn"
    return [(attention(f"layer_{i}_attention"), shared) for i in range(num_layers)]


def _group_by_layer(steps: list, config: AlbertConfig) -> list:
    """Splits the steps into `num_layers` consecutive lists (inner repetitions per layer)."""
    per_layer = len(steps) // config.num_layers
    return [steps[i * per_layer : (i + 1) * per_layer] for i in range(config.num_layers)]
