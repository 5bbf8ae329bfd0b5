"""Checkpoints in and out: one resolver for every source, converters with declarative tables."""

from keras_albert.convert.checkpoints import save_checkpoint
from keras_albert.convert.formats import (
    ACCEPTED_FORMS,
    FORMATS,
    CheckpointNotFoundError,
    detect_format,
)
from keras_albert.convert.presets import from_preset, load_tokenizer
from keras_albert.convert.resolve import (
    CorruptCheckpointError,
    load_checkpoint,
    resolve_config,
)
from keras_albert.convert.vocabulary import (
    find_sentencepiece_model,
    find_vocabulary,
    require_vocabulary,
    resolve_normalization,
)
from keras_albert.tasks.registry import MODEL_KINDS

__all__ = [
    "ACCEPTED_FORMS",
    "FORMATS",
    "MODEL_KINDS",
    "CheckpointNotFoundError",
    "CorruptCheckpointError",
    "detect_format",
    "find_sentencepiece_model",
    "find_vocabulary",
    "from_preset",
    "load_tokenizer",
    "require_vocabulary",
    "load_checkpoint",
    "resolve_config",
    "resolve_normalization",
    "save_checkpoint",
]
