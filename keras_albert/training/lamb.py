"""LAMB as ALBERT pretrained with it, as a Keras 3 optimizer."""

from __future__ import annotations

import dataclasses
import re
import warnings
from collections.abc import Iterable

import keras
from keras import ops

from keras_albert.training.clipping import SummedGradientClipping

DEFAULT_EXCLUSIONS = ("LayerNorm", "layer_norm", "bias")


@keras.saving.register_keras_serializable(package="keras_albert")
class Lamb(SummedGradientClipping, keras.optimizers.Optimizer):
    """LAMB (You et al., 2019) with the update rule ALBERT was pretrained with.

    For each variable `w` with gradient `g` (after global-norm clipping):

    ```
    m = beta_1 * m + (1 - beta_1) * g
    v = beta_2 * v + (1 - beta_2) * g**2
    u = m / (sqrt(v) + epsilon)        # m, v divided by 1 - beta**t first
                                       # when bias_correction=True
    u = u + weight_decay_rate * w      # unless excluded from weight decay
    r = ||w|| / ||u|| if both > 0 else 1  # 1 if excluded from layer adaptation
    w = w - learning_rate * r * u
    ```

    This is google-research/albert `lamb_optimizer.py` (the decay sits inside
    the trust ratio, no bias correction, epsilon 1e-6, LayerNorm parameters and
    biases excluded from both decay and adaptation) with the `clip_by_global_norm
    (1.0)` that ALBERT's `optimization.py` applies before it. It is not
    `keras.optimizers.Lamb`, which decays weights outside the ratio, always
    corrects bias and adapts every variable; the two coincide only with
    `weight_decay_rate=0`, `bias_correction=True`, no layer-adaptation
    exclusions and the same epsilon and clipping.

    Gradients are clipped after they are summed across replicas, so a
    `tf.distribute` run clips the same global gradient a single device would;
    Keras clips each replica's partial gradient.

    Args:
        learning_rate: float, `keras.optimizers.schedules.LearningRateSchedule`
            (e.g. `WarmupPolynomialDecay`) or callable. Defaults to `0.001`.
        beta_1: float in [0, 1), decay of the first moment. Defaults to `0.9`.
        beta_2: float in [0, 1), decay of the second moment. Defaults to
            `0.999`.
        epsilon: float >= 0 added to `sqrt(v)`. Defaults to `1e-6`.
        weight_decay_rate: float >= 0, L2 decay added to the update before the
            trust ratio. Defaults to `0.01`.
        exclude_from_weight_decay: iterable of regular expressions (matched
            with `re.search` against each variable's path, e.g.
            `"albert_backbone/embeddings_layer_norm/gamma"`) and/or variable
            objects. Defaults to `("LayerNorm", "layer_norm", "bias")`.
        exclude_from_layer_adaptation: same form; `None` means "the same as
            `exclude_from_weight_decay`", as in the original (which also
            treats an empty list that way; here `[]` means "adapt every
            variable").
        bias_correction: bool, divide `m` and `v` by `1 - beta**t` as TF Model
            Garden's LAMB does. Defaults to `False` (ALBERT).
        global_clipnorm: float or `None`, clip the gradients to this global
            norm, as `tf.clip_by_global_norm`. Defaults to `1.0` (ALBERT).
        name: optional name of the optimizer.
        **kwargs: the other arguments of `keras.optimizers.Optimizer`
            (`clipnorm`, `clipvalue`, `use_ema`, `loss_scale_factor`,
            `gradient_accumulation_steps`, ...). Keras's `weight_decay` is
            refused: it would decay a second time, outside the trust ratio.

    Example:

    >>> import keras
    >>> import numpy as np
    >>> from keras_albert.training.lamb import Lamb
    >>> model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    >>> model.compile(optimizer=Lamb(learning_rate=1e-3), loss="mse")
    >>> history = model.fit(np.ones((8, 4)), np.zeros((8, 2)), verbose=0)

    References:
        - [You et al., 2019](https://arxiv.org/abs/1904.00962)
        - [Lan et al., 2020](https://arxiv.org/abs/1909.11942)
    """

    def __init__(
        self,
        learning_rate=0.001,
        beta_1: float = 0.9,
        beta_2: float = 0.999,
        epsilon: float = 1e-6,
        weight_decay_rate: float = 0.01,
        exclude_from_weight_decay=DEFAULT_EXCLUSIONS,
        exclude_from_layer_adaptation=None,
        bias_correction: bool = False,
        global_clipnorm: float | None = 1.0,
        name: str | None = None,
        **kwargs,
    ):
        weight_decay = kwargs.pop("weight_decay", None)
        if weight_decay is not None:
            raise ValueError(
                "Lamb decays weights inside its update; use `weight_decay_rate`. "
                f"Received: weight_decay={weight_decay} (Keras's decoupled decay "
                "would be applied a second time)."
            )
        super().__init__(
            learning_rate=learning_rate,
            weight_decay=None,
            global_clipnorm=global_clipnorm,
            name=name,
            **kwargs,
        )
        for arg_name, value in (("beta_1", beta_1), ("beta_2", beta_2)):
            if not 0.0 <= value < 1.0:
                raise ValueError(f"`{arg_name}` must be in [0, 1). Received: {arg_name}={value}")
        if epsilon < 0:
            raise ValueError(f"`epsilon` must be >= 0. Received: epsilon={epsilon}")
        if weight_decay_rate < 0:
            raise ValueError(
                f"`weight_decay_rate` must be >= 0. Received: weight_decay_rate={weight_decay_rate}"
            )
        self.beta_1 = beta_1
        self.beta_2 = beta_2
        self.epsilon = epsilon
        self.weight_decay_rate = weight_decay_rate
        self.bias_correction = bool(bias_correction)
        self._decay_exclusions = _split_exclusions(
            exclude_from_weight_decay, "exclude_from_weight_decay"
        )
        self._adaptation_exclusions = (
            None
            if exclude_from_layer_adaptation is None
            else _split_exclusions(exclude_from_layer_adaptation, "exclude_from_layer_adaptation")
        )

    def exclude_from_weight_decay(self, var_list=None, var_names=None):
        """Adds variables or name patterns to the weight-decay exclusions.

        Keras's method of the same name configures its decoupled decay, which
        this optimizer does not use; here it extends `exclude_from_weight_decay`
        so that the Keras idiom still has an effect. Call it before `build`.
        """
        if self.built:
            raise ValueError(
                "`exclude_from_weight_decay()` must be called before the optimizer is built."
            )
        extra_patterns = _split_exclusions(var_names or (), "var_names").patterns
        extra_objects = _split_exclusions(var_list or (), "var_list").objects
        self._decay_exclusions = _Exclusions(
            self._decay_exclusions.patterns + extra_patterns,
            self._decay_exclusions.objects + extra_objects,
        )

    def build(self, var_list):
        if self.built:
            return
        super().build(var_list)
        self._momentums, self._velocities = self.add_optimizer_variables(
            var_list, ["momentum", "velocity"]
        )
        # Decided once per variable, by position in `var_list`: inside
        # `update_step` a distributed run passes the per-replica tf.Variable,
        # which has neither the Keras path nor the identity of the object the
        # user named.
        adaptation_exclusions = (
            self._decay_exclusions
            if self._adaptation_exclusions is None
            else self._adaptation_exclusions
        )
        self._use_weight_decay_flags = tuple(
            self.weight_decay_rate > 0 and not self._is_excluded(v, self._decay_exclusions)
            for v in var_list
        )
        self._use_layer_adaptation_flags = tuple(
            not self._is_excluded(v, adaptation_exclusions) for v in var_list
        )

    def uses_weight_decay(self, variable) -> bool:
        """Whether `variable` (one the optimizer was built with) is decayed."""
        return self._use_weight_decay_flags[self._get_variable_index(variable)]

    def uses_layer_adaptation(self, variable) -> bool:
        """Whether `variable`'s update is scaled by the trust ratio."""
        return self._use_layer_adaptation_flags[self._get_variable_index(variable)]

    def _is_excluded(self, variable, exclusions: _Exclusions) -> bool:
        key = self._var_key(variable)
        if any(key == self._var_key(excluded) for excluded in exclusions.objects):
            return True
        name = _variable_path(variable)
        return any(re.search(pattern, name) is not None for pattern in exclusions.patterns)

    def update_step(self, gradient, variable, learning_rate):
        index = self._get_variable_index(variable)
        dtype = variable.dtype
        learning_rate = ops.cast(learning_rate, dtype)
        # Embedding gradients arrive as IndexedSlices; the moments are dense.
        gradient = ops.cast(ops.convert_to_tensor(gradient), dtype)
        m = self._momentums[index]
        v = self._velocities[index]

        next_m = self.beta_1 * m + (1.0 - self.beta_1) * gradient
        next_v = self.beta_2 * v + (1.0 - self.beta_2) * ops.square(gradient)
        self.assign(m, next_m)
        self.assign(v, next_v)
        if self.bias_correction:
            step = ops.cast(self.iterations + 1, dtype)
            next_m = next_m / (1.0 - ops.power(ops.cast(self.beta_1, dtype), step))
            next_v = next_v / (1.0 - ops.power(ops.cast(self.beta_2, dtype), step))
        update = next_m / (ops.sqrt(next_v) + self.epsilon)

        if self._use_weight_decay_flags[index]:
            update = update + self.weight_decay_rate * variable
        if self._use_layer_adaptation_flags[index]:
            weight_norm = ops.sqrt(ops.sum(ops.square(variable)))
            update_norm = ops.sqrt(ops.sum(ops.square(update)))
            # Where either norm is 0 the ratio is 1; the inner where keeps the
            # division finite so no NaN leaks through.
            both_positive = ops.logical_and(weight_norm > 0, update_norm > 0)
            trust_ratio = ops.where(
                both_positive,
                weight_norm / ops.where(both_positive, update_norm, 1.0),
                1.0,
            )
            update = trust_ratio * update
        self.assign_sub(variable, learning_rate * update)

    def get_config(self):
        config = super().get_config()
        config.pop("weight_decay")
        adaptation = self._adaptation_exclusions
        dropped = len(self._decay_exclusions.objects)
        if adaptation is not None:
            dropped += len(adaptation.objects)
        if dropped:
            warnings.warn(
                f"Lamb.get_config() keeps only name patterns: {dropped} exclusion(s) "
                "given as variable objects cannot be serialized and are left out.",
                stacklevel=2,
            )
        config.update(
            {
                "beta_1": self.beta_1,
                "beta_2": self.beta_2,
                "epsilon": self.epsilon,
                "weight_decay_rate": self.weight_decay_rate,
                "exclude_from_weight_decay": list(self._decay_exclusions.patterns),
                "exclude_from_layer_adaptation": (
                    None if adaptation is None else list(adaptation.patterns)
                ),
                "bias_correction": self.bias_correction,
            }
        )
        return config


@dataclasses.dataclass(frozen=True)
class _Exclusions:
    """Regular expressions and variable objects; a plain object, so that the
    optimizer's trackers do not adopt the model's variables as its own."""

    patterns: tuple[str, ...]
    objects: tuple


def _split_exclusions(exclusions, arg_name: str) -> _Exclusions:
    """Splits an exclusion list into regular expressions and variable objects."""
    if isinstance(exclusions, str) or not isinstance(exclusions, Iterable):
        raise TypeError(
            f"`{arg_name}` must be a list of regular expressions and/or variables. "
            f"Received: {arg_name}={exclusions!r}"
        )
    patterns, objects = [], []
    for item in exclusions:
        if isinstance(item, str):
            try:
                re.compile(item)
            except re.error as error:
                raise ValueError(
                    f"`{arg_name}` holds an invalid regular expression {item!r}: {error}"
                ) from None
            patterns.append(item)
        elif hasattr(item, "shape") and hasattr(item, "dtype") and hasattr(item, "assign"):
            objects.append(item)
        else:
            raise TypeError(
                f"`{arg_name}` items must be strings (regular expressions) or variables. "
                f"Received an item {item!r} of type {type(item).__name__}."
            )
    return _Exclusions(tuple(patterns), tuple(objects))


def _variable_path(variable) -> str:
    """The name exclusions match against: the Keras path, else the TF name."""
    path = getattr(variable, "path", None)
    if path is None:
        path = re.sub(r":\d+$", "", variable.name)
    return path
