"""TF-Hub / Kaggle Models: an encoder and a preprocessor SavedModel in Model Garden's interface.

`export_tfhub(model, tokenizer, export_dir)` writes two TF2 SavedModels that code written for
the ALBERT encoders on TF-Hub / Kaggle Models (Model Garden's
`official/nlp/tools/export_tfhub_lib.py`, and https://www.tensorflow.org/hub/common_saved_model_apis/text)
loads unchanged:

- `export_dir/encoder/`: called with a dict `input_word_ids`, `input_mask`, `input_type_ids`
  (int32 `[batch, seq]`) and `training=` (both values traced), returns `pooled_output`
  `[batch, H]`, `sequence_output` `[batch, seq, H]`, `encoder_outputs` (a list, the output of
  each pass of the shared block, `num_layers` entries) and `default` (= `pooled_output`), all
  float32; `assets/albert_config.json` records the architecture. For an `AlbertPretrainer`
  its `.mlm` sub-object also takes `masked_lm_positions` (int32 `[batch, num_predictions]`)
  and adds `mlm_logits` `[batch, num_predictions, V]`. The reusable-SavedModel attributes
  `variables`, `trainable_variables` and `regularization_losses` (empty: ALBERT has no weight
  regularizer) make `hub.KerasLayer(encoder, trainable=True)` fine-tune it. The tokenizer's
  file is attached as `sp_model_file` (a WordPiece vocabulary as `vocab_file`, with
  `do_lower_case`), as Model Garden's encoders carry it.
- `export_dir/preprocessor/`: called with a `[batch]` string tensor, returns the three encoder
  inputs padded to `sequence_length` (default 128, at most the model's limit); `.tokenize`
  maps strings to ragged int32 ids `[batch, (tokens)]`, `.tokenize.get_special_tokens_dict()`
  gives `vocab_size`, `start_of_sequence_id`, `end_of_segment_id`, `padding_id` and `mask_id`;
  `.bert_pack_inputs(segments, seq_length=N)` packs a list of one or two ragged id tensors
  (ragged rank 1 or 2) into the encoder inputs of length `N`.

The preprocessor runs our own tokenizer (`AlbertTokenizer`: the original normalization and the
digit-comma re-split) and packer (`keras_albert.text.packing.pack_segments`), so a pair is
truncated as the original ALBERT does (the longer segment first), not round-robin as Model
Garden's `BertPackInputs`; stock TensorFlow and TF Text ops only, as in the TF Serving export.

The encoder holds a float32 copy of the model (`output_all_layers=True`, for
`encoder_outputs`); its variables are the SavedModel's own, saved from that copy.
"""

from __future__ import annotations

import os

import keras
import tensorflow as tf

from keras_albert.convert.model_garden import CONFIG_ASSET
from keras_albert.export.spec import ExportSpec, resolve_spec
from keras_albert.models import AlbertBackbone, AlbertPretrainer
from keras_albert.models.lora import merged_lora
from keras_albert.serving.saved_model import (
    Untracked,
    captured_variables,
    checked_text_inputs,
    sentencepiece_asset,
)
from keras_albert.tasks.registry import model_kind_of
from keras_albert.text.files import write_atomically
from keras_albert.text.packing import pack_segments
from keras_albert.text.tokenizer import AlbertTokenizer

ENCODER_DIRECTORY = "encoder"
PREPROCESSOR_DIRECTORY = "preprocessor"
DEFAULT_SEQUENCE_LENGTH = 128  # the Model Garden preprocessors' default seq_length
# The interface's input names → the backbone's.
INPUT_NAMES = {
    "input_word_ids": "token_ids",
    "input_type_ids": "segment_ids",
    "input_mask": "padding_mask",
}
MASKED_LM_POSITIONS = "masked_lm_positions"


def _encoder_models(model: keras.Model) -> tuple[AlbertBackbone, AlbertPretrainer | None]:
    """A float32 copy of the backbone with every layer's output (and of the pretrainer)."""
    task = model_kind_of(model)
    if task not in ("backbone", "pretrainer"):
        raise TypeError(
            "`model` must be an AlbertBackbone or AlbertPretrainer to export as a TF-Hub "
            f"encoder. Received: model={type(model).__name__}"
        )
    source = model if task == "backbone" else model.backbone
    config = {
        **source.get_config(),
        "output_all_layers": True,
        "remat": False,  # the training graph exported is a plain model's, as its inference
        "dtype": "float32",
    }
    backbone = AlbertBackbone.from_config(config)
    if task == "backbone":
        backbone.set_weights(source.get_weights())
        return backbone, None
    pretrainer = AlbertPretrainer(backbone)
    pretrainer.set_weights(model.get_weights())
    return backbone, pretrainer


def _model_inputs(inputs: dict) -> dict:
    return {ours: inputs[theirs] for theirs, ours in INPUT_NAMES.items()}


def _encoder_outputs(encoded: dict) -> dict:
    return {
        "pooled_output": encoded["pooled_output"],
        "sequence_output": encoded["sequence_output"],
        "encoder_outputs": list(encoded["encoder_layer_outputs"]),
    }


def _reusable(functions: list, holder: tf.train.Checkpoint) -> None:
    """Sets the reusable-SavedModel attributes of `holder` from the concrete `functions`."""
    variables = captured_variables(dict(enumerate(functions)))
    holder.variables = variables
    holder.trainable_variables = [variable for variable in variables if variable.trainable]
    holder.regularization_losses = []


def tfhub_encoder(model: keras.Model, tokenizer: AlbertTokenizer) -> tf.train.Checkpoint:
    """The encoder object (see the module docstring), ready for `tf.saved_model.save`."""
    backbone, pretrainer = _encoder_models(model)
    input_specs = {name: tf.TensorSpec([None, None], tf.int32, name=name) for name in INPUT_NAMES}

    def call(inputs, training=False):
        encoded = backbone(_model_inputs(inputs), training=training)
        outputs = _encoder_outputs(encoded)
        outputs["default"] = outputs["pooled_output"]
        return outputs

    encoder = tf.train.Checkpoint()
    # autograph=False: straight-line graphs, as the serving export's.
    encoder.__call__ = tf.function(call, autograph=False)
    traced = [
        encoder.__call__.get_concrete_function(input_specs, training=training)
        for training in (False, True)
    ]
    _reusable(traced, encoder)
    if pretrainer is not None:

        def call_mlm(inputs, training=False):
            model_inputs = _model_inputs(inputs)
            encoded = backbone(model_inputs, training=training)
            outputs = _encoder_outputs(encoded)
            outputs["mlm_logits"] = pretrainer.masked_lm_head(
                encoded["sequence_output"], inputs[MASKED_LM_POSITIONS]
            )
            return outputs

        mlm = tf.train.Checkpoint()
        mlm.__call__ = tf.function(call_mlm, autograph=False)
        mlm_specs = {
            **input_specs,
            MASKED_LM_POSITIONS: tf.TensorSpec([None, None], tf.int32, name=MASKED_LM_POSITIONS),
        }
        traced_mlm = [
            mlm.__call__.get_concrete_function(mlm_specs, training=training)
            for training in (False, True)
        ]
        _reusable(traced_mlm, mlm)
        encoder.mlm = mlm
    directory = _attach_vocabulary(encoder, tokenizer)
    # The architecture, which a reader cannot tell from the variables (num_heads, num_layers).
    config_path = os.path.join(directory, CONFIG_ASSET)
    backbone.albert_config.to_json(config_path)
    encoder.albert_config = tf.saved_model.Asset(config_path)
    encoder._untracked = Untracked(backbone=backbone, pretrainer=pretrainer)
    return encoder


def tfhub_preprocessor(
    tokenizer: AlbertTokenizer, sequence_length: int = DEFAULT_SEQUENCE_LENGTH
) -> tf.train.Checkpoint:
    """The preprocessor object (see the module docstring), ready for `tf.saved_model.save`."""
    ids = {
        "cls_id": tokenizer.cls_id,
        "sep_id": tokenizer.sep_id,
        "pad_id": tokenizer.pad_id,
    }

    def bert_pack_inputs(inputs, seq_length=sequence_length):
        segments = [
            segment.merge_dims(1, -1) if segment.ragged_rank > 1 else segment for segment in inputs
        ]
        packed = pack_segments(segments, seq_length, **ids)  # (batch, seq_length) each
        return {
            "input_word_ids": packed["token_ids"],
            "input_mask": tf.cast(packed["padding_mask"], tf.int32),
            "input_type_ids": packed["segment_ids"],
        }

    def preprocess(sentences):
        return bert_pack_inputs([tokenizer(sentences)])

    def special_tokens():
        return {
            "vocab_size": tf.constant(tokenizer.vocabulary_size, tf.int32),
            "start_of_sequence_id": tf.constant(tokenizer.cls_id, tf.int32),
            "end_of_segment_id": tf.constant(tokenizer.sep_id, tf.int32),
            "padding_id": tf.constant(tokenizer.pad_id, tf.int32),
            "mask_id": tf.constant(tokenizer.mask_id, tf.int32),
        }

    sentences_spec = tf.TensorSpec([None], tf.string, name="sentences")
    preprocessor = tf.train.Checkpoint()
    preprocessor.tokenizer = tokenizer  # its SentencePiece resource (or lookup table)
    preprocessor.__call__ = tf.function(
        preprocess, input_signature=[sentences_spec], autograph=False
    )
    tokenize = tf.train.Checkpoint()
    tokenize.__call__ = tf.function(
        lambda sentences: tokenizer(sentences), input_signature=[sentences_spec], autograph=False
    )
    tokenize.get_special_tokens_dict = tf.train.Checkpoint()
    tokenize.get_special_tokens_dict.__call__ = tf.function(
        special_tokens, input_signature=[], autograph=False
    )
    preprocessor.tokenize = tokenize
    pack = tf.train.Checkpoint()
    pack.__call__ = tf.function(bert_pack_inputs, autograph=False)
    for ragged_rank in (1, 2):
        for num_segments in (1, 2):
            segment_spec = tf.RaggedTensorSpec([None] * (ragged_rank + 1), tf.int32)
            pack.__call__.get_concrete_function(
                [segment_spec] * num_segments, seq_length=tf.TensorSpec([], tf.int32)
            )
    preprocessor.bert_pack_inputs = pack
    _attach_vocabulary(preprocessor, tokenizer)
    return preprocessor


def _attach_vocabulary(holder: tf.train.Checkpoint, tokenizer: AlbertTokenizer) -> str:
    # Model Garden's ALBERT encoders carry their SentencePiece model as `sp_model_file`; its
    # BERT ones a WordPiece `vocab_file` and `do_lower_case`.
    directory, asset = sentencepiece_asset(tokenizer)
    holder._asset_directory = Untracked(directory=directory)  # removed with the holder
    if tokenizer.wordpiece:
        holder.vocab_file = asset
        holder.do_lower_case = tf.Variable(tokenizer.lowercase, trainable=False)
    else:
        holder.sp_model_file = asset
    return directory.name  # the asset files' temporary directory


def export_tfhub(
    model: keras.Model,
    tokenizer: AlbertTokenizer,
    export_dir: str | os.PathLike,
    spec: ExportSpec | None = None,
    **fields,
) -> str:
    """Writes `export_dir/encoder/` and `export_dir/preprocessor/`; returns `export_dir`.

    Args:
        model: an `AlbertBackbone`, or an `AlbertPretrainer` (the encoder gets `.mlm`).
        tokenizer: the model's tokenizer.
        export_dir: the directory: new or empty (both SavedModels are written beside it, then
            renamed into place together: a failure leaves neither).
        spec: a "tfhub" `ExportSpec`: its `max_sequence_length` is the preprocessor's default
            packed length; default 128, or the model's `max_sequence_length` if shorter.
        **fields: the spec's fields (`resolve_spec`).
    """
    spec = resolve_spec(spec, fields, "tfhub")
    encoder = tfhub_encoder(merged_lora(model), tokenizer)
    config = encoder._untracked.backbone.albert_config
    sequence_length = spec.max_sequence_length
    if sequence_length is None:
        sequence_length = min(DEFAULT_SEQUENCE_LENGTH, config.max_sequence_length)
    sequence_length = checked_text_inputs(tokenizer, config, sequence_length)
    preprocessor = tfhub_preprocessor(tokenizer, sequence_length)

    def write(directory: str) -> None:
        tf.saved_model.save(encoder, os.path.join(directory, ENCODER_DIRECTORY))
        tf.saved_model.save(preprocessor, os.path.join(directory, PREPROCESSOR_DIRECTORY))

    return write_atomically(export_dir, write, directory=True, name="export_dir")
