"""Checkpoints in and out: one resolver for every source, converters with declarative tables."""

from keras_albert.convert.checkpoints import save_checkpoint
from keras_albert.convert.resolve import (
    ACCEPTED_FORMS,
    FORMATS,
    MODEL_KINDS,
    CheckpointNotFoundError,
    CorruptCheckpointError,
    detect_format,
    find_sentencepiece_model,
    load_checkpoint,
    resolve_config,
)

__all__ = [
    "ACCEPTED_FORMS",
    "FORMATS",
    "MODEL_KINDS",
    "CheckpointNotFoundError",
    "CorruptCheckpointError",
    "detect_format",
    "find_sentencepiece_model",
    "load_checkpoint",
    "resolve_config",
    "save_checkpoint",
]
