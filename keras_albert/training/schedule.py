"""ALBERT's learning-rate schedule: linear warmup, then polynomial decay."""

from __future__ import annotations

import numbers

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="keras_albert")
class WarmupPolynomialDecay(keras.optimizers.schedules.LearningRateSchedule):
    """Linear warmup, then polynomial decay, with the formula of ALBERT's
    `optimization.py`.

    At optimizer step `t` (0 for the first update):

    ```
    t < start_warmup_step:                 0
    t - start_warmup_step < warmup_steps:  peak_learning_rate * (t - start_warmup_step)
                                           / warmup_steps
    otherwise:  (peak - end) * (1 - min(t, total_steps) / total_steps)**power + end
    ```

    As in the original, the decay is measured from step 0 over `total_steps`,
    not from the end of warmup: at `t = warmup_steps` the rate is already
    `peak * (1 - warmup_steps / total_steps)` (for `end = 0`), so the peak
    itself is never used, and the first update (t = 0) has rate 0 when there
    is a warmup. `warmup_steps=0` means no warmup, as the original's
    `if num_warmup_steps:`. `start_warmup_step` is the original's: the warmup
    counts from that step (the decay still from step 0). Before it the
    original's formula gives a negative rate; here the rate is 0 (a deliberate
    departure: no step moves the weights backwards).

    Args:
        peak_learning_rate: float > 0, the original's `init_lr`.
        warmup_steps: int >= 0, steps of linear warmup from 0.
        total_steps: int > 0, the step at which the decay reaches
            `end_learning_rate` and stays there (`num_train_steps`).
        end_learning_rate: float in [0, peak_learning_rate]. Defaults to
            `0.0`.
        power: float > 0, the decay's exponent; 1.0 is linear. Defaults to
            `1.0`.
        start_warmup_step: int >= 0, the step the warmup starts at. Defaults
            to `0`.
        name: optional name of the schedule.

    Example:

    >>> from keras_albert.training.schedule import WarmupPolynomialDecay
    >>> schedule = WarmupPolynomialDecay(1e-3, warmup_steps=10, total_steps=100)
    >>> round(float(schedule(5)), 6)  # halfway through the warmup
    0.0005
    >>> round(float(schedule(50)), 6)  # halfway through the decay
    0.0005
    """

    def __init__(
        self,
        peak_learning_rate: float,
        warmup_steps: int,
        total_steps: int,
        end_learning_rate: float = 0.0,
        power: float = 1.0,
        name: str | None = None,
        start_warmup_step: int = 0,
    ):
        if not peak_learning_rate > 0:
            raise ValueError(
                "`peak_learning_rate` must be > 0. "
                f"Received: peak_learning_rate={peak_learning_rate}"
            )
        if not _is_int(total_steps) or total_steps <= 0:
            raise ValueError(
                f"`total_steps` must be an integer > 0. Received: total_steps={total_steps!r}"
            )
        if not _is_int(warmup_steps) or not 0 <= warmup_steps <= total_steps:
            raise ValueError(
                "`warmup_steps` must be an integer in [0, total_steps="
                f"{total_steps}]. Received: warmup_steps={warmup_steps!r}"
            )
        if end_learning_rate < 0 or end_learning_rate > peak_learning_rate:
            raise ValueError(
                "`end_learning_rate` must be in [0, peak_learning_rate="
                f"{peak_learning_rate}]. Received: end_learning_rate={end_learning_rate}"
            )
        if not power > 0:
            raise ValueError(f"`power` must be > 0. Received: power={power}")
        if not _is_int(start_warmup_step) or start_warmup_step < 0:
            raise ValueError(
                "`start_warmup_step` must be an integer >= 0. "
                f"Received: start_warmup_step={start_warmup_step!r}"
            )
        self.start_warmup_step = int(start_warmup_step)
        self.peak_learning_rate = peak_learning_rate
        self.warmup_steps = int(warmup_steps)
        self.total_steps = int(total_steps)
        self.end_learning_rate = end_learning_rate
        self.power = power
        self.name = name
        self._decay = keras.optimizers.schedules.PolynomialDecay(
            initial_learning_rate=peak_learning_rate,
            decay_steps=self.total_steps,
            end_learning_rate=end_learning_rate,
            power=power,
            cycle=False,
        )

    def __call__(self, step):
        with keras.name_scope(self.name or "warmup_polynomial_decay"):
            decayed = self._decay(step)
            if self.warmup_steps == 0:
                return decayed
            warmup_step = ops.cast(step, decayed.dtype) - self.start_warmup_step
            warmup = self.peak_learning_rate * ops.maximum(warmup_step, 0.0) / self.warmup_steps
            return ops.where(warmup_step < self.warmup_steps, warmup, decayed)

    def get_config(self):
        return {
            "peak_learning_rate": self.peak_learning_rate,
            "warmup_steps": self.warmup_steps,
            "total_steps": self.total_steps,
            "end_learning_rate": self.end_learning_rate,
            "power": self.power,
            "name": self.name,
            "start_warmup_step": self.start_warmup_step,
        }


def learning_rate_at(optimizer: keras.optimizers.Optimizer, step: int) -> float:
    """The learning rate `optimizer` uses at `step` (its schedule's, or its constant)."""
    optimizer = getattr(optimizer, "inner_optimizer", optimizer)  # a LossScaleOptimizer's
    rate = optimizer._learning_rate
    if isinstance(rate, keras.optimizers.schedules.LearningRateSchedule):
        return float(rate(max(step, 0)))
    return float(ops.convert_to_numpy(rate))


def _is_int(value) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)
