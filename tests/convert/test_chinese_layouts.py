"""The Chinese releases' layouts: a WordPiece vocabulary beside the weights and no SentencePiece
model. `load_checkpoint` loads them and `find_vocabulary` finds their vocabulary."""

import json
import os
import shutil

import numpy as np
import pytest

from keras_albert import AlbertBackbone, AlbertConfig, AlbertPretrainer, AlbertTokenizer
from keras_albert.convert import (
    find_sentencepiece_model,
    find_vocabulary,
    load_checkpoint,
    resolve_normalization,
    save_checkpoint,
)
from tests.convert.test_tf1 import (
    ORIGINAL_CONFIG,
    PRETRAINING_HEADS,
    assert_landed,
    expected_names,
    write_tf1_checkpoint,
)
from tests.text.text_data import DATA

VOCABULARY = DATA / "zh" / "vocab_chinese.txt"
# albert_base_zh's vocabulary on a tiny architecture.
CHINESE_CONFIG = {**ORIGINAL_CONFIG, "vocab_size": 21128}


def test_an_original_chinese_release_loads_with_its_vocabulary(tmp_path):
    config = AlbertConfig.from_original_config(CHINESE_CONFIG)
    names = expected_names(config, PRETRAINING_HEADS)
    values = write_tf1_checkpoint(
        tmp_path, AlbertPretrainer(AlbertBackbone.from_albert_config(config)), names
    )
    # The release's file names: albert_model.ckpt.* without a 'checkpoint' file.
    for name in os.listdir(tmp_path):
        if name.startswith("model.ckpt-100."):
            os.rename(
                tmp_path / name, tmp_path / name.replace("model.ckpt-100", "albert_model.ckpt")
            )
    os.remove(tmp_path / "checkpoint")
    (tmp_path / "albert_config.json").write_text(json.dumps(CHINESE_CONFIG))
    shutil.copy(VOCABULARY, tmp_path / "vocab_chinese.txt")

    model = load_checkpoint(tmp_path)
    assert isinstance(model, AlbertPretrainer)
    assert_landed(model, names, values)
    vocabulary = find_vocabulary(tmp_path)
    assert vocabulary == str(tmp_path / "vocab_chinese.txt")
    tokenizer = AlbertTokenizer(vocabulary)
    assert tokenizer.wordpiece and tokenizer.vocabulary_size == 21128
    # 酒 and 店 are lines 6984 and 2422 of the vocabulary (ids count from 0).
    assert tokenizer.encode("酒店") == [6983, 2421]


def test_a_hugging_face_directory_with_vocab_txt_loads_with_its_vocabulary(tmp_path):
    config = AlbertConfig.from_original_config(CHINESE_CONFIG)
    backbone = AlbertBackbone.from_albert_config(config)
    save_checkpoint(backbone, tmp_path / "hf", format="hf")
    shutil.copy(VOCABULARY, tmp_path / "hf" / "vocab.txt")
    assert not (tmp_path / "hf" / "spiece.model").exists()

    loaded = load_checkpoint(tmp_path / "hf", model="backbone")
    vocabulary = find_vocabulary(tmp_path / "hf")
    assert vocabulary == str(tmp_path / "hf" / "vocab.txt")
    tokenizer = AlbertTokenizer(vocabulary)
    ids = np.array([[tokenizer.cls_id, *tokenizer.encode("房间很干净"), tokenizer.sep_id]])
    inputs = {"token_ids": ids, "segment_ids": 0 * ids, "padding_mask": 1 + 0 * ids}
    np.testing.assert_allclose(
        loaded(inputs)["pooled_output"], backbone(inputs)["pooled_output"], atol=1e-6
    )


def test_a_sentencepiece_model_wins_and_the_old_name_still_finds(tmp_path):
    best = tmp_path / "best.keras"  # a fine-tuning run's model
    best.write_bytes(b"")
    shutil.copy(VOCABULARY, tmp_path / "vocab.txt")
    assert find_sentencepiece_model(best) == str(tmp_path / "vocab.txt")
    (tmp_path / "spiece.model").write_bytes(b"spm")
    assert find_vocabulary(best) == str(tmp_path / "spiece.model")
    (tmp_path / "other.model").write_bytes(b"spm")
    assert find_vocabulary(best) is None  # two SentencePiece models: no guess
    assert find_vocabulary("albert_base_v2") is None


def test_normalization_is_given_else_recorded_else_the_default(tmp_path):
    (tmp_path / "best.keras").write_bytes(b"")
    assert resolve_normalization(tmp_path / "best.keras") == {
        "lowercase": True,
        "strip_accents": True,
    }
    (tmp_path / "summary.json").write_text(json.dumps({"strip_accents": False}))
    assert resolve_normalization(tmp_path / "best.keras") == {
        "lowercase": True,
        "strip_accents": False,
    }
    (tmp_path / "run.json").write_text(json.dumps({"lowercase": False}))  # run.json wins
    assert resolve_normalization(tmp_path) == {"lowercase": False, "strip_accents": False}
    assert resolve_normalization(tmp_path, lowercase=True) == {
        "lowercase": True,
        "strip_accents": False,
    }
    assert resolve_normalization("albert_base_v2") == {"lowercase": True, "strip_accents": True}
    (tmp_path / "run.json").write_text(json.dumps({"lowercase": "no"}))
    with pytest.raises(ValueError, match="`lowercase` must be one of True, False"):
        resolve_normalization(tmp_path)
