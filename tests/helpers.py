"""Helpers shared by the test suite: tiny configs, inputs, and round-trip checks."""

import argparse
import os
import shutil

import keras
import numpy as np
import tensorflow as tf

from keras_albert import AlbertBackbone, AlbertConfig
from keras_albert.training.strategy import build_strategy
from tests.tiny import TINY


def tiny_config(**changes) -> AlbertConfig:
    return AlbertConfig(**{**TINY, **changes})


def tiny_backbone(output_all_layers=False, dtype=None, **changes) -> AlbertBackbone:
    return AlbertBackbone.from_albert_config(
        tiny_config(**changes), output_all_layers=output_all_layers, dtype=dtype
    )


def random_inputs(
    vocabulary_size=64, batch_size=3, sequence_length=12, num_masked=0, seed=0, pad=True
) -> dict:
    """Packed-looking inputs: [CLS] ... [SEP] ... [SEP] then padding of varying length."""
    rng = np.random.default_rng(seed)
    token_ids = rng.integers(5, vocabulary_size, size=(batch_size, sequence_length))
    lengths = (
        rng.integers(sequence_length // 2, sequence_length + 1, size=batch_size)
        if pad
        else np.full(batch_size, sequence_length)
    )
    lengths[0] = sequence_length  # at least one row without padding
    padding_mask = (np.arange(sequence_length)[None, :] < lengths[:, None]).astype("int32")
    token_ids[:, 0] = 2
    token_ids = np.where(padding_mask == 1, token_ids, 0)
    segment_ids = np.zeros_like(token_ids)
    for row, length in enumerate(lengths):
        segment_ids[row, length // 2 : length] = 1
    inputs = {
        "token_ids": token_ids.astype("int32"),
        "segment_ids": segment_ids.astype("int32"),
        "padding_mask": padding_mask,
    }
    if num_masked:
        inputs["mask_positions"] = np.stack(
            [np.sort(rng.choice(np.arange(1, n), num_masked, replace=False)) for n in lengths]
        ).astype("int32")
    return inputs


def perturbed(model, seed):
    """`model`, every weight drawn from `seed` alone (not from the initializers, whose draws
    depend on what ran before in the process): γ around 1, everything else around 0, stddev
    0.2."""
    rng = np.random.default_rng(seed)
    for weight in model.weights:
        center = 1.0 if weight.path.endswith("gamma") else 0.0
        weight.assign(center + rng.normal(0, 0.2, weight.shape).astype("float32"))
    return model


def to_numpy(tree):
    return keras.tree.map_structure(lambda x: np.asarray(keras.ops.convert_to_numpy(x)), tree)


def assert_allclose_tree(actual, expected, atol=1e-6):
    actual, expected = to_numpy(actual), to_numpy(expected)
    keras.tree.assert_same_structure(actual, expected)
    for a, e in zip(keras.tree.flatten(actual), keras.tree.flatten(expected), strict=True):
        np.testing.assert_allclose(a, e, atol=atol, rtol=0)


def check_layer_roundtrips(layer, call_args, tmp_path, atol=1e-6):
    """get_config/from_config gives an equal config; `.keras` save/load gives equal outputs."""
    expected = layer(*call_args)
    clone = layer.__class__.from_config(layer.get_config())
    assert clone.get_config() == layer.get_config()

    inputs = [keras.Input(shape=np.shape(a)[1:], dtype=np.asarray(a).dtype) for a in call_args]
    model = keras.Model(inputs, layer(*inputs))
    path = os.path.join(tmp_path, "layer.keras")
    model.save(path)
    restored = keras.models.load_model(path)
    assert_allclose_tree(restored(list(call_args)), expected, atol=atol)


def check_model_roundtrips(model, inputs, tmp_path, atol=1e-6):
    """Config round trip and `.keras` save/load with equal outputs for a whole model; returns
    the loaded model."""
    expected = model(inputs)
    clone = model.__class__.from_config(model.get_config())
    assert clone.get_config() == model.get_config()
    path = os.path.join(tmp_path, "model.keras")
    model.save(path)
    restored = keras.models.load_model(path)
    assert type(restored) is type(model)
    assert_allclose_tree(restored(inputs), expected, atol=atol)
    return restored


def saved_with_vocabulary(model, directory):
    """`model` saved as `directory/model.keras` with the test SentencePiece model beside it: a
    checkpoint `from_preset` attaches a tokenizer to. Returns the `.keras` path."""
    from tests.text.text_data import ALBERT_MODEL

    path = os.path.join(directory, "model.keras")
    model.save(path)
    shutil.copy(ALBERT_MODEL, os.path.join(directory, os.path.basename(ALBERT_MODEL)))
    return path


def ner_task(data: str, tokenizer=None, **options):
    """A `TokenClassificationTask` training and evaluating on the CoNLL file `data` (the tokenizer
    is needed only for its datasets; `objective` and `build_model` take none)."""
    from keras_albert.finetuning.options import FinetuningOptions
    from keras_albert.tasks.token_classification.task import TokenClassificationTask

    options = FinetuningOptions("ner", data, data, "unused", preset="albert_base_v2", **options)
    return TokenClassificationTask(options, tokenizer)


def subprocess_strategy(parser: argparse.ArgumentParser):
    """For a helper script run as `SCRIPT STRATEGY OUTPUT [--logical-cpus N]` (plus the
    arguments `parser` already holds) in its own process, because logical devices and TF_CONFIG
    must be in place before TensorFlow initializes: parses the arguments, splits the CPU into
    N logical devices and builds the strategy. Returns `(args, strategy)`."""
    parser.add_argument("strategy")
    parser.add_argument("output")
    parser.add_argument("--logical-cpus", type=int, default=1)
    args = parser.parse_args()
    if args.logical_cpus > 1:
        (cpu,) = tf.config.list_physical_devices("CPU")
        tf.config.set_logical_device_configuration(
            cpu, [tf.config.LogicalDeviceConfiguration()] * args.logical_cpus
        )
    return args, build_strategy(args.strategy)
