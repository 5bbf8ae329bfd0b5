"""ALBERT models built from keras_albert.layers: the backbone, the pretrainer and the base of
the task models (`task.AlbertTask`). Each task type's head model is in its task type's folder
(`keras_albert.tasks.<name>.model`: `AlbertClassifier`, `AlbertQuestionAnswerer`, ...)."""

from keras_albert.models.backbone import AlbertBackbone
from keras_albert.models.pretrainer import AlbertPretrainer

__all__ = [
    "AlbertBackbone",
    "AlbertPretrainer",
]
