"""sentence-transformers directories both ways: a tiny random Hugging Face `AlbertModel` with
`Pooling` (and `Normalize`) saved by sentence-transformers loads as an `AlbertTextEmbedder`
whose embeddings equal `SentenceTransformer.encode`'s; `save_checkpoint(...,
format="sentence_transformers")` writes a directory `SentenceTransformer` loads with the same
embeddings."""

import json
import shutil

import numpy as np
import pytest
import torch
import transformers
from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer.modules import Normalize, Pooling, Transformer

from keras_albert import load_checkpoint, save_checkpoint
from keras_albert.tasks.text_embedding.model import AlbertTextEmbedder
from keras_albert.tasks.text_embedding.sentence_transformers import read_head
from tests.text.text_data import ALBERT_MODEL

TOLERANCE = 1e-5
HIDDEN = 16
SENTENCES = [
    "A man is playing a guitar.",
    "Someone plays the guitar on stage, loudly!",
    "The weather is lovely today, isn't it?",
    "Stocks fell sharply on Monday.",
    "ok",
]
HEADS = [("mean", False), ("mean", True), ("cls", False), ("max", True)]


@pytest.fixture(scope="module")
def hf_directory(tmp_path_factory):
    """A tiny random `AlbertModel` (weights N(0, 0.2²) added, so that sentences differ) with
    the 30k SentencePiece model as its tokenizer."""
    torch.manual_seed(0)
    config = transformers.AlbertConfig(
        vocab_size=30000,
        embedding_size=8,
        hidden_size=HIDDEN,
        intermediate_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        max_position_embeddings=64,
    )
    model = transformers.AlbertModel(config).eval()
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(0.2 * torch.randn_like(parameter))
    directory = tmp_path_factory.mktemp("hf")
    model.save_pretrained(directory)
    shutil.copy(ALBERT_MODEL, directory / "spiece.model")
    tokenizer_config = {"tokenizer_class": "AlbertTokenizer", "model_max_length": 64}
    (directory / "tokenizer_config.json").write_text(json.dumps(tokenizer_config))
    return directory


def sentence_transformers_directory(hf_directory, directory, pooling, normalize):
    modules = [Transformer(str(hf_directory), max_seq_length=64), Pooling(HIDDEN, pooling)]
    reference = SentenceTransformer(modules=modules + [Normalize()] * normalize, device="cpu")
    reference.save(str(directory))
    # sentence-transformers saves the fast tokenizer's tokenizer.json; hub repos keep the
    # SentencePiece model beside it, which our tokenizer reads.
    shutil.copy(ALBERT_MODEL, directory / "spiece.model")
    return reference


@pytest.mark.parametrize(("pooling", "normalize"), HEADS)
def test_a_sentence_transformers_directory_embeds_as_sentence_transformers(
    hf_directory, tmp_path, pooling, normalize
):
    reference = sentence_transformers_directory(hf_directory, tmp_path, pooling, normalize)
    assert read_head(tmp_path)[1] == {"pooling": pooling, "normalize": normalize}
    model = AlbertTextEmbedder.from_preset(tmp_path)
    assert (model.pooling, model.normalize) == (pooling, normalize)
    expected = reference.encode(SENTENCES, convert_to_numpy=True)
    actual = model.predict(SENTENCES, verbose=0)
    np.testing.assert_allclose(actual, expected, rtol=0, atol=TOLERANCE)
    # With no `model=`, the directory is an embedder too; asked, its backbone alone.
    assert isinstance(load_checkpoint(tmp_path), AlbertTextEmbedder)
    assert type(load_checkpoint(tmp_path, model="backbone")).__name__ == "AlbertBackbone"


@pytest.mark.parametrize(("pooling", "normalize"), HEADS)
def test_the_written_directory_loads_in_sentence_transformers(
    hf_directory, tmp_path, pooling, normalize
):
    sentence_transformers_directory(hf_directory, tmp_path / "reference", pooling, normalize)
    model = AlbertTextEmbedder.from_preset(tmp_path / "reference")
    expected = model.predict(SENTENCES, verbose=0)
    save_checkpoint(model, tmp_path / "written", format="sentence_transformers")
    loaded = SentenceTransformer(str(tmp_path / "written"), device="cpu")
    actual = loaded.encode(SENTENCES, convert_to_numpy=True)
    np.testing.assert_allclose(actual, expected, rtol=0, atol=TOLERANCE)
    again = AlbertTextEmbedder.from_preset(tmp_path / "written")
    assert again.get_config()["pooling"] == pooling
    np.testing.assert_allclose(again.predict(SENTENCES, verbose=0), expected, atol=1e-6)


def test_modules_it_cannot_read_are_refused(tmp_path):
    (tmp_path / "1_Pooling").mkdir()
    modules = [
        {"idx": 0, "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
    ]
    (tmp_path / "modules.json").write_text(json.dumps(modules))
    (tmp_path / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode": "lasttoken"}))
    with pytest.raises(ValueError, match=r"`pooling_mode` must be one of mean, cls, max"):
        read_head(tmp_path)
    dense = {"idx": 2, "path": "2_Dense", "type": "sentence_transformers.models.Dense"}
    (tmp_path / "modules.json").write_text(json.dumps([*modules, dense]))
    with pytest.raises(ValueError, match=r"Received: modules=\['Transformer', 'Pooling', 'Dense'"):
        load_checkpoint(tmp_path)
    # Legacy flags: the one set is the mode.
    legacy = {"word_embedding_dimension": 16, "pooling_mode_max_tokens": True}
    (tmp_path / "modules.json").write_text(json.dumps(modules))
    (tmp_path / "1_Pooling" / "config.json").write_text(json.dumps(legacy))
    assert read_head(tmp_path) == (str(tmp_path), {"pooling": "max", "normalize": False})


def test_only_an_embedder_is_written_so(tmp_path):
    from keras_albert import AlbertClassifier
    from tests.helpers import tiny_backbone

    with pytest.raises(ValueError, match=r"`model` must be an AlbertTextEmbedder"):
        save_checkpoint(
            AlbertClassifier(tiny_backbone(), num_classes=2),
            tmp_path / "x",
            "sentence_transformers",
        )
    with pytest.raises(ValueError, match=r"`vocabulary` must be given"):
        save_checkpoint(
            AlbertTextEmbedder(tiny_backbone()), tmp_path / "y", "sentence_transformers"
        )
