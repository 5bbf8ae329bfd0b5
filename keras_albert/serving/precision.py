"""Serving copies of a model at a lower precision or a smaller depth (same trained weights).

`serving_model(model, precision, num_layers)` is what `AlbertServingModule` exports:

- `"float32"`: the model as trained (a float32 copy if it was trained in mixed precision).
- `"bfloat16"`: the `bfloat16` policy: the weights stored in bfloat16 (rounded once, at export),
  matrix multiplies and activations in bfloat16, LayerNorm and the attention softmax computed
  in float32 (served, by oneDNN's bfloat16 kernels, which compute in float32 and round once,
  instead of casts around float32 ones: `keras_albert.layers.layer_norm.normalization_dtype`),
  the task outputs cast to float32.
  Not `mixed_bfloat16`: its float32 variables are cast to bfloat16 at every read, and ALBERT
  reads its shared block's weights once per pass, so the served graph would cast all of them
  `num_layers` times a call. Stored in bfloat16 they are half the bytes to read, and the
  shared block of ALBERT-base (7.1M weights, 14 MB) stays in a 32 MB L3 cache across its passes:
  measured on a 2-core AVX512-BF16 host, batch 1 goes from 39 to 26 ms and batch 8 x 128 from
  1.55x to 1.59x float32 (`benchmarks/inference_precision.py`).

There is no int8 export: Keras's `quantize("int8")` (int8 Dense kernels, inputs quantized per
token on the fly, TensorFlow's int8 × int8 → int32 `MatMul`) was 0.22-0.37× float32 on every
CPU measured, VNNI included, and the oneDNN int8 kernels that would pay
(`QuantizedMatMulWithBiasAndDequantize`) are slow at serving row counts and not known to run
in stock TF Serving (docs/guides/precision_and_speed.md, "Serving precision and depth"). An
option that is always slower than the default was a trap, so it went.

`ModelCall(model, function)` is how every serving module runs its model: ONE graph function
(per input rank) holding the weights as constants, which all the module's signatures call.
Constant weights let TensorFlow's oneDNN kernels fuse each Dense layer's matrix multiply with
its bias (`_MklNativeFusedMatMul`) and keep the weights in the kernel's blocked layout between
calls instead of re-laying them out at every call, which at small batches costs more than the
multiply: measured on a 2-core AVX512-BF16 host, a 20 × 768 × 768 bfloat16 multiply goes from
0.33 to 0.14 ms, and ALBERT-base batch 1 from 33.6 to 25.0 ms in bfloat16 and from 40.8 to
29.2 ms in float32 (an A/B of the two exports; docs/benchmarks.md). The same constants let
TensorFlow fold the concatenated Q/K/V kernels (`SelfAttention`) and fuse the bfloat16
LayerNorms (`keras_albert.layers.layer_norm`).
Held once in the function library, the weights are written once whatever the number of
signatures (a SavedModel has no variables then; TF Serving needs none).

`num_layers` (sharing="all" only) applies the shared block `num_layers` times instead of the
trained depth: see `AlbertBackbone.at_depth`.

Whether a precision is faster depends on the CPU: bfloat16 matrix multiplies only beat float32
with AVX512-BF16 or AMX kernels. `keras_albert.cpu.cpu_features()` says what this
machine has; `benchmarks/inference_precision.py` measures it.
"""

from __future__ import annotations

import keras
import tensorflow as tf

from keras_albert.layers.layer_norm import constant_weights
from keras_albert.models import AlbertBackbone
from keras_albert.validation import require_one_of

SERVING_PRECISIONS = ("float32", "bfloat16")


def backbone_of(model: keras.Model) -> AlbertBackbone:
    """The `AlbertBackbone` of a task model (or the model itself)."""
    return model if isinstance(model, AlbertBackbone) else model.backbone


def serving_model(
    model: keras.Model, precision: str = "float32", num_layers: int | None = None
) -> keras.Model:
    """`model` (a backbone or a task model over one) at `precision` and depth `num_layers`.

    Returns `model` itself when nothing changes; otherwise a new model of the same class with
    a copy of the weights. `num_layers=None` keeps the trained depth.
    """
    require_one_of("precision", precision, SERVING_PRECISIONS)
    backbone = backbone_of(model)
    trained_depth = backbone.albert_config.num_layers
    if num_layers is not None:
        backbone.check_depth(num_layers)
    depth = trained_depth if num_layers is None else num_layers
    if depth == trained_depth and backbone.dtype_policy.name == precision:
        return model

    serialized = keras.saving.serialize_keras_object(model)
    backbone_config = (
        serialized["config"] if model is backbone else serialized["config"]["backbone"]["config"]
    )
    backbone_config["num_layers"] = depth
    backbone_config["dtype"] = precision
    copy = keras.saving.deserialize_keras_object(serialized)
    # The parameter count does not depend on the depth (sharing="all") or on the policy, so
    # the weights carry over in order (rounded to bfloat16 under that policy); set_weights
    # checks shapes.
    copy.set_weights(model.get_weights())
    return copy


class ModelCall:
    """`function(inputs)` (which calls `model`) as one shared graph function, weights constant.

    Call it with a dict of tensors, inside a `tf.function` being traced (the serving
    signatures): the first call of each input structure (names, ranks, dtypes) traces
    `function` once, with every dimension unknown, into a `tf.function` whose graph holds
    `model`'s weights as constants (`keras.StatelessScope`); later calls, from any signature,
    call that same function.
    """

    def __init__(self, model: keras.Model, function):
        self._model = model
        self._function = function
        self._traced = {}

    def __call__(self, inputs: dict):
        key = tuple((name, inputs[name].shape.rank, inputs[name].dtype) for name in sorted(inputs))
        if key not in self._traced:
            signature = {
                name: tf.TensorSpec([None] * rank, dtype, name=name) for name, rank, dtype in key
            }
            self._traced[key] = tf.function(
                self._with_constant_weights, input_signature=[signature], autograph=False
            )
        return self._traced[key](inputs)

    def _with_constant_weights(self, inputs: dict):
        weights = self._model.weights
        with tf.init_scope():  # read eagerly, outside the graph being traced
            values = [weight.numpy() for weight in weights]
        constants = [(w, tf.constant(v)) for w, v in zip(weights, values, strict=True)]
        with keras.StatelessScope(state_mapping=constants), constant_weights():
            return self._function(inputs)
