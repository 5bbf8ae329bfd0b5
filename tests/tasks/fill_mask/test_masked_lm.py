"""`AlbertMaskedLM`: the pretrainer's masked-LM head alone, shared with a pretrainer or its own."""

import keras
import numpy as np
import pytest

from keras_albert.layers import MaskedLMHead
from keras_albert.models import AlbertPretrainer
from keras_albert.tasks.fill_mask.model import AlbertMaskedLM, masked_lm_from
from tests.helpers import check_model_roundtrips, random_inputs, tiny_backbone, to_numpy


def randomized(model, seed=0):
    rng = np.random.default_rng(seed)
    model.set_weights(
        [rng.normal(scale=0.5, size=w.shape).astype("float32") for w in model.weights]
    )
    return model


def test_serialization_and_saving_keep_the_tie(tmp_path):
    model = randomized(AlbertMaskedLM(tiny_backbone(num_groups=3)))
    inputs = random_inputs(num_masked=3)
    check_model_roundtrips(model, inputs, tmp_path)
    assert model.get_config()["name"] == "albert_masked_lm"
    restored = keras.models.load_model(tmp_path / "model.keras")
    table = restored.backbone.token_embedding.embeddings
    table.assign(table.numpy() + np.random.default_rng(1).normal(size=table.shape))
    # The restored head reads the restored (changed) table, not a saved copy of it.
    assert not np.allclose(to_numpy(restored(inputs)), to_numpy(model(inputs)), atol=1e-3)


def test_from_pretrainer_shares_the_pretrainer_weights():
    pretrainer = randomized(AlbertPretrainer(tiny_backbone()))
    model = masked_lm_from(pretrainer)
    assert model.backbone is pretrainer.backbone
    assert model.masked_lm_head is pretrainer.masked_lm_head
    assert masked_lm_from(model) is model
    # Every weight of the masked LM is a pretrainer variable (no copy); only SOP is left out.
    pretrainer_ids = {id(w) for w in pretrainer.weights}
    assert all(id(w) in pretrainer_ids for w in model.weights)
    assert len(pretrainer.weights) - len(model.weights) == 2  # sentence_order_head/dense
    inputs = random_inputs(num_masked=2)
    np.testing.assert_array_equal(
        to_numpy(model(inputs)), to_numpy(pretrainer(inputs))["mlm_logits"]
    )
    bias = pretrainer.masked_lm_head.output_bias
    bias.assign(bias.numpy() + 1.0 + np.arange(bias.shape[0]))
    np.testing.assert_array_equal(
        to_numpy(model(inputs)), to_numpy(pretrainer(inputs))["mlm_logits"]
    )


def test_a_masked_lm_from_a_pretrainer_saves_as_a_masked_lm(tmp_path):
    pretrainer = randomized(AlbertPretrainer(tiny_backbone()), seed=2)
    shared = masked_lm_from(pretrainer)
    inputs = random_inputs(num_masked=2)
    check_model_roundtrips(shared, inputs, tmp_path)
    # Its weights come in the order of a masked LM built from its config (what the serving
    # copies at another precision or depth rely on: `get_weights` → `set_weights`).
    copy = AlbertMaskedLM.from_config(shared.get_config())
    assert [w.path for w in copy.weights] == [w.path for w in shared.weights]
    copy.set_weights(shared.get_weights())
    np.testing.assert_array_equal(to_numpy(copy(inputs)), to_numpy(shared(inputs)))


def test_parameter_count_is_the_pretrainer_less_the_order_head():
    pretrainer = AlbertPretrainer(tiny_backbone())
    hidden_dim = pretrainer.backbone.albert_config.hidden_dim
    expected = pretrainer.count_params() - (hidden_dim * 2 + 2)
    assert AlbertMaskedLM(tiny_backbone()).count_params() == expected


def test_errors_name_what_was_received():
    backbone = tiny_backbone()
    with pytest.raises(ValueError, match="`backbone` must be an AlbertBackbone"):
        AlbertMaskedLM(AlbertPretrainer(backbone))
    other = tiny_backbone()
    untied = MaskedLMHead(other.token_embedding, embedding_dim=8, name="masked_lm_head")
    with pytest.raises(ValueError, match="`masked_lm_head` must be a MaskedLMHead tied to"):
        AlbertMaskedLM(backbone, masked_lm_head=untied)
    with pytest.raises(ValueError, match="`pretrainer` must be an AlbertPretrainer"):
        AlbertMaskedLM.from_pretrainer(AlbertMaskedLM(backbone))
    with pytest.raises(TypeError, match="Received: model=AlbertBackbone"):
        masked_lm_from(backbone)
