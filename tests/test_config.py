"""AlbertConfig: validation, presets and the three JSON dialects."""

import json

import pytest

from keras_albert import PRESETS, AlbertConfig, get_preset
from tests.helpers import tiny_config


@pytest.mark.parametrize(
    "changes,expected_message",
    [
        (dict(hidden_dim=30, num_heads=4), "hidden_dim=30, num_heads=4"),
        (dict(num_layers=3, num_groups=2), "num_layers=3, num_groups=2"),
        (dict(activation="swishy"), "activation='swishy'"),
        (dict(vocabulary_size=0), "vocabulary_size=0"),
        (dict(hidden_dim=-16), "hidden_dim=-16"),
        (dict(embedding_dim=2.5), "embedding_dim=2.5"),
        (dict(num_layers=0), "num_layers=0"),
        (dict(intermediate_dim=0), "intermediate_dim=0"),
        (dict(max_sequence_length=0), "max_sequence_length=0"),
        (dict(dropout=1.0), "dropout=1.0"),
        (dict(attention_dropout=-0.1), "attention_dropout=-0.1"),
        (dict(sharing="some"), "sharing='some'"),
        (dict(sharing="ffn", num_groups=3), "sharing='ffn', num_groups=3"),
        (dict(layer_norm_epsilon=0.0), "layer_norm_epsilon=0.0"),
        (dict(initializer_range=0), "initializer_range"),
    ],
)
def test_invalid_configs_name_the_values(changes, expected_message):
    with pytest.raises(ValueError) as error:
        tiny_config(**changes)
    assert expected_message in str(error.value)


def test_presets_follow_the_released_models():
    assert set(PRESETS) == {
        f"albert_{size}_{version}"
        for size in ("base", "large", "xlarge", "xxlarge")
        for version in ("v1", "v2")
    }
    assert get_preset("albert_base_v1").dropout == 0.1
    assert get_preset("albert_large_v1").attention_dropout == 0.1
    assert get_preset("albert_xxlarge_v1").dropout == 0.0
    assert all(PRESETS[f"albert_{s}_v2"].dropout == 0.0 for s in ("base", "large", "xlarge"))
    xxlarge = get_preset("albert_xxlarge_v2")
    assert (xxlarge.hidden_dim, xxlarge.num_layers, xxlarge.num_heads) == (4096, 12, 64)
    assert all(
        c.embedding_dim == 128 and c.activation == "gelu_approximate" for c in PRESETS.values()
    )
    with pytest.raises(ValueError, match="preset='albert_huge'"):
        get_preset("albert_huge")


def test_our_json_round_trip(tmp_path):
    config = tiny_config(num_groups=3, dropout=0.1, activation="relu")
    path = tmp_path / "config.json"
    config.to_json(path)
    assert AlbertConfig.from_json(path) == config
    assert AlbertConfig.from_json(config.to_json()) == config
    with pytest.raises(ValueError, match=r"Unknown AlbertConfig keys: \['colour'\]"):
        AlbertConfig.from_dict({**config.to_dict(), "colour": "blue"})


ORIGINAL_BASE_CONFIG = {  # albert_base/albert_config.json of the v2 release
    "attention_probs_dropout_prob": 0,
    "hidden_act": "gelu",
    "hidden_dropout_prob": 0,
    "embedding_size": 128,
    "hidden_size": 768,
    "initializer_range": 0.02,
    "intermediate_size": 3072,
    "max_position_embeddings": 512,
    "num_attention_heads": 12,
    "num_hidden_layers": 12,
    "num_hidden_groups": 1,
    "net_structure_type": 0,
    "gap_size": 0,
    "num_memory_blocks": 0,
    "inner_group_num": 1,
    "down_scale_factor": 1,
    "type_vocab_size": 2,
    "vocab_size": 30000,
}


def test_original_albert_config_json(tmp_path):
    path = tmp_path / "albert_config.json"
    path.write_text(json.dumps(ORIGINAL_BASE_CONFIG))
    config = AlbertConfig.from_json(path)
    # The original "gelu" is the tanh approximation.
    assert config == get_preset("albert_base_v2")
    written = config.to_original_config()
    assert written["hidden_act"] == "gelu"
    for key, value in written.items():
        assert ORIGINAL_BASE_CONFIG[key] == value, key
    grouped = tiny_config(num_layers=4, num_groups=2, num_inner_repetitions=2)
    assert AlbertConfig.from_original_config(grouped.to_original_config()) == grouped
    without_size = {k: v for k, v in ORIGINAL_BASE_CONFIG.items() if k != "hidden_size"}
    with pytest.raises(ValueError, match=r"lacks required keys \['hidden_size'\]"):
        AlbertConfig.from_original_config(without_size)
    with pytest.raises(ValueError, match="hidden_act='gelu_fast'"):
        AlbertConfig.from_original_config({**ORIGINAL_BASE_CONFIG, "hidden_act": "gelu_fast"})


def test_hugging_face_config_json():
    import transformers

    hf = transformers.AlbertConfig(
        vocab_size=100,
        embedding_size=16,
        hidden_size=32,
        num_hidden_layers=4,
        num_hidden_groups=2,
        inner_group_num=2,
        num_attention_heads=4,
        intermediate_size=64,
        hidden_act="gelu_new",
        hidden_dropout_prob=0.1,
        attention_probs_dropout_prob=0.05,
    )
    config = AlbertConfig.from_json(hf.to_json_string())
    assert config.activation == "gelu_approximate"
    assert (config.num_groups, config.num_inner_repetitions) == (2, 2)
    assert (config.dropout, config.attention_dropout) == (0.1, 0.05)
    # HF's "gelu" is the exact erf form.
    assert AlbertConfig.from_hf_config({**hf.to_dict(), "hidden_act": "gelu"}).activation == "gelu"
    back = transformers.AlbertConfig(**config.to_hf_config())
    assert AlbertConfig.from_hf_config(back.to_dict()) == config
    with pytest.raises(ValueError, match="sharing='none'"):
        tiny_config(sharing="none").to_hf_config()


@pytest.mark.parametrize(
    "dialect, key, value, expected",
    [
        ("ours", "num_layers", "2", "`num_layers` must be a positive integer. Received: "
                                    "num_layers='2'"),
        ("ours", "layer_norm_epsilon", "1e-12",
         "`layer_norm_epsilon` must be a number in [-inf, inf]. Received: "
         "layer_norm_epsilon='1e-12'"),
        ("ours", "initializer_range", None, "`initializer_range` must be a number"),
        ("hf", "layer_norm_eps", "x", "`layer_norm_epsilon` must be a number"),
        ("original", "hidden_dropout_prob", "0.1", "`dropout` must be a float in [0, 1)."),
    ],
)  # fmt: skip
def test_a_config_file_with_a_wrong_field_type_is_one_error_naming_it(
    tmp_path, dialect, key, value, expected
):
    config = AlbertConfig(num_layers=2, hidden_dim=8, intermediate_dim=16, num_heads=2)
    values = {
        "ours": config.to_dict,
        "hf": config.to_hf_config,
        "original": config.to_original_config,
    }[dialect]()
    values[key] = value
    path = tmp_path / "albert_config.json"
    path.write_text(json.dumps(values))
    with pytest.raises(ValueError) as error:
        AlbertConfig.from_json(path)
    assert str(error.value).startswith(f"{path}: {expected}")


def test_a_config_file_that_is_not_json_is_named(tmp_path):
    path = tmp_path / "config.json"
    path.write_text('{"num_layers": 2,}')
    with pytest.raises(ValueError) as error:
        AlbertConfig.from_json(path)
    assert str(error.value).startswith(f"An ALBERT config must be JSON: {path} is not (Expecting")
