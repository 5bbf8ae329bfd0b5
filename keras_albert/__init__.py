"""keras_albert: ALBERT (Lan et al., 2020, arXiv:1909.11942) for Keras 3: the models on every
Keras backend (TensorFlow, JAX, PyTorch); the tokenizer, the data pipelines, the training loop
and the exports on TensorFlow."""

# First: TensorFlow without its start-up log lines (KERAS_ALBERT_VERBOSE=1 shows them), where
# it is the backend.
from keras_albert import _startup  # isort: skip

import importlib

from keras_albert.lazy import import_public

# The models, configs, converters and task registry (they import Keras, and TensorFlow where it
# is the backend), imported with the package; and what a saved training output refers to (Lamb,
# its schedule, the MLM loss) registered with Keras, so that `keras.models.load_model` needs
# nothing but `import keras_albert`. Keras finds them by their registered names
# (`keras_albert>MaskedLMLoss`), not by the module a file records, so files saved before a
# module moved still load. Not in an Apache Beam SDK worker (`_startup.is_beam_worker`: the
# pretraining data's pipeline needs neither Keras nor TensorFlow), nor in the `keras-albert`
# command with no Keras backend installed (`_startup.models_deferred`): there they are imported
# when one of these names is first used.
_EAGER = {
    "PRESETS": "config",
    "AlbertConfig": "config",
    "get_preset": "config",
    "load_checkpoint": "convert",
    "save_checkpoint": "convert",
    "AlbertBackbone": "models",
    "AlbertPretrainer": "models",
    "TASK_TYPES": "tasks.registry",
    "get_task_type": "tasks.registry",
}
_KERAS_REGISTRATIONS = (
    "pretraining.losses",
    "training.clipping",
    "training.lamb",
    "training.schedule",
)


def _import_eager() -> None:
    _startup.quiet_tensorflow_import()
    for module in _KERAS_REGISTRATIONS:
        importlib.import_module(f"{__name__}.{module}")
    globals().update({name: import_public(__name__, m, name) for name, m in _EAGER.items()})
    # Every task type's head by its class name (each defined in its task type's folder,
    # `keras_albert.tasks.<name>.model`), and its preprocessor's, imported when first used
    # (they need TensorFlow): a new task type adds no line here.
    for task_type in globals()["TASK_TYPES"]:
        globals().setdefault(task_type.model_class.__name__, task_type.model_class)
        if task_type.preprocessor is not None:
            module, _, name = task_type.preprocessor.partition(":")
            _TASK_LAZY[name] = module
    __all__.extend(
        sorted(
            {task_type.model_class.__name__ for task_type in globals()["TASK_TYPES"]}
            | set(_TASK_LAZY)
        )
    )
    # Registered with Keras where TensorFlow Text (which they need) is installed: a saved model
    # that carries its preprocessor (a fine-tuning run's best.keras) then loads with
    # `keras.models.load_model` too.
    if _startup.installed("tensorflow_text"):
        for name, module in _TASK_LAZY.items():
            import_public(__name__, module, name)


# The task types' preprocessors: class name → module, from `TASK_TYPES` (`_import_eager`).
_TASK_LAZY: dict[str, str] = {}
# The public names but the task types' (`_import_eager` adds those).
__all__ = [
    "PRESETS",
    "TASK_TYPES",
    "AlbertBackbone",
    "AlbertConfig",
    "AlbertPacker",
    "AlbertPretrainer",
    "AlbertTokenizer",
    "FinetuningOptions",
    "FinetuningTask",
    "fill_mask",
    "finetune",
    "get_preset",
    "load_checkpoint",
    "get_task_type",
    "save_checkpoint",
]


if not _startup.models_deferred():  # where `_startup` imported TensorFlow (its backend)
    _import_eager()

__version__ = "0.1.0"

# Imported when first used: fine-tuning's names, so that pretraining, export and conversion
# never load the driver or a task type's data code (`keras_albert.finetuning`,
# `TaskType.finetuning_task`); the tokenizer's and fill-mask's, which need TensorFlow (TF Text
# graph ops), so that the models, configs and converters import without it.
_LAZY = {
    "FinetuningOptions": "finetuning",
    "finetune": "finetuning",
    "FinetuningTask": "tasks.finetuning_task",
    "AlbertPacker": "text.packing",
    "AlbertTokenizer": "text.tokenizer",
    "fill_mask": "tasks.fill_mask.predict",
}


def __getattr__(name: str):
    if name in _LAZY:
        return import_public(__name__, _LAZY[name], name)
    # A Beam worker's first use of the models' part: a name of `_EAGER`, or of a task type's
    # classes (all `Albert...`; not the submodules, which `from keras_albert import x` asks
    # for first).
    if "TASK_TYPES" not in globals() and (name in _EAGER or name.startswith("Albert")):
        _import_eager()
        if name in globals():
            return globals()[name]
    if name in _TASK_LAZY:
        return import_public(__name__, _TASK_LAZY[name], name)
    raise AttributeError(f"module 'keras_albert' has no attribute {name!r}")
