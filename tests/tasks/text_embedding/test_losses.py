"""The text embedder's training losses equal sentence-transformers' on the same embeddings
(<= 1e-5): `MultipleNegativesRankingLoss` (in-batch negatives, scale 20 and another) and
`CosineSimilarityLoss` (the cosine's MSE against the scores), each given the embedding tensors
through its `compute_loss_from_embeddings` (the model it wraps is never called)."""

import keras
import numpy as np
import pytest
import torch
from sentence_transformers.sentence_transformer import losses as st_losses

from keras_albert.tasks.text_embedding.losses import (
    CosineSimilarityLoss,
    MultipleNegativesRankingLoss,
    PairObjective,
)

TOLERANCE = 1e-5


def _pairs(batch=6, hidden=16, seed=0):
    """(batch, 2, hidden) embeddings (a zero vector among them), and scores in 0..1."""
    rng = np.random.default_rng(seed)
    pairs = rng.normal(size=(batch, 2, hidden)).astype("float32")
    pairs[1, 1] = pairs[1, 0] + 0.05 * pairs[1, 1]  # a close pair
    pairs[-1, 0] = 0.0  # `cos_sim` / normalize floor: no NaN
    return pairs, rng.uniform(size=batch).astype("float32")


def _theirs(loss_class, pairs, scores, **kwargs):
    # The model is only stored (the embeddings are given): a stub module stands in for it.
    loss = loss_class(torch.nn.Identity(), **kwargs)
    embeddings = [torch.from_numpy(pairs[:, 0]), torch.from_numpy(pairs[:, 1])]
    return float(loss.compute_loss_from_embeddings(embeddings, torch.from_numpy(scores)))


def _ours(loss, pairs, scores):
    return float(keras.ops.convert_to_numpy(loss(scores, pairs)))


@pytest.mark.parametrize("scale", [20.0, 7.5])
def test_multiple_negatives_ranking_equals_sentence_transformers(scale):
    for seed in range(3):
        pairs, scores = _pairs(seed=seed)
        theirs = _theirs(st_losses.MultipleNegativesRankingLoss, pairs, scores, scale=scale)
        ours = _ours(MultipleNegativesRankingLoss(scale), pairs, scores)
        assert ours == pytest.approx(theirs, abs=TOLERANCE)


def test_the_in_batch_loss_reads_no_score():
    pairs, scores = _pairs()
    loss = MultipleNegativesRankingLoss()
    assert _ours(loss, pairs, scores) == _ours(loss, pairs, np.zeros_like(scores))


def test_cosine_similarity_equals_sentence_transformers():
    for seed in range(3):
        pairs, scores = _pairs(seed=seed)
        theirs = _theirs(st_losses.CosineSimilarityLoss, pairs, scores)
        assert _ours(CosineSimilarityLoss(), pairs, scores) == pytest.approx(theirs, abs=TOLERANCE)


@pytest.mark.parametrize("loss", [MultipleNegativesRankingLoss(7.5), CosineSimilarityLoss()])
def test_the_losses_round_trip_their_config(loss):
    again = keras.losses.deserialize(keras.losses.serialize(loss))
    pairs, scores = _pairs()
    assert type(again) is type(loss) and _ours(again, pairs, scores) == _ours(loss, pairs, scores)


def test_the_pair_objective_embeds_both_texts_of_each_pair():
    """`replica_fn` on `(batch, 2, seq)` inputs gives the loss of the model's embeddings of the
    first and second texts, pair by pair (a stand-in model: its token vectors' sum)."""
    token_ids = keras.Input((None,), dtype="int32", name="token_ids")
    padding_mask = keras.Input((None,), dtype="int32", name="padding_mask")
    vectors = keras.layers.Embedding(9, 3)(token_ids)
    pooled = keras.ops.sum(vectors * keras.ops.cast(padding_mask, "float32")[:, :, None], axis=1)
    model = keras.Model({"token_ids": token_ids, "padding_mask": padding_mask}, pooled)
    rng = np.random.default_rng(0)
    ids = rng.integers(0, 9, size=(4, 2, 5)).astype("int32")
    x = {"token_ids": ids, "padding_mask": (rng.uniform(size=ids.shape) < 0.8).astype("int32")}
    scores = rng.uniform(size=4).astype("float32")
    loss = CosineSimilarityLoss()
    share, sums = PairObjective(loss).replica_fn(model, (x, scores), training=False)
    first, second = (
        model({key: value[:, column] for key, value in x.items()}) for column in (0, 1)
    )
    expected = _ours(loss, np.stack([first, second], axis=1), scores)
    assert float(share) == pytest.approx(expected, abs=1e-6) and sums == {}
