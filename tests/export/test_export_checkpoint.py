"""`export_checkpoint` starts from the resolver: its SentencePiece model is found or asked for."""

import os

import pytest

from keras_albert import AlbertBackbone, AlbertClassifier
from keras_albert.export import CheckpointSource, export_checkpoint
from tests.helpers import saved_with_vocabulary, tiny_backbone
from tests.tiny import TINY_30K

SENTENCEPIECE_MODEL = os.path.join(
    os.path.dirname(os.path.dirname(__file__)), "data", "30k-clean.model"
)


def test_a_checkpoint_without_a_vocabulary_beside_it_asks_for_one(tmp_path):
    tiny_backbone().save(tmp_path / "backbone.keras")
    with pytest.raises(ValueError, match="`vocabulary` must be given") as error:
        export_checkpoint(tmp_path / "backbone.keras", base_dir=tmp_path / "saved_models")
    assert "backbone.keras" in str(error.value)
    with pytest.raises(ValueError, match="`vocabulary` must be an existing file"):
        export_checkpoint(CheckpointSource(tmp_path / "backbone.keras", tmp_path / "missing.model"))
    with pytest.raises(FileNotFoundError, match="not found.*nothing.keras"):
        export_checkpoint(CheckpointSource(tmp_path / "nothing.keras", SENTENCEPIECE_MODEL))


def test_a_source_gives_the_model_and_the_tokenizer_beside_it(tmp_path):
    path = saved_with_vocabulary(
        AlbertClassifier(AlbertBackbone(**TINY_30K), num_classes=2), tmp_path
    )
    model, tokenizer = CheckpointSource(path, lowercase=False).load()
    assert isinstance(model, AlbertClassifier) and not tokenizer.lowercase
    backbone, same = CheckpointSource(path, model_kind="backbone", lowercase=False).load()
    assert isinstance(backbone, AlbertBackbone) and not same.lowercase
    assert same.serialized_model == tokenizer.serialized_model
