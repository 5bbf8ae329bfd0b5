"""The common part of the task SavedModels (question answering, multiple choice, NER).

`TaskServingModule` holds a task model's variables, its tokenizer (whose SentencePiece resource
goes into the graph) and the SentencePiece model as an asset, and saves the `tf.function`s a
subclass builds in `_build_endpoints`, as `AlbertServingModule` does for a backbone (see
`keras_albert.serving.saved_model` for why a `tf.Module` and not `keras.export.ExportArchive`).
A subclass also gives `warmup_inputs()`: `(signature name, inputs)` pairs for the warmup file.
"""

from __future__ import annotations

import os

import keras
import tensorflow as tf

from keras_albert.serving.precision import ModelCall
from keras_albert.serving.saved_model import (
    SERVE_TOKEN_IDS,
    SERVING_DEFAULT,
    Untracked,
    captured_variables,
    checked_text_inputs,
    checked_token_inputs,
    sentencepiece_asset,
)
from keras_albert.text.tokenizer import AlbertTokenizer

TOKEN_INPUTS = ("token_ids", "segment_ids", "padding_mask")


class TaskServingModule(tf.Module):
    """Base of the task serving modules; see the subclasses for the endpoints.

    Args:
        model: the task model (its `backbone` is an `AlbertBackbone`).
        tokenizer: the `AlbertTokenizer` the model was trained with.
        max_sequence_length: the packed length; by default the backbone's
            `max_sequence_length`, and never more.
    """

    task = None

    def __init__(
        self, model: keras.Model, tokenizer: AlbertTokenizer, max_sequence_length: int | None
    ):
        super().__init__(name="albert_serving")
        config = model.backbone.albert_config
        self.max_sequence_length = checked_text_inputs(tokenizer, config, max_sequence_length)
        self.tokenizer = tokenizer
        self.text_pair = False
        self._untracked = Untracked(
            model=model, model_call=ModelCall(model, lambda inputs: model(inputs, training=False))
        )
        self._asset_directory, self.sentencepiece_model = sentencepiece_asset(tokenizer)

    def _finish(self) -> None:
        """Builds the endpoints and collects the variables they capture (call last in init)."""
        self.endpoints = self._build_endpoints()
        self.model_variables = captured_variables(self.endpoints)

    @property
    def model(self) -> keras.Model:
        return self._untracked.model

    def call_model(self, inputs: dict):
        """`model(inputs)` (inference), through the one graph function every signature shares
        (`keras_albert.serving.precision.ModelCall`)."""
        return self._untracked.model_call(inputs)

    def _build_endpoints(self) -> dict:
        raise NotImplementedError

    # The token-id model (`serve_token_ids` without its input checks; TFLite exports it):
    # inputs of shape `token_input_shape` at batch 1, `None` for the sequence.
    token_input_shape = (1, None)

    def token_outputs(self, inputs: dict) -> dict:
        """`serve_token_ids`' outputs of checked `token_ids`, `segment_ids`, `padding_mask`."""
        raise NotImplementedError

    def warmup_inputs(self) -> list[tuple[str, dict]]:
        raise NotImplementedError

    def text_warmup_inputs(self, texts: list[str]) -> list[tuple[str, dict]]:
        """`warmup_inputs` of a `text_endpoints` module whose `pack(text)` gives its token
        inputs: batches of 1, 2, 4 and 8 of `texts` (cycled), to both signatures."""
        result = []
        for batch_size in (1, 2, 4, 8):
            batch = tf.constant([texts[i % len(texts)] for i in range(batch_size)])
            result.append((SERVING_DEFAULT, {"text": batch.numpy()}))
            inputs = self.pack(batch)
            result.append((SERVE_TOKEN_IDS, {k: v.numpy() for k, v in inputs.items()}))
        return result

    def checked_token_inputs(self, token_ids, segment_ids, padding_mask) -> dict:
        """The token inputs, with assertions that the model can embed them."""
        config = self.model.backbone.albert_config
        return checked_token_inputs(config, token_ids, segment_ids, padding_mask)

    def text_endpoints(self, serve) -> dict:
        """The endpoints of a module whose requests are one text per example:
        `serving_default` (`text`, `tf.string [batch]`, answered by `serve(text)`) and
        `serve_token_ids` (`token_outputs` of the checked token inputs)."""

        def serve_text(text):
            return serve(text)

        def serve_token_ids(token_ids, segment_ids, padding_mask):
            return self.token_outputs(
                self.checked_token_inputs(token_ids, segment_ids, padding_mask)
            )

        return {
            SERVING_DEFAULT: concrete(serve_text, text=string_spec(None)),
            SERVE_TOKEN_IDS: concrete(serve_token_ids, **token_specs()),
        }

    def save(self, export_dir: str | os.PathLike) -> str:
        """Writes the SavedModel to `export_dir` (which must not exist or be empty)."""
        export_dir = os.fspath(export_dir)
        tf.saved_model.save(self, export_dir, signatures=self.endpoints)
        return export_dir


def concrete(function, **specs):
    """A straight-line concrete function (no autograph, as the classifier's endpoints)."""
    return tf.function(function, autograph=False).get_concrete_function(**specs)


def string_spec(*shape) -> tf.TensorSpec:
    return tf.TensorSpec(list(shape), tf.string)


def token_specs(rank: int = 2) -> dict:
    return {name: tf.TensorSpec([None] * rank, tf.int32) for name in TOKEN_INPUTS}


def same_batch_size(endpoint: str, **inputs: tf.Tensor) -> dict[str, tf.Tensor]:
    """`inputs`, once their batch sizes (first dimensions) agree; else an InvalidArgumentError
    that names the inputs and both sizes, instead of the shape error of whichever op first
    combines them (`Incompatible shapes … [[node sub_18]]`). Stock ops only (Assert)."""
    (first, reference), *others = inputs.items()
    size = tf.shape(reference)[0]
    checks = [
        tf.debugging.Assert(
            tf.equal(size, tf.shape(value)[0]),
            [
                f"{endpoint}: `{first}` and `{name}` must have the same batch size.",
                f"`{first}` batch size:",
                size,
                f"`{name}` batch size:",
                tf.shape(value)[0],
            ],
        )
        for name, value in others
    ]
    with tf.control_dependencies(checks):
        return {name: tf.identity(value) for name, value in inputs.items()}
