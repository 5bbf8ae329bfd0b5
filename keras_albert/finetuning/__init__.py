"""Fine-tuning: the driver, the task interface and the registry of tasks (task name → class).

    from keras_albert.finetuning import FinetuningOptions, finetune
    finetune(FinetuningOptions("SST-2", "train.tsv", "dev.tsv", "runs/sst2",
                               init_checkpoint="runs/pretrain"))

One subpackage per task (`glue`, `squad`, `race`, `ner`), each with its reader and features,
post-processing, metrics, task class and `defaults.py`; a new task is one more package and one
line in `registry.TASKS`.
"""

import importlib

# Where each public name lives; imported when first used, so that the serving modules can read
# a task's `defaults.py` without loading the driver and every task.
_PUBLIC = {
    "TASKS": "registry",
    "FinetuningOptions": "options",
    "FinetuningTask": "task",
    "finetune": "driver",
    "make_task": "registry",
    "task_class": "registry",
}
__all__ = sorted(_PUBLIC)


def __getattr__(name: str):
    if name in _PUBLIC:
        return getattr(importlib.import_module(f"{__name__}.{_PUBLIC[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
