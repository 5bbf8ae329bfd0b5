"""The classification SavedModel: sentences (or pairs) in, classes or a score out.

Signatures of `ClassificationServingModule` (an `AlbertClassifier`), the string-in packing of
`keras_albert.serving.saved_model.AlbertServingModule` with the classifier's outputs:

- `serving_default`: `text` (and `text_pair` with `text_pair=True`), `tf.string` `[batch]` →
  the outputs below.
- `serve_token_ids`: `token_ids`, `segment_ids`, `padding_mask`, `int32` `[batch, seq]` → the
  same outputs.
- `serve_examples`: serialized `tf.Example`s with bytes features `text` (and `text_pair`) in
  `inputs` → `classes` (`string [batch, num_classes]`) and `scores` (`float32 [batch,
  num_classes]`), method `tensorflow/serving/classify`, the structure TF Serving's Classify API
  requires; a regressor gives `outputs` (`float32 [batch]`) under `tensorflow/serving/regress`.

Outputs (float32 except where said):
- classifier (`num_classes` > 1): `logits`, `probabilities` `[batch, num_classes]`, `label`
  (`int32 [batch]`, the argmax);
- regressor (`num_classes=1`): `score` `[batch]`.
"""

from __future__ import annotations

from collections.abc import Sequence

import keras
import tensorflow as tf

from keras_albert.serving.saved_model import (
    SERVE_EXAMPLES,
    AlbertServingModule,
    set_method_name,
)
from keras_albert.tasks.classification.model import AlbertClassifier
from keras_albert.text.tokenizer import AlbertTokenizer


def checked_class_names(model: AlbertClassifier, class_names: Sequence[str] | None):
    """`class_names` as a tuple of one string per class of `model` (by default "0", "1",
    ...), or None for a regressor, which has no classes."""
    if model.num_classes == 1:
        if class_names is not None:
            raise ValueError(
                "`class_names` must be None for a regression model (they name a classifier's "
                f"classes). Received: class_names={class_names!r}"
            )
        return None
    if class_names is None:
        return tuple(str(index) for index in range(model.num_classes))
    class_names = tuple(class_names)
    if len(class_names) != model.num_classes or not all(
        isinstance(name, str) for name in class_names
    ):
        raise ValueError(
            f"`class_names` must be {model.num_classes} strings (one per class). "
            f"Received: class_names={class_names!r}"
        )
    return class_names


class ClassificationServingModule(AlbertServingModule):
    """Serving endpoints of an `AlbertClassifier` (see the module docstring): a classifier, or a
    regressor with `num_classes=1`.

    Args:
        model: an `AlbertClassifier`.
        tokenizer: the `AlbertTokenizer` the model was trained with.
        text_pair: whether `serving_default` and `serve_examples` take a second segment,
            `text_pair`.
        max_sequence_length: longest packed sequence; by default the backbone's
            `max_sequence_length`, and never more.
        pad_to_max_length: pad every batch to `max_sequence_length` instead of to its longest
            sequence (for comparison; slower).
        class_names: names of the classes for `serve_examples`' `classes` output; by default
            "0", "1", ... None for a regressor.
        precision: "float32" or "bfloat16" (see `keras_albert.serving.precision`).
        num_layers: apply the shared block this many times (1 to the trained depth; sharing
            "all" only); default: the trained depth.

    Example:
    >>> import tensorflow as tf
    >>> from keras_albert import AlbertBackbone, AlbertClassifier, AlbertTokenizer
    >>> from keras_albert.tasks.classification.serving import ClassificationServingModule
    >>> tokenizer = AlbertTokenizer("tests/data/30k-clean.model")
    >>> backbone = AlbertBackbone(vocabulary_size=30000, embedding_dim=8, hidden_dim=16,
    ...                           intermediate_dim=32, num_layers=2, num_heads=2)
    >>> classifier = AlbertClassifier(backbone, num_classes=2)
    >>> module = ClassificationServingModule(classifier, tokenizer)
    >>> outputs = module.endpoints["serving_default"](text=tf.constant(["a fine film"]))
    >>> tuple(outputs["label"].shape)
    (1,)
    >>> path = module.save("/tmp/albert_sst2/1")
    """

    def __init__(
        self,
        model: keras.Model,
        tokenizer: AlbertTokenizer,
        text_pair: bool = False,
        max_sequence_length: int | None = None,
        pad_to_max_length: bool = False,
        class_names: Sequence[str] | None = None,
        precision: str = "float32",
        num_layers: int | None = None,
    ):
        # Checked once the base has refused a model that is no AlbertClassifier
        # (`_serving_task`), before `serve_examples`, which names the classes, is built.
        self.class_names = class_names
        super().__init__(
            model,
            tokenizer,
            text_pair=text_pair,
            max_sequence_length=max_sequence_length,
            pad_to_max_length=pad_to_max_length,
            precision=precision,
            num_layers=num_layers,
        )

    def _serving_task(self, model: keras.Model) -> str:
        if not isinstance(model, AlbertClassifier):
            raise TypeError(
                f"`model` must be an AlbertClassifier. Received: model={type(model).__name__}"
            )
        return "regression" if model.num_classes == 1 else "classification"

    def _model_outputs(self, inputs: dict) -> dict:
        logits = tf.cast(self.model(inputs, training=False), tf.float32)  # (batch, num_classes)
        if self.task == "regression":
            return {"score": logits[:, 0]}
        return {
            "logits": logits,
            "probabilities": tf.nn.softmax(logits, axis=-1),
            "label": tf.argmax(logits, axis=-1, output_type=tf.int32),
        }

    def _build_endpoints(self) -> dict:
        self.class_names = checked_class_names(self.model, self.class_names)
        functions = super()._build_endpoints()

        def serve_examples(inputs):
            return self._example_outputs(inputs)

        functions[SERVE_EXAMPLES] = tf.function(
            serve_examples, autograph=False
        ).get_concrete_function(inputs=tf.TensorSpec([None], tf.string))
        return functions

    def _example_outputs(self, serialized: tf.Tensor) -> dict:
        features = {"text": tf.io.FixedLenFeature([], tf.string, default_value="")}
        if self.text_pair:
            features["text_pair"] = tf.io.FixedLenFeature([], tf.string, default_value="")
        parsed = tf.io.parse_example(serialized, features)  # (batch,) each
        outputs = self.outputs(self.pack(parsed["text"], parsed.get("text_pair")))
        if self.task == "regression":
            return {tf.saved_model.REGRESS_OUTPUTS: outputs["score"]}
        batch_size = tf.shape(serialized)[0]
        classes = tf.tile(tf.constant([self.class_names]), tf.stack([batch_size, 1]))
        return {
            tf.saved_model.CLASSIFY_OUTPUT_CLASSES: classes,
            tf.saved_model.CLASSIFY_OUTPUT_SCORES: outputs["probabilities"],
        }

    def save(self, export_dir) -> str:
        """Writes the SavedModel to `export_dir` (which must not exist or be empty), with the
        Classify (or, for a regressor, Regress) method name on `serve_examples`."""
        export_dir = super().save(export_dir)
        method = (
            tf.saved_model.REGRESS_METHOD_NAME
            if self.task == "regression"
            else tf.saved_model.CLASSIFY_METHOD_NAME
        )
        set_method_name(export_dir, SERVE_EXAMPLES, method)
        return export_dir
