"""Rematerialization (gradient checkpointing) of a layer's call that recomputes, in the backward
pass, exactly what the forward pass computed, on TensorFlow, JAX and PyTorch.

`keras.RematScope` marks the layers created within it, and Keras's
`Layer.rematerialized_call` wraps a marked layer's `call` in `keras.remat`
(`tf.recompute_grad`, `jax.checkpoint`, `torch.utils.checkpoint`) as it is. On ALBERT's
transformer layers that breaks three ways on TensorFlow: in a `tf.function` the keyword
arguments (`padding_mask`, `training`) are refused; with dropout the recomputation draws
other masks (the forward pass advanced the seed generators), so the gradients are not those
of the forward pass; and a weight read as a tensor from outside (`AlbertBackbone`'s
`cast_once` under a mixed-precision policy) gets no gradient at all (None).

`Rematerialized.rematerialized_call` makes the wrapped function pure instead: its arguments
are the layer's input and its trainable weights' values (read where the call starts, so
through any enclosing scope: `cast_once`, `Model.stateless_call`), everything else it reads
is fixed when the call starts, the seed generators among them, advanced once there as the
call itself advances them (each dropout layer draws once a call); the recomputation then
draws the forward pass's masks and the gradients are those without rematerialization
(PyTorch's dropout without a seed draws from torch's generator, whose state
`torch.utils.checkpoint` restores for the recomputation). Only training calls are rematerialized:
inference and the exported graphs are those of the plain call.
"""

import functools

import keras

from keras_albert.layers.read_as import ReadAs


class Rematerialized(keras.layers.Layer):
    """A layer that `keras.RematScope` can rematerialize whole (mode "full", or
    "list_of_layers" naming it), with the same gradients, dropout included, on every backend.

    Example:
    >>> import keras
    >>> from keras_albert.layers import TransformerEncoder
    >>> with keras.RematScope(mode="list_of_layers", layer_names=["block"]):
    ...     block = TransformerEncoder(num_heads=2, intermediate_dim=16, name="block")
    """

    def rematerialized_call(self, layer_call, *args, **kwargs):
        # Keras's decision (mode, names), without its wrapping.
        if not kwargs.get("training") or (
            super().rematerialized_call(layer_call, *args, **kwargs) is layer_call
        ):
            return layer_call
        return functools.partial(_pure_remat, self, layer_call)


def _pure_remat(layer, layer_call, inputs, *args, **kwargs):
    """`layer_call(inputs, *args, **kwargs)` under `keras.remat`, as a function of `inputs` and
    the layer's trainable weights only (`tf.recompute_grad` differentiates its arguments)."""
    trainable = layer.trainable_variables
    trainable_ids = {id(variable) for variable in trainable}
    # Each generator's draw of this call: the recomputation reads the same.
    # (`_seed_generators`: Keras's own list, what `Layer.variables` reads the states from.)
    fixed = [
        (generator.state, generator.next())
        for sublayer in layer._flatten_layers()
        for generator in sublayer._seed_generators
    ]
    drawn = {id(variable) for variable, _ in fixed}
    fixed += [
        (variable, variable.value)
        for variable in layer.variables
        if id(variable) not in trainable_ids and id(variable) not in drawn
    ]

    def pure(inputs, *values):
        with ReadAs([*zip(trainable, values, strict=True), *fixed], assign_on_exit=False):
            return layer_call(inputs, *args, **kwargs)

    values = [keras.ops.convert_to_tensor(variable.value) for variable in trainable]
    return keras.remat(pure)(inputs, *values)
