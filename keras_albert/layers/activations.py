"""Activation names as ALBERT configs mean them, mapped to explicit Keras functions."""

import functools
import math

import keras
from keras import ops

from keras_albert.validation import ACTIVATIONS, require_one_of


def gelu_approximate(x):
    """The tanh approximation of GELU, `0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))`.

    The same arithmetic as `keras.activations.gelu(x, approximate=True)`, written term by
    term in the order TensorFlow's oneDNN graph rewrite fuses, with the preceding
    multiply-and-bias, into one kernel when the model is served
    (`(0.044715·x)·x²`, then `((tanh(·) + 1)·0.5)·x`); from `x³` TensorFlow reassociates the
    product into an order it does not recognize and keeps about 8 element-wise kernels per
    layer pass.

    Example:
    >>> from keras import ops
    >>> from keras_albert.layers.activations import gelu_approximate
    >>> round(float(gelu_approximate(ops.convert_to_tensor(1.0))), 6)
    0.841192
    """
    x = ops.convert_to_tensor(x)
    cubic = ops.multiply(ops.multiply(0.044715, x), ops.square(x))
    inner = ops.multiply(ops.add(x, cubic), math.sqrt(2.0 / math.pi))
    return ops.multiply(ops.multiply(ops.add(ops.tanh(inner), 1.0), 0.5), x)


# The original ALBERT "gelu" is the tanh approximation (Hugging Face calls it "gelu_new");
# Keras's "gelu" defaults to the exact erf form, so each name is mapped explicitly.
_FUNCTIONS = {
    "gelu_approximate": gelu_approximate,
    "gelu": functools.partial(keras.activations.gelu, approximate=False),
    "relu": keras.activations.relu,
    "tanh": keras.activations.tanh,
    "silu": keras.activations.silu,
}
assert set(_FUNCTIONS) == set(ACTIVATIONS)


def get_activation(name: str):
    """Returns the function for one of `ACTIVATIONS`."""
    require_one_of("activation", name, ACTIVATIONS)
    return _FUNCTIONS[name]
