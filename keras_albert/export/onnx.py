"""ONNX: the token-id model of every keras_albert model, for ONNX Runtime and the runtimes that
read ONNX.

`export_onnx(model, tokenizer, export_dir)` writes `export_dir/model.onnx` and the tokenizer's
vocabulary beside it (`keras_albert.export.vocabulary`: SentencePiece alone then gives the
tokenizer's pieces). The ONNX model is the Keras model's own forward pass, in inference
(dropout off), float32: Keras's `model.export(format="onnx")` on the TensorFlow backend
(tf2onnx), with LoRA adapters merged, a mixed- or bfloat16-policy model copied to float32 (as
the float32 SavedModel) and `num_layers` applied (`keras_albert.serving.precision`). Its inputs
are the model's, named as they are, int32, every dimension dynamic:

- backbone, classifier, question answering, token classification: `token_ids`,
  `segment_ids`, `padding_mask` `[batch, sequence]` (not the answer-class head's training
  input `start_positions`);
- pretrainer and fill-mask: also `mask_positions` `[batch, num_masked]`;
- multiple choice: `[batch, num_choices, sequence]`, any number of choices (a choice whose
  `padding_mask` row is all zeros is absent, `AlbertMultipleChoice`).

Its outputs are the model's, named as its output dict names them (`sequence_output`,
`pooled_output`; `start_logits`, `end_logits`, ...; `mlm_logits`, `sop_logits`) or, for one
tensor, as the model's `OUTPUT_NAME` (`logits`; the masked LM's `mlm_logits`), as the model
computes them (the app applies the softmax to logits). Unlike the TFLite model (batch 1), any
batch; unlike the SavedModel, no text in: ONNX has no SentencePiece op, and the app tokenizes
and packs `[CLS] a [SEP] (b [SEP])` as `AlbertPacker` does.

Needs `tf2onnx` and `onnx` (`pip install 'keras-albert[onnx]'`); running it, `onnxruntime`.
"""

from __future__ import annotations

import os

import keras
import tensorflow as tf

from keras_albert.export.spec import ExportSpec, resolve_spec
from keras_albert.export.vocabulary import write_vocabulary
from keras_albert.models.lora import merged_lora
from keras_albert.serving.precision import serving_model
from keras_albert.text.files import write_atomically
from keras_albert.text.tokenizer import AlbertTokenizer

ONNX_FILE = "model.onnx"
ONNX_REQUIREMENT = "keras-albert[onnx]"
# The names of the inputs' dynamic dimensions, by rank (`mask_positions`: its own).
_AXES = {2: ("batch", "sequence"), 3: ("batch", "num_choices", "sequence")}
_MASK_POSITIONS_AXES = ("batch", "num_masked")


def export_onnx(
    model: keras.Model,
    tokenizer: AlbertTokenizer,
    export_dir: str | os.PathLike,
    spec: ExportSpec | None = None,
    **fields,
) -> str:
    """Writes `model.onnx` (token ids in) and the tokenizer's vocabulary to `export_dir`
    (created); returns the `.onnx` path. See the module docstring.

    Args:
        model: any keras_albert model (backbone, pretrainer or a task type's head).
        tokenizer: the model's tokenizer (its vocabulary is written beside).
        export_dir: the directory: new or empty (written beside, then renamed into place: a
            failure leaves nothing).
        spec: an "onnx" `ExportSpec`: its `num_layers` (apply the shared block so many times
            instead of the trained depth); float32 only.
        **fields: the spec's fields (`resolve_spec`).
    """
    spec = resolve_spec(spec, fields, "onnx")
    try:
        import onnx
        import tf2onnx  # noqa: F401 (Keras's ONNX export imports it)
    except ImportError as error:
        raise ImportError(
            f"`export_onnx` needs tf2onnx and onnx ({error}): pip install '{ONNX_REQUIREMENT}'"
        ) from None
    model = serving_model(merged_lora(model), "float32", spec.num_layers)
    # The inputs at inference: an optional one is a training target (the answer-class QA
    # head's `start_positions`), which the model fills with None when it is not given.
    signature = {
        tensor.name: tf.TensorSpec(tensor.shape, tensor.dtype, name=tensor.name)
        for tensor in model.inputs
        if not model.get_layer(tensor.name).optional
    }
    output_names = _output_names(model)

    def write(directory: str) -> None:
        path = os.path.join(directory, ONNX_FILE)
        # `model.__call__` traced without `training`: dropout is off (the tests hold it).
        model.export(path, format="onnx", input_signature=[signature], verbose=False)
        graph = onnx.load(path)
        _name_outputs(graph.graph, output_names)
        _name_axes(graph.graph)
        onnx.checker.check_model(graph)
        onnx.save(graph, path)
        write_vocabulary(directory, tokenizer)

    export_dir = write_atomically(export_dir, write, directory=True, name="export_dir")
    return os.path.join(export_dir, ONNX_FILE)


def _output_names(model: keras.Model) -> list[str]:
    """The ONNX outputs' names, in tf2onnx's order (the traced function's flattened outputs:
    a dict's values by sorted key)."""
    if isinstance(model.output, dict):
        return sorted(model.output)
    return [model.OUTPUT_NAME]


def _name_outputs(graph, names: list[str]) -> None:
    """Renames the graph's outputs (tf2onnx's "Identity:0", ...) to `names`."""
    if len(graph.output) != len(names):
        raise ValueError(
            f"The ONNX graph must have one output per model output ({', '.join(names)}). "
            f"Received: {[output.name for output in graph.output]}"
        )
    renamed = {output.name: name for output, name in zip(graph.output, names, strict=True)}
    for node in graph.node:
        node.output[:] = [renamed.get(name, name) for name in node.output]
        node.input[:] = [renamed.get(name, name) for name in node.input]
    for value in [*graph.output, *graph.value_info]:
        value.name = renamed.get(value.name, value.name)


def _name_axes(graph) -> None:
    """Names the inputs' dynamic dimensions (tf2onnx's "unk__N"): `batch`, `sequence`, ..."""
    for graph_input in graph.input:
        dims = graph_input.type.tensor_type.shape.dim
        axes = _MASK_POSITIONS_AXES if graph_input.name == "mask_positions" else _AXES[len(dims)]
        for dim, axis in zip(dims, axes, strict=True):
            dim.dim_param = axis
