"""keras_albert: ALBERT (Lan et al., 2020, arXiv:1909.11942) for Keras 3: the models on every
Keras backend (TensorFlow, JAX, PyTorch); the tokenizer, the data pipelines, the training loop
and the exports on TensorFlow."""

# First: TensorFlow without its start-up log lines (KERAS_ALBERT_VERBOSE=1 shows them), where
# it is the backend.
from keras_albert import _startup  # noqa: F401  isort: skip

from keras_albert.config import PRESETS, AlbertConfig, get_preset
from keras_albert.convert import load_checkpoint, save_checkpoint
from keras_albert.lazy import import_public
from keras_albert.models import (
    AlbertBackbone,
    AlbertClassifier,
    AlbertMaskedLM,
    AlbertMultipleChoice,
    AlbertPretrainer,
    AlbertQuestionAnswerer,
    AlbertTokenClassifier,
)
from keras_albert.tasks.registry import TASK_TYPES, get_task_type

# Registers what a saved training output refers to (Lamb, its schedule, the MLM loss) with
# Keras, so that `keras.models.load_model` needs nothing but `import keras_albert`. Keras finds
# them by their registered names (`keras_albert>MaskedLMLoss`), not by the module a file
# records, so files saved before a module moved still load.
from keras_albert.pretraining import losses as _losses  # noqa: F401  isort: skip
from keras_albert.training import clipping as _clipping  # noqa: F401  isort: skip
from keras_albert.training import lamb as _lamb  # noqa: F401  isort: skip
from keras_albert.training import schedule as _schedule  # noqa: F401  isort: skip

__version__ = "0.1.0"

# Imported when first used: fine-tuning's names, so that pretraining, export and conversion
# never load the driver or a task type's data code (`keras_albert.finetuning`,
# `TaskType.finetuning_task`); the tokenizer's, which need TensorFlow (TF Text graph ops), so
# that the models, configs and converters import without it.
_LAZY = {
    "FinetuningOptions": "finetuning",
    "finetune": "finetuning",
    "FinetuningTask": "tasks.finetuning_task",
    "AlbertPacker": "text.packing",
    "AlbertTokenizer": "text.tokenizer",
}


def __getattr__(name: str):
    if name in _LAZY:
        return import_public(__name__, _LAZY[name], name)
    raise AttributeError(f"module 'keras_albert' has no attribute {name!r}")


__all__ = [
    "PRESETS",
    "TASK_TYPES",
    "AlbertBackbone",
    "AlbertClassifier",
    "AlbertConfig",
    "AlbertMaskedLM",
    "AlbertMultipleChoice",
    "AlbertPacker",
    "AlbertPretrainer",
    "AlbertQuestionAnswerer",
    "AlbertTokenClassifier",
    "AlbertTokenizer",
    "FinetuningOptions",
    "FinetuningTask",
    "finetune",
    "get_preset",
    "load_checkpoint",
    "get_task_type",
    "save_checkpoint",
]
