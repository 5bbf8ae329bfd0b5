"""A Chinese classifier exported from a fine-tuning run's layout (best.keras, vocab.txt beside
it): served in a fresh process without keras_albert as the Keras model answers, and with the
normalization its run recorded."""

import json
import shutil
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_albert.export import CheckpointSource, export_checkpoint
from keras_albert.models import AlbertBackbone
from keras_albert.tasks.classification.model import AlbertClassifier
from keras_albert.text.tokenizer import AlbertTokenizer
from tests.export.conftest import TINY_SIZES
from tests.text.text_data import DATA

VOCABULARY = DATA / "zh" / "vocab_chinese.txt"
PROBE = DATA.parent.parent / "tools" / "probe_saved_model.py"
REVIEWS = ["这家酒店很好，早餐不错！", "房间太小，服务一般。", "Wi-Fi 很慢，ＡＢＣ１２３"]


def keras_probabilities(model, tokenizer, texts):
    """The Keras model's class probabilities, one unpadded sequence at a time."""
    rows = []
    for text in texts:
        ids = np.array([[tokenizer.cls_id, *tokenizer.encode(text), tokenizer.sep_id]])
        inputs = {
            "token_ids": ids,
            "segment_ids": np.zeros_like(ids),
            "padding_mask": np.ones_like(ids),
        }
        rows.append(tf.nn.softmax(model(inputs)).numpy()[0])
    return np.array(rows)


def fine_tuning_run(directory, seed=0):
    """best.keras and vocab.txt, as fine-tuning leaves them with a WordPiece vocabulary."""
    directory.mkdir()
    keras.utils.set_random_seed(seed)
    sizes = dict(TINY_SIZES, vocabulary_size=AlbertTokenizer(VOCABULARY).vocabulary_size)
    model = AlbertClassifier(AlbertBackbone(**sizes), num_classes=2)
    # A random model's probabilities barely move with the text; a larger head makes them.
    head = model.get_layer("logits")
    head.kernel.assign(head.kernel * 300.0)
    model.save(directory / "best.keras")
    shutil.copy(VOCABULARY, directory / "vocab.txt")
    return model


@pytest.mark.slow
def test_chinese_export_answers_in_a_fresh_process_like_the_keras_model(tmp_path):
    model = fine_tuning_run(tmp_path / "run")
    path = export_checkpoint(
        tmp_path / "run" / "best.keras",
        base_dir=tmp_path / "models",
        name="chnsenticorp",
        class_names=["negative", "positive"],
    )
    assert (tmp_path / "models" / "chnsenticorp" / "1" / "assets" / "vocab.txt").is_file()

    result = subprocess.run(
        [sys.executable, str(PROBE), path, *REVIEWS, "--repeats", "0"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    served = json.loads(result.stdout)
    assert served["keras_albert_imported"] is False
    assert [p["text"] for p in served["predictions"]] == REVIEWS
    probed = np.array([p["probabilities"] for p in served["predictions"]])
    expected = keras_probabilities(model, AlbertTokenizer(VOCABULARY), REVIEWS)
    np.testing.assert_allclose(probed, expected, atol=1e-5, rtol=0)
    assert [p["class"] for p in served["predictions"]] == [
        ["negative", "positive"][int(i)] for i in expected.argmax(-1)
    ]


def test_the_export_normalizes_as_the_run_recorded(tmp_path):
    model = fine_tuning_run(tmp_path / "run", seed=1)
    # A cased, accent-keeping run (fine-tuning's summary.json records what is not the default).
    summary = {"task": "generic", "lowercase": False, "strip_accents": False}
    (tmp_path / "run" / "summary.json").write_text(json.dumps(summary))
    path = export_checkpoint(tmp_path / "run" / "best.keras", base_dir=tmp_path / "models")
    texts = ["Crème BRÛLÉE 很好", "Ärger im Café"]
    cased = AlbertTokenizer(VOCABULARY, lowercase=False, strip_accents=False)
    uncased = AlbertTokenizer(VOCABULARY)
    assert [cased.encode(t) for t in texts] != [uncased.encode(t) for t in texts]

    served = tf.saved_model.load(path).signatures["serving_default"](text=tf.constant(texts))
    probabilities = served["probabilities"].numpy()
    np.testing.assert_allclose(
        probabilities, keras_probabilities(model, cased, texts), atol=1e-5, rtol=0
    )
    assert not np.allclose(probabilities, keras_probabilities(model, uncased, texts), atol=1e-4)

    # Given explicitly, the options win over the record.
    source = CheckpointSource(tmp_path / "run" / "best.keras", lowercase=True, strip_accents=True)
    path = export_checkpoint(source, base_dir=tmp_path / "models")
    served = tf.saved_model.load(path).signatures["serving_default"](text=tf.constant(texts))
    np.testing.assert_allclose(
        served["probabilities"].numpy(),
        keras_probabilities(model, uncased, texts),
        atol=1e-5,
        rtol=0,
    )
