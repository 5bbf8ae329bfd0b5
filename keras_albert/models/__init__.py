"""ALBERT models built from keras_albert.layers."""

from keras_albert.models.backbone import AlbertBackbone
from keras_albert.models.classifier import AlbertClassifier
from keras_albert.models.masked_lm import AlbertMaskedLM
from keras_albert.models.multiple_choice import AlbertMultipleChoice
from keras_albert.models.pretrainer import AlbertPretrainer
from keras_albert.models.question_answerer import AlbertQuestionAnswerer
from keras_albert.models.token_classifier import AlbertTokenClassifier

__all__ = [
    "AlbertBackbone",
    "AlbertClassifier",
    "AlbertMaskedLM",
    "AlbertMultipleChoice",
    "AlbertPretrainer",
    "AlbertQuestionAnswerer",
    "AlbertTokenClassifier",
]
