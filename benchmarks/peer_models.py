"""The keras-hub and Hugging Face peers of the speed benchmarks, built to an `AlbertConfig` in
a precision (Model Garden's are in `model_garden.py`)."""

import contextlib

import keras_hub
import torch

from keras_albert.config import AlbertConfig


def keras_hub_backbone(config: AlbertConfig, precision: str) -> keras_hub.models.AlbertBackbone:
    """keras-hub's `AlbertBackbone` of `config`'s dimensions, dropout off, under the Keras dtype
    policy `precision`."""
    return keras_hub.models.AlbertBackbone(
        vocabulary_size=config.vocabulary_size,
        num_layers=config.num_layers,
        num_heads=config.num_heads,
        embedding_dim=config.embedding_dim,
        hidden_dim=config.hidden_dim,
        intermediate_dim=config.intermediate_dim,
        max_sequence_length=config.max_sequence_length,
        dropout=0.0,
        dtype=precision,
    )


def torch_autocast(precision: str):
    """The context HF runs in for `precision`: `torch.autocast` to bfloat16 on the CPU for
    "mixed_bfloat16" (PyTorch's mixed precision), nothing for "float32"."""
    if precision == "mixed_bfloat16":
        return torch.autocast("cpu", dtype=torch.bfloat16)
    return contextlib.nullcontext()
