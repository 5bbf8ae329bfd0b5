"""Fine-tuning: the driver and its options, for every task type that trains.

    from keras_albert.finetuning import FinetuningOptions, finetune
    finetune(FinetuningOptions("SST-2", "train.tsv", "dev.tsv", "runs/sst2",
                               init_checkpoint="runs/pretrain"))

The task types themselves (reader and features, post-processing, metrics, `FinetuningTask`,
options and `defaults.py`, one folder each) are in `keras_albert.tasks`, listed once in
`keras_albert.tasks.registry.TASK_TYPES`.
"""

from keras_albert.lazy import lazy_names

# Where each public name lives; imported when first used, so that importing the options does
# not load the driver.
_PUBLIC = {
    "FinetuningOptions": "options",
    "finetune": "driver",
    "choose_task": "task_choice",
    "make_task": "task_choice",
}
__all__ = sorted(_PUBLIC)

__getattr__ = lazy_names(__name__, _PUBLIC)
