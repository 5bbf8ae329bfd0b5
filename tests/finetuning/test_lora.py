"""LoRA (`--lora-rank`): Keras's `enable_lora` on every weight matrix of the backbone by
default (the token table among them), or on the layers named; only the adapters and the head
train; saved models and exports carry them merged."""

import json
import os
import warnings

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_albert import AlbertClassifier, AlbertConfig, load_checkpoint, save_checkpoint
from keras_albert.export import export_for_serving
from keras_albert.finetuning.driver import FinetuningOptions, finetune
from keras_albert.models.backbone import ADAPTABLE_LAYER_NAMES
from keras_albert.models.lora import has_lora, merged_lora, parameter_counts
from keras_albert.text.tokenizer import AlbertTokenizer
from tests.backends import zoo
from tests.helpers import TINY, random_inputs, tiny_backbone
from tests.text.glue_rows import GLUE_DATA
from tests.text.text_data import ALBERT_MODEL, load_sst2_dev

RANK = 2
BLOCK = "group_0_inner_0"
# (path, input width, output width) of every dense layer the default adapts.
DENSES = (
    ("embedding/projection", "embedding_dim", "hidden_dim"),
    (f"{BLOCK}/attention/query", "hidden_dim", "hidden_dim"),
    (f"{BLOCK}/attention/key", "hidden_dim", "hidden_dim"),
    (f"{BLOCK}/attention/value", "hidden_dim", "hidden_dim"),
    (f"{BLOCK}/attention/output", "hidden_dim", "hidden_dim"),
    (f"{BLOCK}/feedforward/intermediate", "hidden_dim", "intermediate_dim"),
    (f"{BLOCK}/feedforward/output", "intermediate_dim", "hidden_dim"),
    ("pooler", "hidden_dim", "hidden_dim"),
)


def adapter_parameters(vocabulary_size) -> int:
    """The adapters' and the adapted dense layers' biases' sizes, counted by hand."""
    dense = sum(RANK * (TINY[i] + TINY[o]) + TINY[o] for _, i, o in DENSES)
    return dense + RANK * (vocabulary_size + TINY["embedding_dim"])


def lora_classifier(vocabulary_size=64, **targets):
    model = AlbertClassifier(tiny_backbone(vocabulary_size=vocabulary_size), num_classes=3)
    model.backbone.enable_lora(RANK, **targets)
    randomize_adapters(model)
    return model


def randomize_adapters(model) -> None:
    """Adapters that change the outputs (Keras starts B at zero)."""
    rng = np.random.default_rng(0)
    for weight in model.weights:
        if "/lora_" in weight.path:
            weight.assign(rng.normal(0, 0.3, weight.shape).astype("float32"))


def test_only_the_adapters_their_biases_and_the_head_train():
    model = lora_classifier()
    trainable = sorted(weight.path for weight in model.trainable_weights)
    assert trainable == sorted(
        [f"{path}/{name}" for path, _, _ in DENSES
         for name in ("bias", "lora_kernel_a", "lora_kernel_b")]
        + ["embedding/token_embedding/lora_embeddings_a",
           "embedding/token_embedding/lora_embeddings_b",
           "logits/bias", "logits/kernel"]
    )  # fmt: skip
    counts = parameter_counts(model)
    head = TINY["hidden_dim"] * 3 + 3
    assert counts["trainable_parameters"] == adapter_parameters(64) + head
    # The total is the model's own parameters: the adapters are not the model's.
    plain = AlbertClassifier(tiny_backbone(vocabulary_size=64), num_classes=3)
    assert counts["parameters"] == parameter_counts(plain)["parameters"]
    assert counts["parameters"] == parameter_counts(merged_lora(model))["parameters"]
    frozen = {w.path: w.numpy() for w in model.weights if not w.trainable}
    model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(True))
    model.fit(random_inputs(), np.array([0, 1, 2]), verbose=0)
    for weight in model.weights:
        if weight.path in frozen:
            np.testing.assert_array_equal(weight.numpy(), frozen[weight.path], err_msg=weight.path)


def test_keras_hubs_choice_adapts_only_the_query_and_value_projections():
    model = lora_classifier(target_layer_names=("query", "value"))
    trainable = sorted(weight.path for weight in model.trainable_weights)
    assert trainable == sorted(
        [f"{BLOCK}/attention/{layer}/{name}" for layer in ("query", "value")
         for name in ("bias", "lora_kernel_a", "lora_kernel_b")]
        + ["logits/bias", "logits/kernel"]
    )  # fmt: skip
    hidden = TINY["hidden_dim"]
    assert parameter_counts(model)["trainable_parameters"] == (
        2 * (2 * hidden * RANK + hidden) + hidden * 3 + 3
    )


@pytest.mark.parametrize("targets", [("query", "keys"), "query", ()])
def test_target_layer_names_must_name_dense_or_embedding_layers(targets):
    backbone = tiny_backbone()
    with pytest.raises(ValueError, match="`target_layer_names` must name dense or embedding"):
        backbone.enable_lora(RANK, targets)
    assert not has_lora(backbone)


@pytest.mark.parametrize(
    "changes, error",
    [
        ({"lora_target_layer_names": ("query",)}, "must come with `lora_rank`"),
        ({"lora_rank": 8, "lora_target_layer_names": ("query", "keys")}, "must name dense"),
        ({"lora_rank": 8, "lora_target_layer_names": ()}, "must name dense"),
    ],
)
def test_lora_target_layer_names_are_checked_before_any_work(changes, error):
    with pytest.raises(ValueError, match=f"`lora_target_layer_names` {error}"):
        FinetuningOptions(
            dataset="SST-2", train_data="t", eval_data="e", output_dir="o", preset="albert_base_v2",
            **changes,
        )  # fmt: skip


@pytest.mark.parametrize("name", [name for name in sorted(zoo.MODELS) if "backbone" in name])
def test_the_adaptable_names_are_every_dense_and_embedding_layer(name):
    """`ADAPTABLE_LAYER_NAMES` (what the options accept) = the layers `enable_lora` finds, for
    every sharing and grouping."""
    layers = zoo.build(name)._flatten_layers(include_self=False)
    adaptable = (keras.layers.Dense, keras.layers.Embedding)
    found = {layer.name for layer in layers if isinstance(layer, adaptable)}
    assert found == set(ADAPTABLE_LAYER_NAMES)


def test_saved_and_merged_models_are_plain_with_the_same_outputs(tmp_path):
    model = lora_classifier()
    inputs = random_inputs()
    expected = model(inputs)
    merged = merged_lora(model)
    assert has_lora(model) and not has_lora(merged)
    np.testing.assert_allclose(merged(inputs), expected, atol=1e-6, rtol=0)
    model.save(tmp_path / "lora.keras")
    loaded = keras.models.load_model(tmp_path / "lora.keras")
    assert not has_lora(loaded)
    np.testing.assert_allclose(loaded(inputs), expected, atol=1e-6, rtol=0)


def test_save_checkpoint_writes_a_compiled_model_merged_so_that_it_loads_without_a_warning(
    tmp_path,
):
    model = lora_classifier()
    model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(True))
    model.fit(random_inputs(), np.array([0, 1, 2]), verbose=0)  # the optimizer's moments
    save_checkpoint(model, tmp_path / "lora.keras")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # not "Skipping variable loading for optimizer"
        loaded = keras.models.load_model(tmp_path / "lora.keras")
    assert not has_lora(loaded)
    inputs = random_inputs()
    np.testing.assert_allclose(loaded(inputs), model(inputs), atol=1e-6, rtol=0)


@pytest.mark.parametrize("format", ["hf", "keras_hub"])
def test_the_other_checkpoint_formats_carry_the_merged_adapters(tmp_path, format):
    model = lora_classifier()
    inputs = random_inputs()
    save_checkpoint(model, tmp_path / format, format=format)
    loaded = load_checkpoint(tmp_path / format)
    np.testing.assert_allclose(loaded(inputs), model(inputs), atol=1e-5, rtol=0)


def test_the_export_serves_the_merged_adapters(tmp_path):
    model = lora_classifier(vocabulary_size=30000)
    tokenizer = AlbertTokenizer(ALBERT_MODEL)
    sentences = load_sst2_dev()[:4]
    version_dir = export_for_serving(
        model, tokenizer, base_dir=tmp_path, name="sst2", max_sequence_length=32
    )
    served = tf.saved_model.load(version_dir).signatures["serving_default"]
    packed = tokenizer.packer(32)(tokenizer(tf.constant(sentences)))
    expected = model({key: np.asarray(value) for key, value in packed.items()})
    logits = served(text=tf.constant(sentences))["logits"]
    np.testing.assert_allclose(logits, expected, atol=1e-5, rtol=0)


def test_finetune_with_lora_rank_reports_what_it_trained_and_keeps(tmp_path, capsys):
    config = tmp_path / "albert_config.json"
    AlbertConfig(**{**TINY, "vocabulary_size": 30000}).to_json(config)
    summary = finetune(
        FinetuningOptions(
            dataset="SST-2",
            train_data=os.path.join(GLUE_DATA, "sst2_train.tsv"),
            eval_data=os.path.join(GLUE_DATA, "sst2_dev.tsv"),
            output_dir=str(tmp_path / "run"),
            config=str(config),
            vocabulary=str(ALBERT_MODEL),
            sequence_length=32,
            train_steps=2,
            batch_size=4,
            lora_rank=RANK,
            verbose=0,
        )
    )
    head = TINY["hidden_dim"] * 2 + 2
    assert summary["trainable_parameters"] == adapter_parameters(30000) + head
    best = keras.models.load_model(tmp_path / "run" / "best.keras")
    assert summary["parameters"] == parameter_counts(best)["parameters"]  # without adapters
    assert summary["checkpoint_bytes"] > 0 and summary["best_model_bytes"] > 0
    with open(tmp_path / "run" / "summary.json") as file:
        assert json.load(file)["options"]["lora_rank"] == RANK
    assert f"parameters trained (LoRA rank {RANK}); checkpoint" in capsys.readouterr().out
    # The merged model, without the adapters' optimizer moments: it loads without a warning.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not has_lora(keras.models.load_model(tmp_path / "run" / "best.keras"))


@pytest.mark.parametrize("name", sorted(zoo.MODELS))
def test_every_model_class_merges_its_adapters_into_the_same_outputs(name):
    """Every class, sharing and grouping: adapters on every matrix (the token table, which the
    masked-LM heads read tied, among them) merge into a plain model with the same outputs."""
    model = zoo.build(name)
    inputs = zoo.inference_inputs(name)
    plain = keras.tree.flatten(model(inputs))
    (model if name.startswith("backbone") else model.backbone).enable_lora(RANK)
    randomize_adapters(model)
    adapted = keras.tree.flatten(model(inputs))
    merged = merged_lora(model)
    assert has_lora(model) and not has_lora(merged)
    outputs = keras.tree.flatten(merged(inputs))
    for output, expected, before in zip(outputs, adapted, plain, strict=True):
        assert np.abs(np.asarray(expected) - np.asarray(before)).max() > 1e-3  # adapters count
        np.testing.assert_allclose(output, expected, atol=1e-5, rtol=0)
