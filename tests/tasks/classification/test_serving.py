"""`ClassificationServingModule`: the classifier's and regressor's string-in module, the base's
packing with the classifier's outputs and `serve_examples`; `class_names` are its alone.
(The exports served by TF Serving's loader: tests/export/test_serving_export.py.)"""

import pytest
import tensorflow as tf

from keras_albert import AlbertClassifier, AlbertPretrainer
from keras_albert.export import AlbertServingModule, ClassificationServingModule, serving_module
from keras_albert.text.tokenizer import AlbertTokenizer
from tests.helpers import tiny_backbone
from tests.text._paths import ALBERT_SPM


@pytest.fixture(scope="module")
def tokenizer():
    return AlbertTokenizer(ALBERT_SPM)


def backbone():
    return tiny_backbone(vocabulary_size=30000, max_sequence_length=32)


@pytest.mark.parametrize("num_classes", [3, 1], ids=["classifier", "regressor"])
def test_the_export_dispatch_gives_the_classifier_its_module(tokenizer, num_classes):
    model = AlbertClassifier(backbone(), num_classes=num_classes)
    module = serving_module(model, tokenizer, text_pair=True, pad_to_max_length=True)
    assert type(module) is ClassificationServingModule
    assert isinstance(module, AlbertServingModule)  # the base's packing and signatures
    assert list(module.endpoints) == ["serving_default", "serve_token_ids", "serve_examples"]
    outputs = module.endpoints["serving_default"](
        text=tf.constant(["a fine film", "dull"]), text_pair=tf.constant(["yes", "no"])
    )
    if num_classes == 1:
        assert module.task == "regression" and module.class_names is None
        assert {name: value.shape for name, value in outputs.items()} == {"score": [2]}
    else:
        assert module.task == "classification" and module.class_names == ("0", "1", "2")
        assert sorted(outputs) == ["label", "logits", "probabilities"]
        assert outputs["logits"].shape == [2, 3] and outputs["label"].dtype == tf.int32
        # Padded to max_sequence_length: the base's packing options reach the subclass.
        assert module.pack(tf.constant(["a"]))["token_ids"].shape == [1, 32]


def test_each_module_refuses_the_other_models(tokenizer):
    with pytest.raises(TypeError, match="must be an AlbertBackbone or AlbertPretrainer"):
        AlbertServingModule(AlbertClassifier(backbone(), num_classes=2), tokenizer)
    with pytest.raises(TypeError, match=r"must be an AlbertClassifier\. Received: model="):
        ClassificationServingModule(AlbertPretrainer(backbone()), tokenizer)


def test_class_names_are_the_classifiers_alone(tokenizer):
    with pytest.raises(
        ValueError,
        match=r"`class_names` must be left unset for a pretrainer model .*AlbertServingModule.*"
        r"Received: class_names=\('a', 'b'\)",
    ):
        serving_module(AlbertPretrainer(backbone()), tokenizer, class_names=["a", "b"])
    regressor = AlbertClassifier(backbone(), num_classes=1)
    with pytest.raises(ValueError, match="`class_names` must be None for a regression model"):
        serving_module(regressor, tokenizer, class_names=["a"])
    classifier = AlbertClassifier(backbone(), num_classes=2)
    with pytest.raises(ValueError, match=r"`class_names` must be 2 strings \(one per class\)"):
        serving_module(classifier, tokenizer, class_names=["a", "b", "c"])
    module = serving_module(classifier, tokenizer, class_names=["no", "yes"])
    assert module.class_names == ("no", "yes")
