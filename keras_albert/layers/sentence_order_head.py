"""Sentence-order prediction head: two logits from the pooled [CLS] output."""

import keras

from keras_albert.layers.logits import logits_dense


@keras.saving.register_keras_serializable(package="keras_albert")
class SentenceOrderHead(keras.layers.Layer):
    """A 2-way dense layer on the pooled output: logit 0 = in order, 1 = swapped.

    Sentence-order prediction replaces BERT's next-sentence prediction in ALBERT
    (Lan et al., 2020, section 3.1): the two segments are always consecutive text, and the
    head must tell whether they were swapped. The original applies no dropout here.

    Args:
        initializer_range: float, stddev of the truncated-normal kernel initializer.

    Example:
    >>> import keras
    >>> from keras_albert.layers.sentence_order_head import SentenceOrderHead
    >>> tuple(SentenceOrderHead()(keras.ops.ones((2, 8))).shape)
    (2, 2)
    """

    def __init__(self, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.initializer_range = initializer_range
        self.dense = logits_dense(2, initializer_range, name="dense")

    def build(self, pooled_shape):
        self.dense.build(pooled_shape)

    def call(self, pooled_output):
        return self.dense(pooled_output)  # (batch, 2), float32 (layers/logits.py)

    def compute_output_shape(self, pooled_shape):
        return (pooled_shape[0], 2)

    def get_config(self):
        config = super().get_config()
        config.update({"initializer_range": self.initializer_range})
        return config
