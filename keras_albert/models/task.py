"""`AlbertTask`: what the models that wrap an `AlbertBackbone` share (their config)."""

import keras

from keras_albert.models.functional import FunctionalModel


class AlbertTask(FunctionalModel):
    """Base of the functional models built on an `AlbertBackbone`; serializes the backbone.

    Subclasses store their extra constructor arguments in `task_config()`. A model with one
    output tensor (not a dict) names it `OUTPUT_NAME` where a format names its outputs (ONNX).
    """

    OUTPUT_NAME = "logits"

    def task_config(self) -> dict:
        return {}

    def get_config(self):
        return {
            "backbone": keras.saving.serialize_keras_object(self.backbone),
            **self.task_config(),
            "name": self.name,
            "trainable": self.trainable,
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["backbone"] = keras.saving.deserialize_keras_object(config["backbone"])
        return cls(**config)
