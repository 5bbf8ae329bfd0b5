"""TFLite: the token-id model of a keras_albert model, for on-device inference.

`export_tflite(model, tokenizer, export_dir)` writes `export_dir/model.tflite` and the
SentencePiece model beside it (`export_dir/sentencepiece.model`). The TFLite model computes the
outputs of the SavedModel's `serve_token_ids` (`AlbertServingModule.outputs`: a classifier's
`logits`, `probabilities`, `label`; a backbone's `pooled_output`, ...), float32, from inputs
`token_ids`, `segment_ids`, `padding_mask`, int32 `[1, seq]`: one sequence of any length up to
the model's `max_sequence_length` (the interpreter resizes the inputs). Batch 1 because that is
what a phone runs, and because TFLite has no builtin for the attention mask's
`[:, None, None, :]` when both dimensions are dynamic (it converts with either one fixed).
Classifiers, regressors, backbones and pretrainers; the task heads (question answering,
multiple choice, token classification) have windowed or per-choice inputs and are not exported
to TFLite yet.

Token ids in, not text: stock `tf.lite.Interpreter` has no kernel for TF Text's
`SentencepieceTokenizer` nor for the original normalization (NFKD, the digit-comma re-split).
TF Text's own TFLite kernels (`tensorflow_text.core.pybinds.tflite_registrar`, for
`FastSentencepieceTokenizer`) are custom ops that need `InterpreterWithCustomOps` and TF Text
on the device, and they do not run our normalization. The app tokenizes with SentencePiece's
runtime and the file beside the model, then packs `[CLS] a [SEP] (b [SEP])` as `AlbertPacker`.
Only TFLite builtin ops are allowed: a model that needs TensorFlow ops fails to convert.
"""

import os

import keras
import tensorflow as tf

from keras_albert.export.modules import serving_module
from keras_albert.export.saved_model import (
    SENTENCEPIECE_ASSET,
    VOCABULARY_ASSET,
    AlbertServingModule,
)
from keras_albert.export.serving_layout import require_model_name
from keras_albert.text.tokenizer import AlbertTokenizer

TFLITE_FILE = "model.tflite"
# The tokenizer file written beside the model, named as in the SavedModels' assets.
SENTENCEPIECE_FILE = SENTENCEPIECE_ASSET
INPUT_NAMES = ("token_ids", "segment_ids", "padding_mask")


def export_tflite(
    model: keras.Model, tokenizer: AlbertTokenizer, export_dir: str | os.PathLike
) -> str:
    """Writes `model.tflite` (float32, token ids in) and the SentencePiece model to
    `export_dir` (created); returns the `.tflite` path.

    Args:
        model: an `AlbertClassifier`, `AlbertBackbone` or `AlbertPretrainer`.
        tokenizer: the model's tokenizer (its SentencePiece model is written beside).
        export_dir: the directory.
    """
    module = serving_module(model, tokenizer)
    if not isinstance(module, AlbertServingModule):
        raise ValueError(
            "`model` must be an AlbertClassifier, AlbertBackbone or AlbertPretrainer to export "
            f"to TFLite (task heads are not exported yet). Received: model={type(model).__name__}"
        )
    specs = [tf.TensorSpec([1, None], tf.int32, name=name) for name in INPUT_NAMES]

    @tf.function(input_signature=specs, autograph=False)
    def serve_token_ids(token_ids, segment_ids, padding_mask):
        inputs = {"token_ids": token_ids, "segment_ids": segment_ids}
        return module.outputs({**inputs, "padding_mask": padding_mask})

    converter = tf.lite.TFLiteConverter.from_concrete_functions(
        [serve_token_ids.get_concrete_function()], module
    )
    # Builtins only: a stock tf.lite.Interpreter must run it (no Flex delegate on the device).
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
    flatbuffer = converter.convert()
    export_dir = os.fspath(export_dir)
    os.makedirs(export_dir, exist_ok=True)
    path = os.path.join(export_dir, TFLITE_FILE)
    with open(path, "wb") as file:
        file.write(flatbuffer)
    vocabulary_file = VOCABULARY_ASSET if tokenizer.wordpiece else SENTENCEPIECE_FILE
    with open(os.path.join(export_dir, vocabulary_file), "wb") as file:
        file.write(tokenizer.serialized_model)  # the file the tokenizer was built from
    return path


def export_tflite_checkpoint(
    checkpoint: str | os.PathLike,
    vocabulary: str | os.PathLike | None = None,
    base_dir: str | os.PathLike = "saved_models",
    name: str = "albert",
    model_kind: str | None = None,
    config=None,
    num_classes: int | None = None,
) -> str:
    """`export_tflite` of any checkpoint `load_checkpoint` reads, to `<base_dir>/<name>/`.

    `vocabulary` (the tokenizer's SentencePiece model or WordPiece vocabulary) defaults to the
    one found beside the checkpoint (`keras_albert.convert.require_vocabulary`), the
    normalization to what its run recorded; `model_kind`, `config` and `num_classes` are
    `load_checkpoint`'s `model`, `config` and `num_classes`.
    """
    from keras_albert.convert import load_checkpoint, require_vocabulary, resolve_normalization

    vocabulary = require_vocabulary(checkpoint, vocabulary)
    require_model_name(name)
    model = load_checkpoint(checkpoint, model=model_kind, config=config, num_classes=num_classes)
    tokenizer = AlbertTokenizer(vocabulary, **resolve_normalization(checkpoint))
    return export_tflite(model, tokenizer, os.path.join(os.fspath(base_dir), name))
