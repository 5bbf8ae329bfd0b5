"""`AlbertConfig`: the architecture of an ALBERT model, its presets, and its JSON forms.

Three JSON dialects are read and written here and nowhere else:
- ours (`to_json`/`from_json`): the field names below;
- the original google-research/albert `albert_config.json` (`vocab_size`, `hidden_act`, ...);
- Hugging Face transformers' ALBERT `config.json`.
Stdlib only, so tools can read configs without importing TensorFlow.
"""

import dataclasses
import json
import os

from keras_albert.validation import (
    ACTIVATIONS,
    require_divisible,
    require_number,
    require_one_of,
    require_positive_int,
    require_rate,
)

SHARING_MODES = ("all", "attention", "ffn", "none")

# The original "gelu" is the tanh approximation; Hugging Face's "gelu" is the exact form and
# its "gelu_new" / "gelu_pytorch_tanh" are the approximation.
_ORIGINAL_ACTIVATIONS = {"gelu": "gelu_approximate", "relu": "relu", "tanh": "tanh"}
_HF_ACTIVATIONS = {
    "gelu_new": "gelu_approximate",
    "gelu_pytorch_tanh": "gelu_approximate",
    "gelu": "gelu",
    "relu": "relu",
    "tanh": "tanh",
    "silu": "silu",
    "swish": "silu",
}


@dataclasses.dataclass(frozen=True)
class AlbertConfig:
    """The architecture of an ALBERT model (Lan et al., 2020, arXiv:1909.11942).

    Args:
        vocabulary_size: V, rows of the token table.
        embedding_dim: E, width of the factorized embeddings (128 in every preset).
        hidden_dim: H, width of the transformer.
        intermediate_dim: inner width of the feed-forward layers.
        num_layers: depth: how many times a transformer block is applied.
        num_heads: attention heads; must divide `hidden_dim`.
        num_groups: distinct groups of blocks (original `num_hidden_groups`); layer i uses
            group `i * num_groups // num_layers`. Must divide `num_layers`.
        num_inner_repetitions: distinct blocks inside each group, applied in turn at every
            layer (original `inner_group_num`).
        max_sequence_length: rows of the position table.
        num_segments: rows of the segment table (original `type_vocab_size`).
        dropout: hidden dropout rate (original `hidden_dropout_prob`).
        attention_dropout: dropout on attention probabilities.
        activation: "gelu_approximate" (the original's "gelu"), "gelu" (exact), "relu",
            "tanh" or "silu".
        initializer_range: stddev of the truncated-normal initializer.
        layer_norm_epsilon: LayerNorm epsilon everywhere.
        sharing: which parts of a block are shared across depth: "all" (ALBERT), "attention"
            (attention shared, feed-forward per layer), "ffn" (the reverse) or "none" (BERT).
    """

    vocabulary_size: int = 30000
    embedding_dim: int = 128
    hidden_dim: int = 768
    intermediate_dim: int = 3072
    num_layers: int = 12
    num_heads: int = 12
    num_groups: int = 1
    num_inner_repetitions: int = 1
    max_sequence_length: int = 512
    num_segments: int = 2
    dropout: float = 0.0
    attention_dropout: float = 0.0
    activation: str = "gelu_approximate"
    initializer_range: float = 0.02
    layer_norm_epsilon: float = 1e-12
    sharing: str = "all"

    def __post_init__(self):
        for name in (
            "vocabulary_size",
            "embedding_dim",
            "hidden_dim",
            "intermediate_dim",
            "num_layers",
            "num_heads",
            "num_groups",
            "num_inner_repetitions",
            "max_sequence_length",
            "num_segments",
        ):
            require_positive_int(name, getattr(self, name))
        require_rate("dropout", self.dropout)
        require_rate("attention_dropout", self.attention_dropout)
        require_divisible("hidden_dim", self.hidden_dim, "num_heads", self.num_heads)
        require_divisible("num_layers", self.num_layers, "num_groups", self.num_groups)
        require_one_of("activation", self.activation, ACTIVATIONS)
        require_one_of("sharing", self.sharing, SHARING_MODES)
        # A number first: a string from a hand-edited JSON would fail the comparisons below
        # with a TypeError that names neither the field nor the file.
        require_number("initializer_range", self.initializer_range)
        require_number("layer_norm_epsilon", self.layer_norm_epsilon)
        if self.initializer_range <= 0:
            raise ValueError(
                f"`initializer_range` must be positive. Received: {self.initializer_range!r}"
            )
        if not 0 < self.layer_norm_epsilon < 1:
            raise ValueError(
                "`layer_norm_epsilon` must be in (0, 1). "
                f"Received: layer_norm_epsilon={self.layer_norm_epsilon!r}"
            )
        if self.sharing != "all" and (self.num_groups != 1 or self.num_inner_repetitions != 1):
            raise ValueError(
                "Groups and inner repetitions only apply to sharing='all'. Received: "
                f"sharing={self.sharing!r}, num_groups={self.num_groups}, "
                f"num_inner_repetitions={self.num_inner_repetitions}"
            )

    def replace(self, **changes) -> "AlbertConfig":
        """A copy with some fields changed (validated again)."""
        return dataclasses.replace(self, **changes)

    # Our own JSON.
    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, values: dict) -> "AlbertConfig":
        known = {field.name for field in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(
                f"Unknown AlbertConfig keys: {unknown}. Expected a subset of {sorted(known)}."
            )
        return cls(**values)

    def to_json(self, path: str | os.PathLike | None = None) -> str:
        text = json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"
        if path is not None:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        return text

    @classmethod
    def from_json(cls, path_or_text: str | os.PathLike) -> "AlbertConfig":
        """Reads our JSON, the original `albert_config.json` or a Hugging Face `config.json`.

        An error names the file (a field's wrong type or value, JSON that does not parse).
        """
        values = _read_json(path_or_text)
        try:
            if values.get("model_type") == "albert" or "architectures" in values:
                return cls.from_hf_config(values)
            if "vocab_size" in values:
                return cls.from_original_config(values)
            return cls.from_dict(values)
        # TypeError: e.g. a number where the dialect's code expects a string.
        except (ValueError, TypeError) as error:
            if _is_json_text(path_or_text):
                raise
            raise ValueError(f"{os.fspath(path_or_text)}: {error}") from None

    # google-research/albert `albert_config.json`.
    @classmethod
    def from_original_config(cls, values: dict) -> "AlbertConfig":
        return cls(
            **_fields_from_original(values, defaults=_ORIGINAL_DEFAULTS),
            activation=_activation(values, "gelu", _ORIGINAL_ACTIVATIONS, "albert_config.json"),
        )

    def to_original_config(self) -> dict:
        original_activation = {v: k for k, v in _ORIGINAL_ACTIVATIONS.items()}
        if self.activation not in original_activation:
            raise ValueError(
                f"activation={self.activation!r} has no name in the original albert_config.json "
                f"format (which knows {sorted(_ORIGINAL_ACTIVATIONS)})."
            )
        self._require_original_sharing("albert_config.json")
        return {**self._original_fields(), "hidden_act": original_activation[self.activation]}

    def _original_fields(self) -> dict:
        """The fields both foreign dialects spell the original way (all but the activation)."""
        return {theirs: getattr(self, ours) for ours, theirs in _ORIGINAL_KEYS.items()}

    # Hugging Face transformers `config.json` (model_type "albert").
    @classmethod
    def from_hf_config(cls, values: dict) -> "AlbertConfig":
        return cls(
            **_fields_from_original(values, defaults=_HF_DEFAULTS),
            activation=_activation(values, "gelu_new", _HF_ACTIVATIONS, "Hugging Face config.json"),
            layer_norm_epsilon=values.get("layer_norm_eps", 1e-12),
        )

    def to_hf_config(self) -> dict:
        hf_activation = {
            "gelu_approximate": "gelu_new",
            "gelu": "gelu",
            "relu": "relu",
            "tanh": "tanh",
            "silu": "silu",
        }
        self._require_original_sharing("Hugging Face config.json")
        return {
            "model_type": "albert",
            **self._original_fields(),
            "hidden_act": hf_activation[self.activation],
            "layer_norm_eps": self.layer_norm_epsilon,
            "pad_token_id": 0,
            "bos_token_id": 2,
            "eos_token_id": 3,
        }

    def _require_original_sharing(self, format_name: str) -> None:
        if self.sharing != "all":
            raise ValueError(
                f"{format_name} describes only fully shared blocks (sharing='all'). "
                f"Received: sharing={self.sharing!r}"
            )


# Our field ← the original's key, shared by albert_config.json and HF config.json.
_ORIGINAL_KEYS = {
    "vocabulary_size": "vocab_size",
    "embedding_dim": "embedding_size",
    "hidden_dim": "hidden_size",
    "intermediate_dim": "intermediate_size",
    "num_layers": "num_hidden_layers",
    "num_heads": "num_attention_heads",
    "num_groups": "num_hidden_groups",
    "num_inner_repetitions": "inner_group_num",
    "max_sequence_length": "max_position_embeddings",
    "num_segments": "type_vocab_size",
    "dropout": "hidden_dropout_prob",
    "attention_dropout": "attention_probs_dropout_prob",
    "initializer_range": "initializer_range",
}
# What a missing key means: the original requires the sizes; HF defaults to xxlarge.
_ORIGINAL_DEFAULTS = {
    "embedding_size": 128,
    "num_hidden_groups": 1,
    "inner_group_num": 1,
    "max_position_embeddings": 512,
    "type_vocab_size": 2,
    "hidden_dropout_prob": 0.0,
    "attention_probs_dropout_prob": 0.0,
    "initializer_range": 0.02,
}
_HF_DEFAULTS = {
    **_ORIGINAL_DEFAULTS,
    "vocab_size": 30000,
    "hidden_size": 4096,
    "intermediate_size": 16384,
    "num_hidden_layers": 12,
    "num_attention_heads": 64,
}


def _activation(values: dict, default: str, names: dict, format_name: str) -> str:
    """Our activation name for a foreign config's `hidden_act`."""
    hidden_act = values.get("hidden_act", default)
    if hidden_act not in names:
        raise ValueError(
            f"Unsupported hidden_act={hidden_act!r} in {format_name}. "
            f"Expected one of {sorted(names)}."
        )
    return names[hidden_act]


def _fields_from_original(values: dict, defaults: dict) -> dict:
    missing = [k for k in _ORIGINAL_KEYS.values() if k not in values and k not in defaults]
    if missing:
        raise ValueError(f"The ALBERT config lacks required keys {missing}. Received: {values}")
    return {
        ours: values.get(theirs, defaults.get(theirs)) for ours, theirs in _ORIGINAL_KEYS.items()
    }


def _is_json_text(path_or_text) -> bool:
    return str(path_or_text).lstrip().startswith("{")


def _read_json(path_or_text) -> dict:
    text, where = str(path_or_text), "the text"
    if not _is_json_text(path_or_text):
        with open(path_or_text, encoding="utf-8") as f:
            text, where = f.read(), os.fspath(path_or_text)
    try:
        values = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"An ALBERT config must be JSON: {where} is not ({error}).") from None
    if not isinstance(values, dict):
        raise ValueError(f"Expected a JSON object for an ALBERT config. Received: {text[:200]!r}")
    return values


def _preset(hidden_dim, num_layers, num_heads, dropout):
    return AlbertConfig(
        hidden_dim=hidden_dim,
        intermediate_dim=4 * hidden_dim,
        num_layers=num_layers,
        num_heads=num_heads,
        dropout=dropout,
        attention_dropout=dropout,
    )


# The released models (google-research/albert, v1 and v2). v2 trains without dropout;
# xxlarge v1 already had none.
PRESETS = {
    "albert_base_v1": _preset(768, 12, 12, 0.1),
    "albert_base_v2": _preset(768, 12, 12, 0.0),
    "albert_large_v1": _preset(1024, 24, 16, 0.1),
    "albert_large_v2": _preset(1024, 24, 16, 0.0),
    "albert_xlarge_v1": _preset(2048, 24, 16, 0.1),
    "albert_xlarge_v2": _preset(2048, 24, 16, 0.0),
    "albert_xxlarge_v1": _preset(4096, 12, 64, 0.0),
    "albert_xxlarge_v2": _preset(4096, 12, 64, 0.0),
}


def get_preset(name: str) -> AlbertConfig:
    """The `AlbertConfig` of a released model, e.g. `get_preset("albert_base_v2")`."""
    require_one_of("preset", name, tuple(PRESETS))
    return PRESETS[name]
