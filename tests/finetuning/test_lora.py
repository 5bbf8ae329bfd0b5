"""LoRA (`--lora-rank`): Keras's `enable_lora` on the attention's query and value projections;
only the adapters and the head train; saved models and exports carry them merged."""

import json
import os

import keras
import numpy as np
import tensorflow as tf

from keras_albert import AlbertClassifier, AlbertConfig
from keras_albert.export import export_for_serving
from keras_albert.finetuning.driver import FinetuningOptions, finetune
from keras_albert.models.lora import has_lora, merged_lora, parameter_counts
from keras_albert.text.tokenizer import AlbertTokenizer
from tests.helpers import TINY, random_inputs, tiny_backbone
from tests.text.glue_rows import GLUE_DATA
from tests.text.text_data import ALBERT_MODEL, load_sst2_dev

RANK = 2


def lora_classifier(vocabulary_size=64):
    model = AlbertClassifier(tiny_backbone(vocabulary_size=vocabulary_size), num_classes=3)
    model.backbone.enable_lora(RANK)
    # Adapters that change the outputs (Keras starts B at zero).
    rng = np.random.default_rng(0)
    for weight in model.weights:
        if "lora_kernel" in weight.path:
            weight.assign(rng.normal(0, 0.3, weight.shape).astype("float32"))
    return model


def test_only_the_adapters_their_biases_and_the_head_train():
    model = lora_classifier()
    trainable = sorted(weight.path for weight in model.trainable_weights)
    block = "group_0_inner_0/attention"
    assert trainable == sorted(
        [f"{block}/{layer}/{name}" for layer in ("query", "value")
         for name in ("bias", "lora_kernel_a", "lora_kernel_b")]
        + ["logits/bias", "logits/kernel"]
    )  # fmt: skip
    hidden = TINY["hidden_dim"]
    counts = parameter_counts(model)
    assert counts["trainable_parameters"] == 2 * (2 * hidden * RANK + hidden) + hidden * 3 + 3
    frozen = {w.path: w.numpy() for w in model.weights if not w.trainable}
    model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(True))
    model.fit(random_inputs(), np.array([0, 1, 2]), verbose=0)
    for weight in model.weights:
        if weight.path in frozen:
            np.testing.assert_array_equal(weight.numpy(), frozen[weight.path], err_msg=weight.path)


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
            task="SST-2",
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
    hidden = TINY["hidden_dim"]
    assert summary["trainable_parameters"] == 2 * (2 * hidden * RANK + hidden) + hidden * 2 + 2
    assert summary["parameters"] > 30000 * TINY["embedding_dim"]
    assert summary["checkpoint_bytes"] > 0 and summary["best_model_bytes"] > 0
    with open(tmp_path / "run" / "summary.json") as file:
        assert json.load(file)["options"]["lora_rank"] == RANK
    assert f"parameters trained (LoRA rank {RANK}); checkpoint" in capsys.readouterr().out
    assert not has_lora(keras.models.load_model(tmp_path / "run" / "best.keras"))
