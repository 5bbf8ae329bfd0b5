"""AlbertBackbone and AlbertPretrainer: sharing, counts, outputs, compilation, precision, saving."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_albert import AlbertBackbone, AlbertPretrainer, get_preset
from keras_albert.layers import FeedForward, SelfAttention, TransformerEncoder
from tests.helpers import (
    assert_allclose_tree,
    check_model_roundtrips,
    random_inputs,
    tiny_backbone,
    to_numpy,
)


def randomize(model, scale, seed=0):
    """Every weight (kernels, biases, LayerNorm gamma/beta) drawn from N(0, scale²)."""
    rng = np.random.default_rng(seed)
    for weight in model.weights:
        weight.assign(rng.normal(0, scale, weight.shape).astype("float32"))


def block_parameters(hidden, intermediate):
    return (
        4 * (hidden * hidden + hidden)
        + 2 * hidden * intermediate
        + intermediate
        + hidden
        + 4 * hidden
    )


@pytest.mark.parametrize(
    "preset,expected",
    [
        ("albert_base_v2", 11_683_584),
        ("albert_large_v2", 17_683_968),
        ("albert_xlarge_v2", 58_724_864),
        pytest.param("albert_xxlarge_v2", 222_595_584, marks=pytest.mark.slow),  # ~5 s to build
    ],
)
def test_preset_parameter_counts(preset, expected):
    assert AlbertBackbone.from_preset_name(preset).count_params() == expected


def test_one_block_object_is_called_at_every_depth():
    shallow, deep = tiny_backbone(num_layers=1), tiny_backbone(num_layers=12)
    assert shallow.count_params() == deep.count_params()
    assert len(deep.encoder_layers) == 1
    (block,) = deep.encoder_layers
    assert isinstance(block, TransformerEncoder)
    assert len(deep.encoder_steps) == 12 and all(step is block for step in deep.encoder_steps)


def test_groups_and_inner_repetitions_follow_the_original_assignment():
    backbone = tiny_backbone(num_layers=6, num_groups=3, num_inner_repetitions=2)
    names = [step.name for step in backbone.encoder_steps]
    # Layer i runs group int(i / num_layers * num_groups): layers 0,1 → 0; 2,3 → 1; 4,5 → 2.
    expected = [f"group_{i // 2}_inner_{r}" for i in range(6) for r in range(2)]
    assert names == expected
    one = tiny_backbone(num_layers=6)
    assert backbone.count_params() - one.count_params() == 5 * block_parameters(16, 32)


@pytest.mark.parametrize(
    "sharing,num_attention,num_feedforward", [("attention", 1, 4), ("ffn", 4, 1), ("none", 4, 4)]
)
def test_sharing_ablation_counts(sharing, num_attention, num_feedforward):
    backbone = tiny_backbone(num_layers=4, sharing=sharing)
    layers = backbone.encoder_layers
    attention = sum(isinstance(layer, SelfAttention) for layer in layers)
    feedforward = sum(isinstance(layer, FeedForward) for layer in layers)
    blocks = sum(isinstance(layer, TransformerEncoder) for layer in layers)
    assert (attention + blocks, feedforward + blocks) == (num_attention, num_feedforward)
    shared_all = tiny_backbone(num_layers=4)
    attention_size = 4 * (16 * 16 + 16) + 2 * 16
    feedforward_size = block_parameters(16, 32) - attention_size
    extra = (num_attention - 1) * attention_size + (num_feedforward - 1) * feedforward_size
    assert backbone.count_params() - shared_all.count_params() == extra


def modules_at_depth(backbone, sharing, depth):
    """(attention, feed-forward) that depth `depth` must run, found by the names of the modes."""
    if sharing == "none":
        block = backbone.get_layer(f"layer_{depth}")
        return block.attention, block.feedforward
    if sharing == "attention":
        shared = backbone.get_layer("shared_attention")
        return shared, backbone.get_layer(f"layer_{depth}_feedforward")
    return backbone.get_layer(f"layer_{depth}_attention"), backbone.get_layer("shared_feedforward")


@pytest.mark.parametrize("sharing", ["attention", "ffn", "none"])
def test_sharing_ablation_runs_each_depths_own_modules(sharing):
    backbone = tiny_backbone(num_layers=4, sharing=sharing, output_all_layers=True)
    randomize(backbone, 0.3)  # per-depth modules clearly different from one another
    inputs = random_inputs()
    outputs = to_numpy(backbone(inputs))
    x = backbone.embedding(inputs["token_ids"], inputs["segment_ids"])
    for depth in range(4):
        attention, feedforward = modules_at_depth(backbone, sharing, depth)
        x = feedforward(attention(x, padding_mask=inputs["padding_mask"]))
        np.testing.assert_allclose(
            outputs["encoder_layer_outputs"][depth], x, atol=1e-5, err_msg=f"depth {depth}"
        )

    # Changing the modules of depth 2 alone changes depth 2 onwards and nothing before it.
    rng = np.random.default_rng(1)
    own = [m for m in modules_at_depth(backbone, sharing, 2) if not m.name.startswith("shared")]
    for weight in (w for module in own for w in module.weights):
        weight.assign(weight.numpy() + rng.normal(0, 0.3, weight.shape).astype("float32"))
    changed = to_numpy(backbone(inputs))["encoder_layer_outputs"]
    for depth in range(4):
        same = np.allclose(changed[depth], outputs["encoder_layer_outputs"][depth], atol=1e-6)
        assert same == (depth < 2), f"depth {depth}"


def test_sharing_means_the_same_block_applied_again():
    backbone = tiny_backbone(num_layers=3, output_all_layers=True)
    inputs = random_inputs()
    outputs = to_numpy(backbone(inputs))
    (block,) = backbone.encoder_layers
    x = backbone.embedding(inputs["token_ids"], inputs["segment_ids"])
    for i in range(3):
        x = block(x, padding_mask=inputs["padding_mask"])
        np.testing.assert_allclose(outputs["encoder_layer_outputs"][i], x, atol=1e-6)
    np.testing.assert_allclose(outputs["sequence_output"], x, atol=1e-6)
    pooled = np.tanh(np.asarray(x)[:, 0] @ backbone.pooler.kernel.numpy() + backbone.pooler.bias)
    np.testing.assert_allclose(outputs["pooled_output"], pooled, atol=1e-6)


@pytest.mark.parametrize("sharing", ["all", "attention", "ffn", "none"])
def test_backbone_serialization_and_saving(sharing, tmp_path):
    backbone = tiny_backbone(sharing=sharing, dropout=0.1)
    check_model_roundtrips(backbone, random_inputs(), tmp_path)


def test_pretrainer_serialization_and_saving_keep_the_tie(tmp_path):
    pretrainer = AlbertPretrainer(tiny_backbone(num_groups=3))
    inputs = random_inputs(num_masked=3)
    check_model_roundtrips(pretrainer, inputs, tmp_path)
    restored = keras.models.load_model(tmp_path / "model.keras")
    table = restored.backbone.token_embedding.embeddings
    table.assign(table.numpy() + np.random.default_rng(0).normal(size=table.shape))
    changed = to_numpy(restored(inputs))["mlm_logits"]
    assert not np.allclose(changed, to_numpy(pretrainer(inputs))["mlm_logits"], atol=1e-3)


def test_pretrainer_parameter_count_adds_only_the_heads():
    backbone = AlbertBackbone.from_preset_name("albert_base_v2")
    pretrainer = AlbertPretrainer(backbone)
    heads = (768 * 128 + 128) + 2 * 128 + 30000 + (768 * 2 + 2)
    assert pretrainer.count_params() == 11_683_584 + heads


def test_jit_compiled_forward_equals_eager():
    pretrainer = AlbertPretrainer(tiny_backbone(num_layers=4, num_groups=2))
    inputs = random_inputs(num_masked=2)
    compiled = tf.function(lambda x: pretrainer(x, training=False), jit_compile=True)
    assert_allclose_tree(compiled(inputs), pretrainer(inputs), atol=1e-5)


def test_mixed_precision_outputs():
    inputs = random_inputs(num_masked=2)
    backbone_inputs = {k: v for k, v in inputs.items() if k != "mask_positions"}
    reference = AlbertPretrainer(tiny_backbone())
    # Scale 0.5 (not the 0.02 initializer) so that every output has a spread of order one
    # and a zeroed or broken head cannot hide under the tolerance.
    randomize(reference, 0.5)
    mixed = AlbertPretrainer(tiny_backbone(dtype="mixed_float16"))
    mixed.set_weights(reference.get_weights())
    expected, actual = to_numpy(reference(inputs)), to_numpy(mixed(inputs))
    expected["sequence_output"] = to_numpy(reference.backbone(backbone_inputs))["sequence_output"]
    mixed_sequence = to_numpy(mixed.backbone(backbone_inputs))["sequence_output"]
    # Heads return float32 logits; the backbone returns the compute dtype.
    assert actual["mlm_logits"].dtype == np.float32 and actual["sop_logits"].dtype == np.float32
    assert mixed_sequence.dtype == np.float16
    assert all(w.dtype == "float32" for w in mixed.weights)
    actual["sequence_output"] = mixed_sequence.astype(np.float32)
    for name in ("sequence_output", "mlm_logits", "sop_logits"):
        spread = expected[name].std()
        assert spread > 0.5, (name, spread)
        # float16 keeps ~3 decimal digits; observed errors are ~0.3% of the spread.
        np.testing.assert_allclose(actual[name], expected[name], atol=0.02 * spread, err_msg=name)


def test_training_uses_dropout_and_inference_does_not():
    backbone = AlbertBackbone.from_albert_config(
        get_preset("albert_base_v1").replace(
            vocabulary_size=64, hidden_dim=16, intermediate_dim=32, num_heads=2, num_layers=2
        )
    )
    inputs = random_inputs()
    eval_a, eval_b = backbone(inputs, training=False), backbone(inputs, training=False)
    assert_allclose_tree(eval_a, eval_b, atol=0)
    train = to_numpy(backbone(inputs, training=True))["sequence_output"]
    assert not np.allclose(train, to_numpy(eval_a)["sequence_output"], atol=1e-3)


def test_pretrainer_rejects_other_backbones():
    with pytest.raises(ValueError, match="must be an AlbertBackbone"):
        AlbertPretrainer(keras.Sequential([keras.layers.Dense(2)]))


def test_with_dtype_policy_copies_the_weights_under_the_new_policy():
    inputs = random_inputs()
    mixed = tiny_backbone(dtype="mixed_float16")
    randomize(mixed, 0.5)
    assert mixed.with_dtype_policy("mixed_float16") is mixed
    single = mixed.with_dtype_policy("float32")
    assert single is not mixed and single.dtype_policy.name == "float32"
    assert single.albert_config == mixed.albert_config
    for copied, original in zip(single.get_weights(), mixed.get_weights(), strict=True):
        np.testing.assert_array_equal(copied, original)
    outputs = to_numpy(single(inputs))["sequence_output"]
    assert outputs.dtype == np.float32
    np.testing.assert_allclose(
        outputs, to_numpy(mixed(inputs))["sequence_output"].astype(np.float32), atol=0.05
    )
    bfloat16 = single.with_dtype_policy(keras.DTypePolicy("mixed_bfloat16"))
    assert to_numpy(bfloat16(inputs))["sequence_output"].dtype.name == "bfloat16"
