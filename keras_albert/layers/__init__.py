"""Keras layers of ALBERT: pure Keras, no configs, data or training."""

from keras_albert.layers.activations import get_activation
from keras_albert.layers.answer_class_head import AnswerClassHead
from keras_albert.layers.dropout import ReplicaDropout
from keras_albert.layers.factorized_embedding import FactorizedEmbedding
from keras_albert.layers.masked_lm_head import MaskedLMHead
from keras_albert.layers.sentence_order_head import SentenceOrderHead
from keras_albert.layers.transformer_encoder import (
    FeedForward,
    SelfAttention,
    TransformerEncoder,
)

__all__ = [
    "AnswerClassHead",
    "FactorizedEmbedding",
    "FeedForward",
    "MaskedLMHead",
    "ReplicaDropout",
    "SelfAttention",
    "SentenceOrderHead",
    "TransformerEncoder",
    "get_activation",
]
