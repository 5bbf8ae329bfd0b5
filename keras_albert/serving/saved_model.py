"""SavedModels for TF Serving: raw text in, model outputs out, tokenization inside the graph.

`AlbertServingModule(model, tokenizer)` (written by `keras_albert.export.export_saved_model`)
serves a backbone or pretrainer, and is the base of the classifier's module
(`keras_albert.tasks.classification.serving.ClassificationServingModule`), with these
signatures:

- `serving_default`: `text` (and `text_pair` with `text_pair=True`), `tf.string` `[batch]` →
  the outputs below. The original ALBERT normalization, SentencePiece and packing
  (`AlbertTokenizer` + `AlbertPacker`) run in the graph; the batch is padded to its longest
  packed sequence, at most `max_sequence_length` (or always to `max_sequence_length` with
  `pad_to_max_length=True`).
- `serve_token_ids`: `token_ids`, `segment_ids`, `padding_mask`, `int32` `[batch, seq]` → the
  same outputs, for clients that tokenize themselves (with the SentencePiece model, or the
  WordPiece vocabulary, in `assets/`).

A subclass adds its own (the classifier's `serve_examples`, `SERVE_EXAMPLES`: TF Serving's
Classify and Regress APIs, whose method name `set_method_name` writes).

Outputs (all float32 except where said):
- backbone (`AlbertBackbone`): `pooled_output` `[batch, hidden_dim]`, `sequence_output`
  `[batch, seq, hidden_dim]`, `padding_mask` (`int32 [batch, seq]`, 1 on real tokens);
- pretrainer (`AlbertPretrainer`): the backbone outputs plus `sop_logits` `[batch, 2]`.

The endpoints are `tf.function`s on a `tf.Module`, saved with `tf.saved_model.save`, rather than
`keras.export.ExportArchive`: the archive keeps only variables and lookup-table resources of what
it tracks, so it cannot carry the SentencePiece model file as an asset, and it writes every
endpoint as a Predict signature. With a module the signatures are the same `tf.function`s with
named `TensorSpec`s; the Classify/Regress method names are set in `saved_model.pb` afterwards.
No function is compiled with XLA (`tensorflow_model_server` runs without it by default).

`precision` ("float32", "bfloat16") and `num_layers` (the shared block applied fewer
times than trained) export a copy of the model made by `keras_albert.serving.precision`; the
outputs stay float32.
"""

from __future__ import annotations

import os
import tempfile

import keras
import tensorflow as tf

from keras_albert.models import AlbertBackbone, AlbertPretrainer
from keras_albert.serving.precision import ModelCall, serving_model
from keras_albert.text.tokenizer import AlbertTokenizer
from keras_albert.validation import require_bool, require_int

SERVING_DEFAULT = "serving_default"
SERVE_TOKEN_IDS = "serve_token_ids"
SERVE_EXAMPLES = "serve_examples"  # a subclass's: the classifier's Classify/Regress signature
# What `AlbertServingModule` itself serves; a task type's head is served by its own module
# (`TaskType.serving_module`, dispatched by `keras_albert.export.modules.serving_module`).
TASKS = ("backbone", "pretrainer")
SENTENCEPIECE_ASSET = "sentencepiece.model"
VOCABULARY_ASSET = "vocab.txt"  # a WordPiece tokenizer's vocabulary, as BERT names it
_TOKEN_INPUTS = ("token_ids", "segment_ids", "padding_mask")


def _backbone_of(model: keras.Model) -> AlbertBackbone:
    return model if isinstance(model, AlbertBackbone) else model.backbone


def captured_variables(endpoints: dict) -> list:
    """The tf.Variables the `endpoints` (concrete functions) read, to be saved with them.

    Not the Keras model, whose own call signatures would be traced too, nor its Keras variable
    wrappers, which would be saved as separate variables that the TF1 session loader restores
    while the graph reads the captured ones (ExportArchive collects them so too). Only the
    variables whose handles a function captures: `ModelCall` makes the model weights graph
    constants, and a weight the graph never reads would be written and restored for nothing.
    Sorted by name so that the checkpoint keys do not depend on the tracing order.
    """
    captured = {}
    for function in endpoints.values():
        handles = {id(tensor) for tensor in function.captured_inputs}
        for variable in function.variables:
            if id(variable.handle) in handles:
                captured.setdefault(id(variable), variable)
    return sorted(captured.values(), key=lambda variable: variable.name)


def checked_text_inputs(tokenizer, config, max_sequence_length: int | None) -> int:
    """What every string-in export checks first: `tokenizer` is an `AlbertTokenizer` with the
    vocabulary of a model of `config`, and `max_sequence_length` (by default the model's) is at
    most the model's; returns the length."""
    if not isinstance(tokenizer, AlbertTokenizer):
        raise TypeError(
            "`tokenizer` must be an AlbertTokenizer. "
            f"Received: tokenizer={type(tokenizer).__name__}"
        )
    if tokenizer.vocabulary_size != config.vocabulary_size:
        raise ValueError(
            f"`tokenizer` must have the model's vocabulary_size={config.vocabulary_size} "
            f"pieces. Received: a tokenizer of {tokenizer.vocabulary_size} pieces"
        )
    if max_sequence_length is None:
        max_sequence_length = config.max_sequence_length
    require_int("max_sequence_length", max_sequence_length, 3)
    if max_sequence_length > config.max_sequence_length:
        raise ValueError(
            "`max_sequence_length` must be at most the model's max_sequence_length="
            f"{config.max_sequence_length}. Received: max_sequence_length={max_sequence_length}"
        )
    return max_sequence_length


def checked_token_inputs(config, token_ids, segment_ids, padding_mask) -> dict:
    """The `serve_token_ids` inputs, with assertions that a model of `config` can embed them
    (the last axis of `token_ids` is the sequence; any leading axes are batch or choices)."""
    checks = [
        tf.debugging.assert_less_equal(
            tf.shape(token_ids)[-1],
            config.max_sequence_length,
            message=f"serve_token_ids: sequences longer than the model's "
            f"max_sequence_length={config.max_sequence_length}",
        ),
        tf.debugging.assert_non_negative(token_ids, message="serve_token_ids: negative token_ids"),
        tf.debugging.assert_less(
            token_ids,
            config.vocabulary_size,
            message=f"serve_token_ids: token_ids must be < vocabulary_size="
            f"{config.vocabulary_size}",
        ),
    ]
    with tf.control_dependencies(checks):
        return {
            "token_ids": tf.identity(token_ids),
            "segment_ids": segment_ids,
            "padding_mask": padding_mask,
        }


class AlbertServingModule(tf.Module):
    """The serving endpoints of a keras_albert backbone or pretrainer and its tokenizer, ready
    to save; the base of the classifier's module (`ClassificationServingModule`).

    Holds the model's variables, the tokenizer (whose SentencePiece resource goes into the
    graph) and the SentencePiece model file as an asset. `endpoints` maps signature names to
    concrete functions for `tf.saved_model.save`; `pack` and `outputs` are the two halves of
    `serving_default`, usable eagerly (e.g. to build warmup requests for `serve_token_ids`).

    A subclass serves another model on the same string-in packing: it says which model it
    serves (`_serving_task`), computes its outputs (`_model_outputs`) and may add endpoints
    (`_build_endpoints`), whose method names it writes after `save` (`set_method_name`).

    Args:
        model: an `AlbertBackbone` or `AlbertPretrainer` (a subclass's own model).
        tokenizer: the `AlbertTokenizer` the model was trained with.
        text_pair: whether `serving_default` takes a second segment, `text_pair`.
        max_sequence_length: longest packed sequence; by default the backbone's
            `max_sequence_length`, and never more.
        pad_to_max_length: pad every batch to `max_sequence_length` instead of to its longest
            sequence (for comparison; slower).
        precision: "float32" or "bfloat16" (see `keras_albert.serving.precision`).
        num_layers: apply the shared block this many times (1 to the trained depth; sharing
            "all" only); default: the trained depth.

    Example:
    >>> import tensorflow as tf
    >>> from keras_albert import AlbertBackbone, AlbertTokenizer
    >>> from keras_albert.serving.saved_model import AlbertServingModule
    >>> tokenizer = AlbertTokenizer("tests/data/30k-clean.model")
    >>> backbone = AlbertBackbone(vocabulary_size=30000, embedding_dim=8, hidden_dim=16,
    ...                           intermediate_dim=32, num_layers=2, num_heads=2)
    >>> module = AlbertServingModule(backbone, tokenizer)
    >>> outputs = module.endpoints["serving_default"](text=tf.constant(["a fine film"]))
    >>> tuple(outputs["pooled_output"].shape)
    (1, 16)
    >>> path = module.save("/tmp/albert_base/1")
    """

    def __init__(
        self,
        model: keras.Model,
        tokenizer: AlbertTokenizer,
        text_pair: bool = False,
        max_sequence_length: int | None = None,
        pad_to_max_length: bool = False,
        precision: str = "float32",
        num_layers: int | None = None,
    ):
        super().__init__(name="albert_serving")
        task = self._serving_task(model)
        model = serving_model(model, precision, num_layers)
        config = _backbone_of(model).albert_config
        max_sequence_length = checked_text_inputs(tokenizer, config, max_sequence_length)
        require_bool("text_pair", text_pair)
        require_bool("pad_to_max_length", pad_to_max_length)

        self.task = task
        self.precision = precision
        self.text_pair = text_pair
        self.max_sequence_length = max_sequence_length
        self.pad_to_max_length = pad_to_max_length
        self.tokenizer = tokenizer
        # Plain holders hide the Keras objects from tf.Module's attribute tracking.
        self._untracked = Untracked(
            model=model,
            packer=tokenizer.packer(max_sequence_length),
            model_call=ModelCall(model, self._model_outputs),
        )
        self._asset_directory, self.sentencepiece_model = sentencepiece_asset(tokenizer)
        self.endpoints = self._build_endpoints()
        self.model_variables = captured_variables(self.endpoints)

    def _serving_task(self, model: keras.Model) -> str:
        """What this module serves `model` as (its `task`: one of `TASKS`); refuses any other
        model. Not the model's kind (`keras_albert.tasks.registry.model_kind_of`, which this
        base of the serving modules may not import): the module's mode."""
        if isinstance(model, AlbertPretrainer):
            return "pretrainer"
        if isinstance(model, AlbertBackbone):
            return "backbone"
        raise TypeError(
            "`model` must be an AlbertBackbone or AlbertPretrainer; a task type's head is "
            "served by its task type's module (keras_albert.export.serving_module). "
            f"Received: model={type(model).__name__}"
        )

    @property
    def model(self) -> keras.Model:
        return self._untracked.model

    # ----------------------------------------------------------------------------------------
    # The two halves of serving_default.

    def pack(self, text: tf.Tensor, text_pair: tf.Tensor | None = None) -> dict:
        """Tokenized and packed model inputs of a `[batch]` string tensor (and its pairs)."""
        segments = [self.tokenizer(text)]  # (batch, None) int32 each
        if text_pair is not None:
            segments.append(self.tokenizer(text_pair))
        packed = self._untracked.packer(tuple(segments))  # (batch, max_sequence_length) each
        padding_mask = tf.cast(packed["padding_mask"], tf.int32)
        inputs = {
            "token_ids": packed["token_ids"],
            "segment_ids": packed["segment_ids"],
            "padding_mask": padding_mask,
        }
        if self.pad_to_max_length:
            return inputs
        # Every packed row has at least [CLS] [SEP]; the floor of 2 also covers a batch of 0,
        # whose reduce_max is the int32 minimum.
        longest = tf.maximum(tf.reduce_max(tf.reduce_sum(padding_mask, axis=1)), 2)
        return {name: value[:, :longest] for name, value in inputs.items()}

    def outputs(self, inputs: dict) -> dict:
        """The model's outputs (float32, batch-major) of packed `token_ids`, `segment_ids`,
        ..., through the one graph function every signature shares (`ModelCall`)."""
        return self._untracked.model_call(inputs)

    token_input_shape = (1, None)  # the TFLite export's inputs: batch 1, any length

    def token_outputs(self, inputs: dict) -> dict:
        """`serve_token_ids`' outputs (the same as `outputs`; every serving module has it)."""
        return self.outputs(inputs)

    def _model_outputs(self, inputs: dict) -> dict:
        model = self.model
        backbone = _backbone_of(model)
        encoded = backbone(inputs, training=False)
        result = {
            "pooled_output": tf.cast(encoded["pooled_output"], tf.float32),
            "sequence_output": tf.cast(encoded["sequence_output"], tf.float32),
            "padding_mask": tf.cast(inputs["padding_mask"], tf.int32),
        }
        if self.task == "pretrainer":
            sop_logits = model.sentence_order_head(encoded["pooled_output"], training=False)
            result["sop_logits"] = tf.cast(sop_logits, tf.float32)
        return result

    # ----------------------------------------------------------------------------------------
    # Signatures.

    def _build_endpoints(self) -> dict:
        text_spec = tf.TensorSpec([None], tf.string)
        if self.text_pair:

            def serve_text(text, text_pair):
                return self.outputs(self.pack(text, text_pair))

            text_specs = {"text": text_spec, "text_pair": text_spec}
        else:

            def serve_text(text):
                return self.outputs(self.pack(text))

            text_specs = {"text": text_spec}

        def serve_token_ids(token_ids, segment_ids, padding_mask):
            config = _backbone_of(self.model).albert_config
            checked = checked_token_inputs(config, token_ids, segment_ids, padding_mask)
            return self.outputs(checked)

        token_spec = tf.TensorSpec([None, None], tf.int32)
        # autograph=False: the endpoints are straight-line graphs, as in ExportArchive.
        return {
            SERVING_DEFAULT: tf.function(serve_text, autograph=False).get_concrete_function(
                **text_specs
            ),
            SERVE_TOKEN_IDS: tf.function(serve_token_ids, autograph=False).get_concrete_function(
                **{name: token_spec for name in _TOKEN_INPUTS}
            ),
        }

    def save(self, export_dir: str | os.PathLike) -> str:
        """Writes the SavedModel to `export_dir` (which must not exist or be empty)."""
        export_dir = os.fspath(export_dir)
        tf.saved_model.save(self, export_dir, signatures=self.endpoints)
        return export_dir


class Untracked:
    """A plain holder: hides Keras objects (the model, packer, `ModelCall`) from tf.Module's
    attribute tracking."""

    def __init__(self, **objects):
        self.__dict__.update(objects)


def sentencepiece_asset(tokenizer) -> tuple[tempfile.TemporaryDirectory, tf.saved_model.Asset]:
    """The tokenizer's SentencePiece model (or WordPiece vocabulary) written to a temporary file,
    as the export's asset. Keep the directory (returned first) alive as long as the module: it
    is removed with it."""
    directory = tempfile.TemporaryDirectory(prefix="albert_spm_")
    name = VOCABULARY_ASSET if tokenizer.wordpiece else SENTENCEPIECE_ASSET
    path = os.path.join(directory.name, name)
    with open(path, "wb") as file:
        file.write(tokenizer.serialized_model)
    return directory, tf.saved_model.Asset(path)


def set_method_name(export_dir: str, signature_name: str, method_name: str) -> None:
    """Sets the method name of the signature `signature_name` in the SavedModel at `export_dir`
    (and rewrites its fingerprint to match)."""
    # tf.saved_model.save writes every signature as Predict; TF Serving's Classify and Regress
    # APIs refuse a signature whose method_name is not theirs.
    from tensorflow.core.protobuf import saved_model_pb2
    from tensorflow.python.saved_model import pywrap_saved_model

    path = os.path.join(export_dir, "saved_model.pb")
    saved_model = saved_model_pb2.SavedModel()
    with tf.io.gfile.GFile(path, "rb") as file:
        saved_model.ParseFromString(file.read())
    for meta_graph in saved_model.meta_graphs:
        meta_graph.signature_def[signature_name].method_name = method_name
    with tf.io.gfile.GFile(path, "wb") as file:
        file.write(saved_model.SerializeToString(deterministic=True))
    # The fingerprint holds a checksum of saved_model.pb; write it again to match.
    fingerprint = pywrap_saved_model.fingerprinting.CreateFingerprintDef(export_dir)
    with tf.io.gfile.GFile(os.path.join(export_dir, "fingerprint.pb"), "wb") as file:
        file.write(fingerprint)
