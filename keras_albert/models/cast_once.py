"""Under a mixed-precision policy, the shared blocks' weights cast to the compute dtype once a
call, not once a pass.

Keras casts a float32 variable to the compute dtype (`mixed_bfloat16`, `mixed_float16`) at
every read, and `AlbertBackbone` reads its shared block's weights once per pass: ALBERT-base
cast every kernel and bias 12 times a forward pass, and the backward pass cast their 12
gradients back to float32. Within `cast_once(variables, dtype)` each of those weights reads as
ONE tensor, cast when entering (a `keras.StatelessScope` holding it, `layers.read_as.ReadAs`),
so all the passes use the same cast, and its gradient is cast back once.

That gradient, the sum of the passes' gradients, is summed in the compute dtype before its cast
to float32, as PyTorch's autocast cache does; cast per pass, it was summed in float32. Measured
against float32 on a 12-pass model, 3 seeds (`benchmarks/cast_once.py`), the shared kernels'
gradients are off by 4.64 % (hidden 32) and 1.47 % (hidden 128) summed in bfloat16, against
4.62 % and 1.43 % summed in float32: the bfloat16 matrix multiplies make the error, the sum adds
0.4 % and 3 % to it. Keeping the float32 sum would take a custom gradient at every read, which
casts each pass's gradient back: 11 of the 12 casts per weight that this removes from the
backward pass. In float16 the sum can overflow where the float32 one did not (the loss is
scaled): the dynamic loss scale then skips that step and halves, as for any other overflow.

The scope knows nothing of ALBERT: it is the backbone that says which weights are shared.
"""

import contextlib

import keras

from keras_albert.layers.read_as import ReadAs


@contextlib.contextmanager
def cast_once(variables, dtype):
    """Within it, each of `variables` that reads as `dtype` where it is entered (a float32
    weight in a mixed-precision layer's autocast scope) reads as that one tensor.

    Args:
        variables: the weights to cast once (others read as usual).
        dtype: the compute dtype, e.g. "bfloat16".
    """
    values = []
    for variable in variables:
        value = variable.value  # cast here by the enclosing layer's autocast scope
        if keras.backend.standardize_dtype(value.dtype) == dtype:
            values.append((variable, value))
    with ReadAs(values, assign_on_exit=True):
        yield
