"""The text embedder's training losses, over the embeddings of sentence pairs, and the
`Objective` that embeds both texts of each pair.

`y_pred` is `(batch, 2, hidden_dim)`: row i holds the embeddings of pair i's two texts
(`PairObjective` reshapes the model's `(2 × batch, hidden_dim)` into it); `y_true` the pairs'
scores, in 0..1 (zeros for pairs without scores). Each loss gives one value per pair; the
driver's `Objective` averages them over the global batch.

- `MultipleNegativesRankingLoss`: pairs without scores. Each first text must pick its own
  second text among the batch's: cross-entropy over `scale · cosine(first_i, second_j)`, the
  label the diagonal (in-batch negatives; sentence-transformers' loss of the same name, its
  defaults). Under several replicas the negatives are those of the replica's share.
- `CosineSimilarityLoss`: scored pairs. `(cosine(first_i, second_i) - score_i)²`
  (sentence-transformers' `CosineSimilarityLoss`: an MSE).
"""

from __future__ import annotations

import keras
import tensorflow as tf

from keras_albert.tasks.text_embedding import defaults
from keras_albert.training.objective import Objective


def _unit(vectors):
    # torch.nn.functional.normalize's floor on the norm (1e-12), as sentence-transformers'
    # `cos_sim`: a zero vector stays zero instead of turning into NaN.
    norm = keras.ops.sqrt(keras.ops.sum(keras.ops.square(vectors), axis=-1, keepdims=True))
    return vectors / keras.ops.maximum(norm, 1e-12)


@keras.saving.register_keras_serializable(package="keras_albert")
class MultipleNegativesRankingLoss(keras.losses.Loss):
    """In-batch negatives over pairs: `logsumexp_j(s·cos(a_i, p_j)) - s·cos(a_i, p_i)` per pair
    i (`a`: the first texts, `p`: the second, `s`: `scale`); `y_true` is not read.

    Args:
        scale: the similarity scale (the softmax's inverse temperature).
    """

    def __init__(self, scale=defaults.MNRL_SCALE, name="multiple_negatives_ranking", **kwargs):
        super().__init__(name=name, **kwargs)
        self.scale = scale

    def call(self, y_true, y_pred):
        anchors, positives = _unit(y_pred[:, 0]), _unit(y_pred[:, 1])  # (batch, H) each
        logits = self.scale * keras.ops.matmul(anchors, keras.ops.transpose(positives))
        return keras.ops.logsumexp(logits, axis=-1) - keras.ops.diagonal(logits)  # (batch,)

    def get_config(self):
        return {**super().get_config(), "scale": self.scale}


@keras.saving.register_keras_serializable(package="keras_albert")
class CosineSimilarityLoss(keras.losses.Loss):
    """`(cos(a_i, p_i) - y_true_i)²` per pair i: the pair's cosine regressed on its score."""

    def __init__(self, name="cosine_similarity_loss", **kwargs):
        super().__init__(name=name, **kwargs)

    def call(self, y_true, y_pred):
        cosine = keras.ops.sum(_unit(y_pred[:, 0]) * _unit(y_pred[:, 1]), axis=-1)  # (batch,)
        return keras.ops.square(cosine - keras.ops.reshape(y_true, [-1]))


class PairObjective(Objective):
    """A pair loss's `Objective` (no train metrics): the loop's `replica_fn` embeds the two
    texts of every pair of `x` (`(batch, 2, seq)` inputs) in one call of the model and gives
    the loss `(batch, 2, hidden_dim)`."""

    def __init__(self, loss: keras.losses.Loss):
        super().__init__(loss)

    def replica_fn(self, model, batch, training):
        x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(batch)
        # (batch, 2, seq) → (2 × batch, seq): pair i's texts are rows 2i and 2i + 1.
        texts = {key: tf.reshape(value, [-1, tf.shape(value)[-1]]) for key, value in x.items()}
        embeddings = model(texts, training=training)  # (2 × batch, H)
        pairs = tf.reshape(embeddings, [-1, 2, embeddings.shape[-1]])
        return self.loss_share(self.loss, y, pairs, sample_weight), {}
