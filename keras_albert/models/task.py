"""`AlbertTask`: what the models that wrap an `AlbertBackbone` share (their config, the
preprocessor they may carry, `from_preset`)."""

import keras

from keras_albert._startup import tensorflow_installed
from keras_albert.models.functional import FunctionalModel

# `from_preset`'s and `save_to_preset`'s implementations, set by `keras_albert.convert.presets`
# (the converters read the models; the models do not import them).
_preset_loaders = {}


def register_preset_loader(load, save) -> None:
    """Sets the functions behind `from_preset` (`load(model_class, source, **kwargs)`) and
    `save_to_preset` (`save(model, directory)`)."""
    _preset_loaders.update(load=load, save=save)


def registered(name: str):
    """The registered "load" or "save" function."""
    if not _preset_loaders:  # `import keras_albert` registers them
        import importlib

        importlib.import_module("keras_albert")
    return _preset_loaders[name]


def load_preset(model_class, source, **kwargs):
    """`model_class.from_preset(source, **kwargs)`, through the registered loader."""
    return registered("load")(model_class, source, **kwargs)


class AlbertTask(FunctionalModel):
    """Base of the functional models built on an `AlbertBackbone`; serializes the backbone and
    the preprocessor the model carries.

    Subclasses store their extra constructor arguments in `task_config()`. A model with one
    output tensor (not a dict) names it `OUTPUT_NAME` where a format names its outputs (ONNX).

    With a `preprocessor` (a keyword argument of every task model, e.g. an
    `AlbertClassifierPreprocessor`), `fit`, `predict` and `evaluate` take raw inputs (strings,
    pairs of strings), mapped through it in `tf.data` as keras-hub's tasks do (arrays and lists
    preprocessed once, before the first pass); without one
    (`None`, the default) they take packed token ids.
    """

    OUTPUT_NAME = "logits"

    def __init__(self, *args, preprocessor=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.preprocessor = preprocessor

    @classmethod
    def from_preset(cls, source, **kwargs):
        """This model with the weights, config and tokenizer of `source` (anything
        `keras_albert.load_checkpoint` reads); see `keras_albert.convert.presets.from_preset`."""
        return load_preset(cls, source, **kwargs)

    def save_to_preset(self, directory) -> None:
        """Writes the model, and the tokenizer of the preprocessor it carries, as a preset
        directory that this class's `from_preset` loads: a keras-hub preset, which keras-hub's
        `from_preset` (`AlbertTextClassifier`, `AlbertMaskedLM`) loads too, or for a task
        keras-hub has no class for, `model.keras` with the tokenizer beside it; see
        `keras_albert.convert.presets.save_to_preset`."""
        registered("save")(self, directory)

    def task_config(self) -> dict:
        return {}

    def get_config(self):
        config = {
            "backbone": keras.saving.serialize_keras_object(self.backbone),
            **self.task_config(),
            "name": self.name,
            "trainable": self.trainable,
        }
        if self.preprocessor is not None:
            config["preprocessor"] = keras.saving.serialize_keras_object(self.preprocessor)
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["backbone"] = keras.saving.deserialize_keras_object(config["backbone"])
        if isinstance(config.get("preprocessor"), dict):
            config["preprocessor"] = keras.saving.deserialize_keras_object(config["preprocessor"])
        return cls(**config)

    def _preprocessed(self, x, y, sample_weight, batch_size, shuffle=False) -> dict:
        """Keras's `x` (and `y`, `sample_weight`, `batch_size`) for raw inputs: a
        `tf.data.Dataset` mapped through the preprocessor (its rows shuffled anew every epoch
        where `shuffle`); where TensorFlow is not installed, the arrays the preprocessor's
        Python path gives (`TokenizerPreprocessor.PYTHON_PATH`), which Keras shuffles."""
        if not tensorflow_installed():
            x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(
                self.preprocess(x, y, sample_weight)
            )
            return {"x": x, "y": y, "sample_weight": sample_weight, "batch_size": batch_size}
        from keras_albert.text.preprocessing import preprocessed_dataset  # TensorFlow's

        return {
            "x": preprocessed_dataset(
                self._traced_preprocess(), x, y, sample_weight, batch_size, shuffle=shuffle
            )
        }

    def _traced_preprocess(self):
        """`preprocess` as a `tf.function`, traced once per input structure and kept for the
        next `fit`/`predict`/`evaluate` while `preprocessor` stays the same layer (the holder
        is a plain object: Keras and TensorFlow track and save no part of it)."""
        import tensorflow as tf

        held = getattr(self, "_preprocess_function", None)
        if held is None or held.preprocessor is not self.preprocessor:
            held = _TracedPreprocess(
                self.preprocessor, tf.function(self.preprocess, reduce_retracing=True)
            )
            self._preprocess_function = held
        return held.function

    def preprocess(self, x, y=None, sample_weight=None):
        """The model's `(x, y, sample_weight)` of a raw batch (in `tf.data`, or in Python where
        TensorFlow is not installed): the preprocessor's
        output. A head whose inputs or labels depend on its own options overrides it (the
        question answerer's answerability)."""
        return self.preprocessor(x, y, sample_weight)

    def fit(self, x=None, y=None, batch_size=None, sample_weight=None, **kwargs):
        if self.preprocessor is None:
            return super().fit(x, y, batch_size=batch_size, sample_weight=sample_weight, **kwargs)
        validation_data = kwargs.pop("validation_data", None)
        if validation_data is not None:
            inputs = self._preprocessed(*_unpacked(validation_data), batch_size=batch_size)
            validation_data = (
                inputs["x"]
                if len(inputs) == 1
                else keras.utils.pack_x_y_sample_weight(
                    inputs["x"], inputs["y"], inputs["sample_weight"]
                )
            )
        # Keras's default: the rows of arrays are shuffled every epoch (a dataset as it is).
        shuffle = kwargs.pop("shuffle", True)
        inputs = self._preprocessed(x, y, sample_weight, batch_size, shuffle=bool(shuffle))
        # Arrays (no TensorFlow): Keras shuffles them; a dataset is shuffled already.
        kwargs["shuffle"] = shuffle if len(inputs) > 1 else False
        return super().fit(**inputs, validation_data=validation_data, **kwargs)

    def evaluate(self, x=None, y=None, batch_size=None, sample_weight=None, **kwargs):
        if self.preprocessor is None:
            return super().evaluate(
                x, y, batch_size=batch_size, sample_weight=sample_weight, **kwargs
            )
        return super().evaluate(**self._preprocessed(x, y, sample_weight, batch_size), **kwargs)

    def predict(self, x, batch_size=None, **kwargs):
        if self.preprocessor is None:
            return super().predict(x, batch_size=batch_size, **kwargs)
        inputs = self._preprocessed(x, None, None, batch_size)
        return super().predict(inputs["x"], batch_size=inputs.get("batch_size"), **kwargs)


class _TracedPreprocess:
    # A task model's traced `preprocess` and the preprocessor it was traced with.
    def __init__(self, preprocessor, function):
        self.preprocessor, self.function = preprocessor, function


def _unpacked(validation_data) -> tuple:
    # (x, y) or (x, y, sample_weight), or a dataset; the same forms as Keras's own.
    if isinstance(validation_data, tuple) and len(validation_data) in (2, 3):
        return (*validation_data, None)[:3]
    return validation_data, None, None
