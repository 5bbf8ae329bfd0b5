"""TFLite: the token-id model of every keras_albert model, for on-device inference.

`export_tflite(model, tokenizer, export_dir)` writes `export_dir/model.tflite` and the
SentencePiece model beside it (`export_dir/sentencepiece.model`). The TFLite model computes the
outputs of the SavedModel's `serve_token_ids` (the serving module's `token_outputs`), float32
but for integer indices, from inputs `token_ids`, `segment_ids`, `padding_mask`, int32, one
example of any length up to the model's `max_sequence_length` (the interpreter resizes the
inputs):

- classifier, regressor, backbone, pretrainer: `[1, seq]` → `logits`, `probabilities`,
  `label` / `score` / `pooled_output`, `sequence_output`, ... (`AlbertServingModule.outputs`
  and `ClassificationServingModule`'s);
- question answering: one window `[1, seq]` → `start_logits`, `end_logits` (and the
  answer-class head's outputs); the app windows the context and picks the span;
- multiple choice: `[1, num_choices, max_sequence_length]` (both fixed at export: RACE's 4
  choices, padded to the model's length) → `logits`, `probabilities`, `answer_index`;
- token classification (NER): `[1, seq]` → per-token tag `logits` `[1, seq, num_classes]`;
- text embedding: `[1, seq]` → `embeddings` `[1, hidden_dim]` (pooled as the model pools).

Batch 1 because that is what a phone runs, and because TFLite has no builtin for the attention
mask's `[:, None, None, :]` when both dimensions are dynamic (it converts with either one fixed).
`precision="int8"` writes dynamic-range int8 weights (`tf.lite.Optimize.DEFAULT`: int8
kernels, activations quantized on the fly, float outputs): about a quarter of the size and, for
an albert_base-sized model at batch 1 and 128 tokens, about 3x faster on an x86 CPU than
float32 (docs/benchmarks.md, "TFLite"); the tests state its tolerance.

Token ids in, not text: stock `tf.lite.Interpreter` has no kernel for TF Text's
`SentencepieceTokenizer` nor for the original normalization (NFKD, the digit-comma re-split).
TF Text's own TFLite kernels (`tensorflow_text.core.pybinds.tflite_registrar`, for
`FastSentencepieceTokenizer`) are custom ops that need `InterpreterWithCustomOps` and TF Text
on the device, and they do not run our normalization. The app tokenizes with SentencePiece's
runtime and the file beside the model, then packs `[CLS] a [SEP] (b [SEP])` as `AlbertPacker`.
That SentencePiece file carries the tokenizer's lowercasing and accent stripping in its own
normalizer (`keras_albert.export.vocabulary`), so SentencePiece alone gives the tokenizer's
pieces, but for the original's re-split of a piece ending in a digit and a comma.
Only TFLite builtin ops are allowed: a model that needs TensorFlow ops fails to convert.
"""

import os

import keras
import tensorflow as tf

from keras_albert.export.modules import serving_module
from keras_albert.export.spec import ExportSpec, resolve_spec
from keras_albert.export.vocabulary import write_vocabulary
from keras_albert.text.files import write_atomically
from keras_albert.text.tokenizer import AlbertTokenizer

TFLITE_FILE = "model.tflite"
INPUT_NAMES = ("token_ids", "segment_ids", "padding_mask")


def export_tflite(
    model: keras.Model,
    tokenizer: AlbertTokenizer,
    export_dir: str | os.PathLike,
    spec: ExportSpec | None = None,
    **fields,
) -> str:
    """Writes `model.tflite` (token ids in) and the SentencePiece model to `export_dir`
    (created); returns the `.tflite` path.

    Args:
        model: any keras_albert model `keras_albert.export.serving_module` serves.
        tokenizer: the model's tokenizer (its SentencePiece model is written beside).
        export_dir: the directory: new or empty (written beside, then renamed into place: a
            failure leaves nothing).
        spec: a "tflite" `ExportSpec`: its `precision` ("float32", or "int8" for
            dynamic-range int8 weights) and `task_options` (the task serving module's own
            arguments: `num_choices` for multiple choice; the others do not change the
            token-id model).
        **fields: the spec's fields (`resolve_spec`).
    """
    spec = resolve_spec(spec, fields, "tflite")
    # The float32 module's token-id model; the converter applies the precision.
    module = serving_module(model, tokenizer, task_options=spec.task_options)
    specs = [tf.TensorSpec(module.token_input_shape, tf.int32, name=name) for name in INPUT_NAMES]

    @tf.function(input_signature=specs, autograph=False)
    def serve_token_ids(token_ids, segment_ids, padding_mask):
        inputs = {"token_ids": token_ids, "segment_ids": segment_ids}
        return module.token_outputs({**inputs, "padding_mask": padding_mask})

    converter = tf.lite.TFLiteConverter.from_concrete_functions(
        [serve_token_ids.get_concrete_function()], module
    )
    # Builtins only: a stock tf.lite.Interpreter must run it (no Flex delegate on the device).
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
    if spec.precision == "int8":
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
    flatbuffer = converter.convert()

    def write(directory: str) -> None:
        with open(os.path.join(directory, TFLITE_FILE), "wb") as file:
            file.write(flatbuffer)
        write_vocabulary(directory, tokenizer)

    export_dir = write_atomically(export_dir, write, directory=True, name="export_dir")
    return os.path.join(export_dir, TFLITE_FILE)
