"""Where the drivers' weights come from: our pretraining output, `.keras` files and converted
checkpoints into a classifier in one call; the SentencePiece model beside a checkpoint."""

import json

import numpy as np
import pytest

from keras_albert import AlbertClassifier, AlbertPretrainer
from keras_albert.convert import find_sentencepiece_model, load_checkpoint, save_checkpoint
from keras_albert.training.lamb import Lamb
from keras_albert.training.schedule import WarmupPolynomialDecay
from tests.helpers import tiny_backbone


def classifier_from_pretrained(source, num_classes):
    """What the fine-tuning driver builds (`keras_albert.finetuning.driver`)."""
    return AlbertClassifier(load_checkpoint(source, model="backbone"), num_classes=num_classes)


def _assert_same_backbone(actual, expected):
    assert len(actual.weights) == len(expected.weights)
    for a, e in zip(actual.weights, expected.weights, strict=True):
        np.testing.assert_array_equal(a.numpy(), e.numpy())


def test_classifier_from_our_pretraining_output_in_one_call(tmp_path):
    pretrainer = AlbertPretrainer(tiny_backbone())
    # As the pretraining driver saves it: compiled with its optimizer.
    pretrainer.compile(optimizer=Lamb(WarmupPolynomialDecay(1e-3, 1, 10)), loss="mse")
    output_dir = tmp_path / "pretraining"
    output_dir.mkdir()
    pretrainer.save(output_dir / "pretrainer.keras")
    (output_dir / "run.json").write_text(json.dumps({"vocabulary": "/spm/austen.model"}))

    for source in (output_dir, output_dir / "pretrainer.keras"):
        classifier = classifier_from_pretrained(source, num_classes=2)
        assert isinstance(classifier, AlbertClassifier) and classifier.num_classes == 2
        _assert_same_backbone(classifier.backbone, pretrainer.backbone)
    assert find_sentencepiece_model(str(output_dir)) == "/spm/austen.model"
    # A run.json as the pretraining driver writes it today names `vocabulary`.
    (output_dir / "run.json").write_text(json.dumps({"vocabulary": "/spm/new.model"}))
    assert find_sentencepiece_model(str(output_dir)) == "/spm/new.model"

    backbone = tiny_backbone()
    backbone.save(tmp_path / "backbone.keras")
    _assert_same_backbone(load_checkpoint(tmp_path / "backbone.keras", model="backbone"), backbone)
    save_checkpoint(pretrainer, str(tmp_path / "hf"), format="hf")
    _assert_same_backbone(load_checkpoint(tmp_path / "hf", model="backbone"), pretrainer.backbone)

    # The head is fresh: two loads give the same backbone and different head initializations.
    first = classifier_from_pretrained(output_dir, num_classes=2)
    second = classifier_from_pretrained(output_dir, num_classes=2)
    assert not np.array_equal(
        first.get_layer("logits").kernel.numpy(), second.get_layer("logits").kernel.numpy()
    )
    with pytest.raises(FileNotFoundError, match="missing.keras"):
        load_checkpoint(tmp_path / "missing.keras", model="backbone")
