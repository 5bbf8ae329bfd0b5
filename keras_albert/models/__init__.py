"""ALBERT models built from keras_albert.layers."""

from keras_albert.models.backbone import AlbertBackbone
from keras_albert.models.classifier import AlbertClassifier
from keras_albert.models.pretrainer import AlbertPretrainer
from keras_albert.models.question_answerer import AlbertQuestionAnswerer

__all__ = ["AlbertBackbone", "AlbertClassifier", "AlbertPretrainer", "AlbertQuestionAnswerer"]
