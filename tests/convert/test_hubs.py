"""Hub names: `hf://` and `kaggle://` sources, read from the hub libraries' own caches (laid out
here in a temporary directory, offline: no test downloads anything) as their local directories
are."""

import os
import shutil
import sys

import huggingface_hub.constants
import numpy as np
import pytest
import transformers

from keras_albert import AlbertBackbone, AlbertClassifier
from keras_albert.convert import (
    CheckpointNotFoundError,
    find_vocabulary,
    load_checkpoint,
    save_checkpoint,
)
from keras_albert.convert.hubs import is_hub_name, local_source
from tests.convert.hf_reference import CONFIGS, hf_model
from tests.helpers import tiny_config
from tests.text.text_data import ALBERT_MODEL

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def assert_same_weights(actual, expected):
    assert type(actual) is type(expected)
    actual_weights = {w.path: w.numpy() for w in actual.weights}
    expected_weights = {w.path: w.numpy() for w in expected.weights}
    assert actual_weights.keys() == expected_weights.keys()
    for path, value in expected_weights.items():
        np.testing.assert_allclose(actual_weights[path], value, rtol=0, atol=1e-6, err_msg=path)


@pytest.fixture
def hf_cache(tmp_path, monkeypatch):
    """An empty huggingface_hub cache, offline. huggingface_hub reads its environment once, at
    import: its constants are patched beside the variables."""
    cache = tmp_path / "hf_home" / "hub"
    cache.mkdir(parents=True)
    monkeypatch.setenv("HF_HOME", str(cache.parent))
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    constants = huggingface_hub.constants
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    return cache


def put_in_hf_cache(cache, repo_id: str, directory) -> None:
    """`directory`'s files as huggingface_hub caches a repository's snapshot: under
    models--owner--name/snapshots/<commit>/, with refs/main naming the commit."""
    repository = cache / f"models--{repo_id.replace('/', '--')}"
    shutil.copytree(directory, repository / "snapshots" / COMMIT)
    (repository / "refs").mkdir()
    (repository / "refs" / "main").write_text(COMMIT)


@pytest.fixture
def hf_classifier(tmp_path, hf_cache):
    """A tiny transformers classifier with a SentencePiece model beside it, saved as a local
    directory and cached as `owner/tiny-albert`."""
    reference = hf_model(
        transformers.AlbertForSequenceClassification,
        dict(CONFIGS["groups_and_inner_repetitions"], num_labels=3),
    )
    local = tmp_path / "local"
    reference.save_pretrained(local)
    shutil.copy(ALBERT_MODEL, local / "spiece.model")
    put_in_hf_cache(hf_cache, "owner/tiny-albert", local)
    return local


def test_hf_name_loads_the_cached_snapshot_as_its_directory(hf_classifier):
    expected = load_checkpoint(hf_classifier)
    assert type(expected) is AlbertClassifier
    assert_same_weights(load_checkpoint("hf://owner/tiny-albert"), expected)
    assert_same_weights(load_checkpoint(f"hf://owner/tiny-albert@{COMMIT}"), expected)
    assert_same_weights(
        load_checkpoint("hf://owner/tiny-albert", model="backbone"), expected.backbone
    )


def test_from_preset_of_an_hf_name_finds_its_weights_and_vocabulary(hf_classifier):
    model = AlbertClassifier.from_preset("hf://owner/tiny-albert")
    assert_same_weights(model, load_checkpoint(hf_classifier))
    assert model.preprocessor is not None
    assert os.path.basename(find_vocabulary("hf://owner/tiny-albert")) == "spiece.model"


def test_uncached_hf_name_offline_fails_in_one_line(hf_cache):
    with pytest.raises(CheckpointNotFoundError) as raised:
        load_checkpoint("hf://owner/not-cached")
    message = str(raised.value)
    assert "\n" not in message
    assert "owner/not-cached" in message
    assert "HF_HUB_OFFLINE" in message and "hf download owner/not-cached" in message


def test_uncached_revision_of_a_cached_hf_repository_fails(hf_classifier):
    with pytest.raises(CheckpointNotFoundError, match="owner/tiny-albert@v2 is not in"):
        load_checkpoint("hf://owner/tiny-albert@v2")


@pytest.fixture
def kaggle_cache(tmp_path, monkeypatch):
    cache = tmp_path / "kagglehub"
    monkeypatch.setenv("KAGGLEHUB_CACHE", str(cache))
    return cache


def put_in_kaggle_cache(cache, handle: str, version: int, directory) -> None:
    """`directory` as kagglehub caches a model version: models/<handle>/<version>/, marked
    complete by models/<handle>/<version>.complete."""
    model = cache / "models" / handle
    shutil.copytree(directory, model / str(version))
    (model / f"{version}.complete").touch()


def test_kaggle_handle_loads_the_cached_keras_hub_preset(tmp_path, kaggle_cache):
    backbone = AlbertBackbone.from_albert_config(tiny_config(vocabulary_size=40, num_layers=2))
    rng = np.random.default_rng(0)
    backbone.set_weights([rng.normal(size=w.shape).astype("float32") for w in backbone.weights])
    save_checkpoint(backbone, tmp_path / "preset", format="keras_hub")
    put_in_kaggle_cache(kaggle_cache, "keras/albert/keras/tiny", 2, tmp_path / "preset")

    expected = load_checkpoint(tmp_path / "preset")
    assert type(expected) is AlbertBackbone
    assert_same_weights(load_checkpoint("kaggle://keras/albert/keras/tiny/2"), expected)
    assert_same_weights(AlbertBackbone.from_preset("kaggle://keras/albert/keras/tiny/2"), expected)


@pytest.mark.parametrize(
    "source",
    ["hf://owner", "hf://owner/name/extra", "hf://owner/name@", "kaggle://keras/albert/keras"],
)
def test_malformed_hub_names_fail_in_one_line(source, hf_cache, kaggle_cache):
    with pytest.raises(ValueError, match="^`source` must be a (Hugging Face|Kaggle)") as raised:
        load_checkpoint(source)
    assert "\n" not in str(raised.value)


@pytest.mark.parametrize(
    "source,library",
    [("hf://owner/name", "huggingface_hub"), ("kaggle://keras/albert/keras/tiny", "kagglehub")],
)
def test_missing_hub_library_says_what_to_install(source, library, monkeypatch):
    monkeypatch.setitem(sys.modules, library, None)  # an import of it fails, as uninstalled
    with pytest.raises(ImportError, match=f"Install it with pip install {library} ") as raised:
        load_checkpoint(source)
    assert "\n" not in str(raised.value)


def test_local_sources_are_not_hub_names(tmp_path):
    assert not is_hub_name(str(tmp_path)) and not is_hub_name("base")
    assert local_source(tmp_path) == str(tmp_path)
    assert is_hub_name("hf://a/b") and is_hub_name("kaggle://a/b/c/d")
