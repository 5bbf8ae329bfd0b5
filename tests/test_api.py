"""The top-level API: what users reach for first is one `import keras_albert` away."""

import numpy as np

import keras_albert
from tests.helpers import random_inputs, tiny_config

PUBLIC = (
    "AlbertBackbone",
    "AlbertClassifier",
    "AlbertConfig",
    "AlbertPacker",
    "AlbertPretrainer",
    "AlbertTokenizer",
    "PRESETS",
    "get_preset",
    "load_checkpoint",
    "save_checkpoint",
)


def test_import_keras_albert_exposes_the_public_api():
    assert set(PUBLIC) <= set(keras_albert.__all__)
    for name in keras_albert.__all__:
        assert getattr(keras_albert, name) is not None, name
    from keras_albert.text.packing import AlbertPacker
    from keras_albert.text.tokenizer import AlbertTokenizer

    assert keras_albert.AlbertTokenizer is AlbertTokenizer
    assert keras_albert.AlbertPacker is AlbertPacker


def test_load_checkpoint_round_trips_save_checkpoint(tmp_path):
    config = tiny_config(vocabulary_size=32, num_layers=2)
    model = keras_albert.AlbertClassifier(
        keras_albert.AlbertBackbone.from_albert_config(config), num_classes=2
    )
    rng = np.random.default_rng(0)
    model.set_weights([rng.normal(size=w.shape).astype("float32") for w in model.weights])
    inputs = random_inputs(vocabulary_size=32)
    for destination, extra in (("m.keras", {}), ("m.weights.h5", {"config": config})):
        keras_albert.save_checkpoint(model, tmp_path / destination)
        restored = keras_albert.load_checkpoint(tmp_path / destination, **extra)
        assert isinstance(restored, keras_albert.AlbertClassifier)
        np.testing.assert_allclose(
            np.asarray(restored(inputs)), np.asarray(model(inputs)), rtol=0, atol=1e-6
        )
