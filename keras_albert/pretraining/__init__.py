"""Pretraining: the driver (MLM + SOP on the training engine, `keras_albert.training`) and its
data (`data`: raw text → SOP/NSP pairs with n-gram masking → TFRecords → `tf.data`).

    from keras_albert.pretraining import PretrainingOptions, pretrain
    pretrain(PretrainingOptions("data/train-*.tfrecord", "runs/pretrain", train_steps=125_000,
                                batch_size=4096, preset="albert_base_v2"))

Modules, imports pointing down this list:

    driver.py           `pretrain`: setup, resume, the run, the summary
    stretches.py        one stretch of `log_every_steps` steps at a time: evaluate, log
    initial_weights.py  the architecture and the weights to start from
    intrinsic_eval.py   held-out MLM and sentence-pair accuracy of a pretrainer
    objective.py        MLM + SOP for the training loop and for `compile`
    streams.py          the training and evaluation input streams (resume skips by step)
    losses.py           `MaskedLMLoss` and the MLM + SOP sums, loss and logs
    options.py          `PretrainingOptions`
    data/               the records: making them and reading them; imports nothing above it
"""

from keras_albert.lazy import lazy_names

# Where each public name lives; imported when first used, so that the data tools
# (`keras_albert.pretraining.data`) load neither the driver nor the training engine.
_PUBLIC = {
    "PretrainingOptions": "options",
    "pretrain": "driver",
}
__all__ = sorted(_PUBLIC)

__getattr__ = lazy_names(__name__, _PUBLIC)
