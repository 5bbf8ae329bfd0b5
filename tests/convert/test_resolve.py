"""The checkpoint resolver: every accepted source → the model asked for, with its weights."""

import json
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_albert import AlbertBackbone, AlbertClassifier, AlbertPretrainer, get_preset
from keras_albert.convert import (
    ACCEPTED_FORMS,
    CheckpointNotFoundError,
    CorruptCheckpointError,
    detect_format,
    find_sentencepiece_model,
    load_checkpoint,
    resolve_config,
    save_checkpoint,
)
from keras_albert.convert.name_table import read_from_table
from keras_albert.convert.tf1 import tf1_name_table
from tests.helpers import random_inputs, tiny_config

CONFIG = tiny_config(vocabulary_size=40, num_layers=2, max_sequence_length=16)
INPUTS = random_inputs(vocabulary_size=40, batch_size=2, sequence_length=10, num_masked=2)


def _pretrainer(seed=0) -> AlbertPretrainer:
    """A pretrainer whose every weight is a distinct random value (no zero biases or unit
    LayerNorm scales that a fresh model would share by chance)."""
    model = AlbertPretrainer(AlbertBackbone.from_albert_config(CONFIG))
    rng = np.random.default_rng(seed)
    model.set_weights([rng.normal(size=w.shape).astype("float32") for w in model.weights])
    return model


def _classifier(num_classes=3) -> AlbertClassifier:
    model = AlbertClassifier(_pretrainer().backbone, num_classes=num_classes)
    rng = np.random.default_rng(1)
    model.get_layer("logits").set_weights(
        [rng.normal(size=w.shape).astype("float32") for w in model.get_layer("logits").weights]
    )
    return model


def _assert_same_weights(actual, expected):
    assert type(actual) is type(expected)
    actual_weights = {w.path: w.numpy() for w in actual.weights}
    expected_weights = {w.path: w.numpy() for w in expected.weights}
    assert actual_weights.keys() == expected_weights.keys()
    for path, value in expected_weights.items():
        np.testing.assert_allclose(actual_weights[path], value, rtol=0, atol=1e-6, err_msg=path)


def _assert_same_outputs(actual, expected):
    inputs = INPUTS if isinstance(expected, AlbertPretrainer) else _without_masks(INPUTS)
    outputs = zip(tf.nest.flatten(actual(inputs)), tf.nest.flatten(expected(inputs)), strict=True)
    for a, e in outputs:
        np.testing.assert_allclose(np.asarray(a), np.asarray(e), atol=1e-5)


def _without_masks(inputs):
    return {k: v for k, v in inputs.items() if k != "mask_positions"}


def _write_tf1(directory, model: AlbertPretrainer) -> None:
    """The original release's layout: `albert_config.json` + a TF1 `Saver` checkpoint."""
    tensors = read_from_table(model.weights, tf1_name_table(CONFIG, "pretrainer"))
    with tf.Graph().as_default():
        variables = [tf.compat.v1.Variable(value, name=name) for name, value in tensors.items()]
        saver = tf.compat.v1.train.Saver(variables)
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            saver.save(session, str(directory / "model.ckpt-7"))
    (directory / "albert_config.json").write_text(json.dumps(CONFIG.to_original_config()))


def _write_pretraining_checkpoints(directory, model: AlbertPretrainer, run: dict) -> None:
    """An unfinished pretraining run: `checkpoints/ckpt-N` of the model and its optimizer."""
    optimizer = keras.optimizers.Adam()
    optimizer.build(model.trainable_variables)
    checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer)
    manager = tf.train.CheckpointManager(checkpoint, str(directory / "checkpoints"), 2)
    manager.save(checkpoint_number=3)
    (directory / "run.json").write_text(json.dumps(run))


def _source(form: str, tmp_path):
    """(source, the model it holds, extra arguments) for one accepted form."""
    pretrainer = _pretrainer()
    if form == "keras_pretrainer":
        pretrainer.save(tmp_path / "p.keras")
        return tmp_path / "p.keras", pretrainer, {}
    if form == "keras_backbone":
        pretrainer.backbone.save(tmp_path / "b.keras")
        return tmp_path / "b.keras", pretrainer.backbone, {}
    if form == "keras_classifier":
        classifier = _classifier()
        classifier.save(tmp_path / "c.keras")
        return tmp_path / "c.keras", classifier, {}
    if form == "weights_pretrainer":
        pretrainer.save_weights(tmp_path / "p.weights.h5")
        return tmp_path / "p.weights.h5", pretrainer, {"config": CONFIG}
    if form == "weights_classifier":
        classifier = _classifier(num_classes=4)
        classifier.save_weights(tmp_path / "c.weights.h5")
        CONFIG.to_json(tmp_path / "config.json")  # `config` may be a path
        return tmp_path / "c.weights.h5", classifier, {"config": str(tmp_path / "config.json")}
    if form == "hf":
        save_checkpoint(pretrainer, tmp_path / "hf", format="hf")
        return tmp_path / "hf", pretrainer, {}
    if form == "tf1_directory":
        _write_tf1(tmp_path, pretrainer)
        return tmp_path, pretrainer, {}
    if form == "tf1_prefix":
        _write_tf1(tmp_path, pretrainer)
        return tmp_path / "model.ckpt-7", pretrainer, {"config": CONFIG}
    if form == "pretraining_output":
        pretrainer.save(tmp_path / "pretrainer.keras")
        (tmp_path / "run.json").write_text("{}")
        return tmp_path, pretrainer, {}
    if form == "pretraining_checkpoints":
        _write_pretraining_checkpoints(tmp_path, pretrainer, {"config": CONFIG.to_dict()})
        return tmp_path, pretrainer, {}
    raise AssertionError(form)


FORMS = {
    "keras_pretrainer": "keras",
    "keras_backbone": "keras",
    "keras_classifier": "keras",
    "weights_pretrainer": "weights",
    "weights_classifier": "weights",
    "hf": "hf",
    "tf1_directory": "tf1",
    "tf1_prefix": "tf1",
    "pretraining_output": "training_output",
    "pretraining_checkpoints": "training_output",
}


@pytest.mark.parametrize("form", FORMS)
def test_every_form_gives_its_own_model_with_its_weights(form, tmp_path):
    source, expected, extra = _source(form, tmp_path)
    assert detect_format(source) == FORMS[form]
    model = load_checkpoint(source, **extra)
    _assert_same_weights(model, expected)
    _assert_same_outputs(model, expected)
    expected_backbone = expected if isinstance(expected, AlbertBackbone) else expected.backbone
    assert resolve_config(source, extra.get("config")) == CONFIG
    # Any form gives the backbone alone.
    _assert_same_weights(load_checkpoint(source, model="backbone", **extra), expected_backbone)


@pytest.mark.parametrize("form", ["keras_backbone", "keras_classifier"])
def test_a_pretrainer_around_a_checkpoint_without_its_heads_gets_fresh_ones(form, tmp_path, capsys):
    source, expected, extra = _source(form, tmp_path)
    model = load_checkpoint(source, model="pretrainer")
    assert isinstance(model, AlbertPretrainer)
    _assert_same_weights(model.backbone, getattr(expected, "backbone", expected))
    assert "heads are freshly initialized" in capsys.readouterr().out


def test_a_classifier_around_a_pretrainer_needs_num_classes(tmp_path, capsys):
    source, expected, _ = _source("keras_pretrainer", tmp_path)
    with pytest.raises(ValueError, match="`num_classes` must be given"):
        load_checkpoint(source, model="classification")
    model = load_checkpoint(source, model="classification", num_classes=5)
    assert isinstance(model, AlbertClassifier) and model.num_classes == 5
    _assert_same_weights(model.backbone, expected.backbone)
    assert "head is freshly initialized" in capsys.readouterr().out
    with pytest.raises(ValueError, match="must match the classification model"):
        load_checkpoint(_source("keras_classifier", tmp_path)[0], num_classes=2)


def test_fresh_weights_from_a_preset_or_any_config_file(tmp_path):
    assert detect_format("albert_base_v2") == "preset"
    assert resolve_config("albert_base_v2") == get_preset("albert_base_v2")
    CONFIG.to_json(tmp_path / "ours.json")
    (tmp_path / "albert_config.json").write_text(json.dumps(CONFIG.to_original_config()))
    (tmp_path / "config.json").write_text(json.dumps(CONFIG.to_hf_config()))
    (tmp_path / "albert.cfg").write_text(CONFIG.to_json())
    for name in ("ours.json", "albert_config.json", "config.json", "albert.cfg"):
        assert detect_format(tmp_path / name) == "config"
        assert resolve_config(tmp_path / name) == CONFIG
    model = load_checkpoint(tmp_path / "ours.json")
    assert isinstance(model, AlbertBackbone) and model.albert_config == CONFIG
    pretrainer = load_checkpoint(tmp_path / "ours.json", model="pretrainer")
    assert isinstance(pretrainer, AlbertPretrainer)


def test_weights_only_files_and_unrecorded_runs_need_config(tmp_path):
    source, _, _ = _source("weights_pretrainer", tmp_path)
    with pytest.raises(ValueError, match="`config` must be given .*Received: config=None"):
        load_checkpoint(source)
    run = tmp_path / "run"
    run.mkdir()
    _write_pretraining_checkpoints(run, _pretrainer(), {"seed": 1})
    with pytest.raises(ValueError, match="neither run.json nor summary.json records"):
        load_checkpoint(run)
    _assert_same_weights(load_checkpoint(run, config=CONFIG), _pretrainer())


def _cut_in_half(path) -> None:
    data = open(path, "rb").read()
    with open(path, "wb") as file:
        file.write(data[: len(data) // 2])


@pytest.mark.parametrize("form", ["keras", "weights", "tf_checkpoint", "training_output"])
def test_a_truncated_checkpoint_is_named_as_truncated(form, tmp_path):
    """A file cut short (an interrupted copy) is refused naming it, never "File not found"."""
    model = _pretrainer()
    if form == "keras":
        source = damaged = tmp_path / "model.keras"
        model.save(source)
    elif form == "weights":
        source = damaged = tmp_path / "model.weights.h5"
        model.save_weights(source)
    else:
        checkpoint = tf.train.Checkpoint(model=model)
        manager = tf.train.CheckpointManager(checkpoint, str(tmp_path / "checkpoints"), 3)
        prefix = manager.save(checkpoint_number=3)
        source = prefix if form == "tf_checkpoint" else tmp_path
        damaged = prefix + ".index"
    _cut_in_half(damaged)
    with pytest.raises(CorruptCheckpointError, match="truncated or corrupt") as error:
        load_checkpoint(source, config=CONFIG)
    message = str(error.value)
    assert str(damaged).removesuffix(".index") in message
    assert "not found" not in message.lower()


def test_a_missing_path_is_not_found_and_an_unknown_one_lists_every_form(tmp_path):
    missing = tmp_path / "nothing-here.keras"
    with pytest.raises(CheckpointNotFoundError, match="not found") as error:
        load_checkpoint(missing)
    assert str(missing) in str(error.value)
    assert isinstance(error.value, FileNotFoundError) and isinstance(error.value, ValueError)

    (tmp_path / "notes.txt").write_text("not a checkpoint")
    (tmp_path / "empty").mkdir()
    for unknown in (tmp_path / "notes.txt", tmp_path / "empty"):
        with pytest.raises(ValueError, match="Cannot tell the checkpoint format") as error:
            load_checkpoint(unknown)
        for form in ACCEPTED_FORMS:
            assert form in str(error.value)
    with pytest.raises(ValueError, match="`model` must be one of"):
        load_checkpoint(tmp_path / "notes.txt", model="tagger")


def test_find_sentencepiece_model_beside_the_checkpoint_or_named_by_the_run(tmp_path):
    beside = tmp_path / "release"
    beside.mkdir()
    (beside / "30k-clean.model").write_bytes(b"spm")
    (beside / "model.keras").write_bytes(b"")
    assert find_sentencepiece_model(beside) == str(beside / "30k-clean.model")
    assert find_sentencepiece_model(beside / "model.keras") == str(beside / "30k-clean.model")
    (beside / "other.model").write_bytes(b"spm")
    assert find_sentencepiece_model(beside) is None  # two candidates: no guess

    for key in ("vocabulary", "sentencepiece_model"):  # the run.json key before WordPiece
        run = tmp_path / key
        run.mkdir()
        (run / "pretrainer.keras").write_bytes(b"")
        (run / "run.json").write_text(json.dumps({key: "/spm/austen.model"}))
        assert find_sentencepiece_model(run) == "/spm/austen.model"
        assert find_sentencepiece_model(run / "pretrainer.keras") == "/spm/austen.model"
    assert find_sentencepiece_model("albert_base_v2") is None
    assert find_sentencepiece_model(None) is None


def test_a_hugging_face_directory_missing_a_weight_or_cut_short_is_named(tmp_path):
    from safetensors.numpy import load_file, save_file

    save_checkpoint(_pretrainer(), tmp_path / "hf", format="hf")
    weights = tmp_path / "hf" / "model.safetensors"
    tensors = load_file(weights)
    missing = sorted(tensors)[0]
    save_file({k: v for k, v in tensors.items() if k != missing}, weights)
    with pytest.raises(ValueError) as error:
        load_checkpoint(tmp_path / "hf")
    message = " ".join(str(error.value).split())
    assert message.startswith(f"{tmp_path / 'hf'}: ") and f"missing tensor '{missing}'" in message

    _cut_in_half(weights)
    with pytest.raises(CorruptCheckpointError, match="truncated or corrupt") as error:
        load_checkpoint(tmp_path / "hf")
    assert str(tmp_path / "hf") in str(error.value)


def test_a_hugging_face_directory_is_written_with_the_umasks_permissions(tmp_path):
    """safetensors writes through a private temporary file (0o600): a server or a colleague
    running as another user could not read the converted weights."""
    previous = os.umask(0o022)
    try:
        save_checkpoint(_pretrainer(), tmp_path / "hf", format="hf")
    finally:
        os.umask(previous)
    for name in ("model.safetensors", "config.json"):
        assert os.stat(tmp_path / "hf" / name).st_mode & 0o777 == 0o644, name
