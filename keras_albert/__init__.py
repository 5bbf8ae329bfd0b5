"""keras_albert: ALBERT (Lan et al., 2020, arXiv:1909.11942) for Keras 3 on TensorFlow."""

# First: TensorFlow without its start-up log lines (KERAS_ALBERT_VERBOSE=1 shows them).
from keras_albert import _startup  # noqa: F401  isort: skip

from keras_albert.config import PRESETS, AlbertConfig, get_preset
from keras_albert.convert import load_checkpoint, save_checkpoint
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
from keras_albert.text.packing import AlbertPacker
from keras_albert.text.tokenizer import AlbertTokenizer

# Registers what a saved training output refers to (Lamb, its schedule, the MLM loss) with
# Keras, so that `keras.models.load_model` needs nothing but `import keras_albert`. Keras finds
# them by their registered names (`keras_albert>MaskedLMLoss`), not by the module a file
# records, so files saved before a module moved still load.
from keras_albert.pretraining import losses as _losses  # noqa: F401  isort: skip
from keras_albert.training import clipping as _clipping  # noqa: F401  isort: skip
from keras_albert.training import lamb as _lamb  # noqa: F401  isort: skip
from keras_albert.training import schedule as _schedule  # noqa: F401  isort: skip

__version__ = "0.1.0"

# Fine-tuning's names, imported when first used: pretraining, export and conversion never load
# the driver or a task type's data code (`keras_albert.finetuning`, `TaskType.finetuning_task`).
_FINETUNING = ("FinetuningOptions", "finetune")


def __getattr__(name: str):
    if name in _FINETUNING:
        from keras_albert import finetuning

        return getattr(finetuning, name)
    if name == "FinetuningTask":
        from keras_albert.tasks.finetuning_task import FinetuningTask

        return FinetuningTask
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
