"""`fill_mask` (the Python API) against independent references, from every checkpoint format that
holds a masked-LM head: Hugging Face `AlbertForMaskedLM` (its logits and its fill-mask
pipeline), a TF1 checkpoint with `cls/predictions` (a NumPy transcription of the original),
a keras-hub `AlbertMaskedLM` preset (keras-hub's own model) and our own `.keras` pretrainer.
Tiny widths, the real 30k SentencePiece model, real SST-2 sentences with words masked."""

import json

import keras
import keras_hub
import numpy as np
import pytest
import torch
import transformers
from scipy.special import softmax
from sentencepiece import sentencepiece_model_pb2

from keras_albert import AlbertBackbone, AlbertConfig, AlbertPretrainer
from keras_albert.convert import load_checkpoint, save_checkpoint
from keras_albert.tasks.fill_mask.features import MaskedTextEncoder, pack
from keras_albert.tasks.fill_mask.model import AlbertMaskedLM, masked_lm_from
from keras_albert.tasks.fill_mask.predict import fill_mask, top_k_predictions
from tests.convert.hf_reference import hf_model
from tests.convert.test_tf1 import (
    PRETRAINING_HEADS,
    expected_names,
    original_forward,
    write_tf1_checkpoint,
)
from tests.tasks.fill_mask.test_features import masked_sentences
from tests.text.text_data import ALBERT_MODEL

PROBABILITY_TOLERANCE = 1e-5
TINY_HF = dict(
    vocab_size=30000,  # the real SentencePiece model
    embedding_size=8,
    hidden_size=24,
    num_hidden_layers=4,
    num_hidden_groups=2,
    inner_group_num=2,
    num_attention_heads=3,
    intermediate_size=40,
    max_position_embeddings=64,
)


def ids_and_probabilities(results):
    """`fill_mask`'s answer as arrays: ids and probabilities `(masks, top_k)` of every text."""
    masks = [mask for text in results for mask in text]
    ids = np.array([[c["token_id"] for c in mask] for mask in masks])
    return ids, np.array([[c["probability"] for c in mask] for mask in masks])


def assert_same_predictions(actual, expected):
    (actual_ids, actual_probabilities), (expected_ids, expected_probabilities) = actual, expected
    np.testing.assert_array_equal(actual_ids, expected_ids)
    np.testing.assert_allclose(
        actual_probabilities, expected_probabilities, atol=PROBABILITY_TOLERANCE, rtol=0
    )
    # Peaked distributions (weights of order one), not a near-uniform 1/30000 that any
    # probabilities would match within the tolerance.
    assert np.median(expected_probabilities[:, 0]) > 0.01
    print(
        "max |probability - reference|:",
        np.abs(actual_probabilities - expected_probabilities).max(),
    )


def at_masks(values, texts):
    """The rows of `values` `(batch, max_masks, ...)` that are real masks, text by text."""
    return np.stack(
        [
            values[row, mask]
            for row, text in enumerate(texts)
            for mask in range(text.count("[MASK]"))
        ]
    )


def reference_top_k(logits, top_k=5):
    """Top-k of NumPy softmax over `(masks, V)` logits (float64), most probable first."""
    probabilities = softmax(np.asarray(logits, np.float64), axis=-1)
    ids = np.argsort(-probabilities, axis=-1, kind="stable")[:, :top_k]
    return ids, np.take_along_axis(probabilities, ids, axis=-1)


@pytest.fixture(scope="module")
def tokenizer(albert_tokenizer):
    return albert_tokenizer


@pytest.fixture(scope="module")
def texts():
    return masked_sentences(24, seed=1)


@pytest.fixture(scope="module")
def hugging_face(tmp_path_factory):
    """A random HF `AlbertForMaskedLM` (no pooler, no SOP head) and ours loaded from its files."""
    reference = hf_model(transformers.AlbertForMaskedLM, TINY_HF, seed=3, scale=1.0)
    path = tmp_path_factory.mktemp("hf_masked_lm")
    reference.save_pretrained(path)
    return reference, load_checkpoint(path, model="pretrainer")


def test_hugging_face_masked_lm_logits(hugging_face, tokenizer, texts):
    reference, pretrainer = hugging_face
    assert isinstance(pretrainer, AlbertPretrainer)
    model = masked_lm_from(pretrainer)
    encoder = MaskedTextEncoder(tokenizer)
    inputs = pack([encoder.encode(text) for text in texts], tokenizer)
    with torch.no_grad():
        logits = reference(
            input_ids=torch.tensor(inputs["token_ids"], dtype=torch.long),
            token_type_ids=torch.tensor(inputs["segment_ids"], dtype=torch.long),
            attention_mask=torch.tensor(inputs["padding_mask"], dtype=torch.long),
        ).logits.numpy()  # (batch, seq, V)
    positions = inputs["mask_positions"][..., None]
    expected = reference_top_k(at_masks(np.take_along_axis(logits, positions, axis=1), texts))
    ids, probabilities = top_k_predictions(model, inputs, 5)
    assert_same_predictions((at_masks(ids, texts), at_masks(probabilities, texts)), expected)


def test_hugging_face_fill_mask_pipeline(hugging_face, tokenizer, texts):
    reference, pretrainer = hugging_face
    proto = sentencepiece_model_pb2.ModelProto()
    proto.ParseFromString(ALBERT_MODEL.read_bytes())
    hf_tokenizer = transformers.AlbertTokenizer(vocab=[(p.piece, p.score) for p in proto.pieces])
    pipeline = transformers.pipeline(
        "fill-mask", model=reference, tokenizer=hf_tokenizer, top_k=5, device="cpu"
    )
    # The masked SST-2 sentences tokenize alike (test_features); their answers must too.
    ours = ids_and_probabilities(fill_mask(pretrainer, tokenizer, texts))
    theirs = []
    for text in texts:
        answer = pipeline(text)
        theirs += answer if isinstance(answer[0], list) else [answer]
    expected = (
        np.array([[c["token"] for c in mask] for mask in theirs]),
        np.array([[c["score"] for c in mask] for mask in theirs]),
    )
    assert_same_predictions(ours, expected)


def test_results_read_as_documented(hugging_face, tokenizer):
    _, pretrainer = hugging_face
    results = fill_mask(pretrainer, tokenizer, ["The sky is [MASK].", "[MASK] a [MASK]"], top_k=3)
    assert [len(text) for text in results] == [1, 2]
    first = results[0][0]
    assert [sorted(candidate) for candidate in first] == [
        ["probability", "text", "token", "token_id"]
    ] * 3
    probabilities = [candidate["probability"] for candidate in first]
    assert probabilities == sorted(probabilities, reverse=True) and sum(probabilities) <= 1
    for candidate in first:
        piece = candidate["token"]
        assert piece == tokenizer.id_to_piece(candidate["token_id"])
        # "▁blue" after "is " fills as "blue": the text's own space stays, the piece's goes.
        assert candidate["text"] == "The sky is " + piece.replace("▁", " ").lstrip(" ") + "."
    second = results[1]
    assert all(c["text"].endswith(" a [MASK]") for c in second[0])
    assert all(c["text"].startswith("[MASK] a") for c in second[1])


def test_pretrainer_and_its_masked_lm_answer_alike(hugging_face, tokenizer, texts):
    _, pretrainer = hugging_face
    expected = fill_mask(masked_lm_from(pretrainer), tokenizer, texts)
    assert fill_mask(pretrainer, tokenizer, texts) == expected
    # Batches of 5 are padded to other lengths: the same tokens, within float32 noise.
    batched = fill_mask(pretrainer, tokenizer, texts, batch_size=5)
    actual_ids, actual_probabilities = ids_and_probabilities(batched)
    expected_ids, expected_probabilities = ids_and_probabilities(expected)
    np.testing.assert_array_equal(actual_ids, expected_ids)
    np.testing.assert_allclose(actual_probabilities, expected_probabilities, atol=1e-6, rtol=0)


def test_tf1_checkpoint_with_cls_predictions(tmp_path, tokenizer, texts):
    original = {
        "vocab_size": 30000, "embedding_size": 8, "hidden_size": 12, "intermediate_size": 20,
        "num_hidden_layers": 2, "num_attention_heads": 3, "num_hidden_groups": 1,
        "inner_group_num": 1, "max_position_embeddings": 64, "type_vocab_size": 2,
        "hidden_act": "gelu", "hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0,
        "initializer_range": 0.02,
    }  # fmt: skip
    config = AlbertConfig.from_original_config(original)
    template = AlbertPretrainer(AlbertBackbone.from_albert_config(config))
    values = write_tf1_checkpoint(tmp_path, template, expected_names(config, PRETRAINING_HEADS))
    (tmp_path / "albert_config.json").write_text(json.dumps(original))
    model = masked_lm_from(load_checkpoint(tmp_path, model="pretrainer"))

    encoder = MaskedTextEncoder(tokenizer)
    inputs = pack([encoder.encode(text) for text in texts], tokenizer)
    _, _, mlm_logits, _ = original_forward(
        values,
        original,
        inputs["token_ids"],
        inputs["segment_ids"],
        inputs["padding_mask"].astype(np.float64),
        inputs["mask_positions"],
    )
    expected = reference_top_k(at_masks(mlm_logits, texts))
    assert_same_predictions(ids_and_probabilities(fill_mask(model, tokenizer, texts)), expected)


def test_keras_hub_masked_lm_preset(tmp_path, tokenizer, texts):
    backbone = keras_hub.models.AlbertBackbone(
        vocabulary_size=30000, num_layers=2, num_heads=2, embedding_dim=8, hidden_dim=16,
        intermediate_dim=32, num_groups=1, num_inner_repetitions=1, max_sequence_length=64,
    )  # fmt: skip
    theirs = keras_hub.models.AlbertMaskedLM(backbone)
    rng = np.random.default_rng(5)
    for weight in theirs.weights:
        weight.assign(weight.numpy() + rng.normal(0, 1.0, weight.shape).astype("float32"))
    theirs.save_to_preset(tmp_path)
    model = masked_lm_from(load_checkpoint(tmp_path, model="pretrainer"))

    encoder = MaskedTextEncoder(tokenizer)
    inputs = pack([encoder.encode(text) for text in texts], tokenizer)
    expected = reference_top_k(at_masks(np.asarray(theirs(inputs)), texts))
    assert_same_predictions(ids_and_probabilities(fill_mask(model, tokenizer, texts)), expected)


def test_our_pretrainer_saved_as_keras(tmp_path, tokenizer, texts):
    pretrainer = AlbertPretrainer(
        AlbertBackbone(
            vocabulary_size=30000, embedding_dim=8, hidden_dim=16, intermediate_dim=32,
            num_layers=2, num_heads=2, max_sequence_length=64,
        )
    )  # fmt: skip
    rng = np.random.default_rng(6)
    for weight in pretrainer.weights:
        weight.assign(weight.numpy() + rng.normal(0, 1.0, weight.shape).astype("float32"))
    save_checkpoint(pretrainer, tmp_path / "pretrainer.keras")
    loaded = load_checkpoint(tmp_path / "pretrainer.keras")
    assert isinstance(loaded, AlbertPretrainer)
    expected = fill_mask(pretrainer, tokenizer, texts)
    assert fill_mask(masked_lm_from(loaded), tokenizer, texts) == expected
    # The masked LM saved on its own loads as one, and answers the same.
    masked_lm_from(pretrainer).save(tmp_path / "masked_lm.keras")
    loaded = keras.models.load_model(tmp_path / "masked_lm.keras")
    assert isinstance(loaded, AlbertMaskedLM)
    assert fill_mask(loaded, tokenizer, texts) == expected


def test_a_text_without_a_mask_gets_no_masks_and_fails_no_other(hugging_face, tokenizer):
    # As the served fill-mask answers it (`num_masks` 0; tests/tasks/fill_mask/test_serving.py).
    _, pretrainer = hugging_face
    texts = ["The sky is blue.", "The sky is [MASK].", "[mask] is lowercase, not the mask"]
    results = fill_mask(pretrainer, tokenizer, texts)
    assert [len(masks) for masks in results] == [0, 1, 0]
    alone = fill_mask(pretrainer, tokenizer, texts[1:2])
    ids, _ = ids_and_probabilities(results)
    np.testing.assert_array_equal(ids, ids_and_probabilities(alone)[0])
    assert fill_mask(pretrainer, tokenizer, ["no mask", "nor here"]) == [[], []]


def test_errors_name_the_text_and_the_length(hugging_face, tokenizer):
    _, pretrainer = hugging_face
    long_text = "[MASK] " + "word " * 70
    with pytest.raises(ValueError, match=r"at most max_sequence_length=64 tokens with \[CLS\] "
                       r"and \[SEP\]. Received: texts\[0\] of 73 tokens"):  # fmt: skip
        fill_mask(pretrainer, tokenizer, [long_text])
    with pytest.raises(ValueError, match="Received: texts\\[0\\] of 8 tokens"):
        fill_mask(pretrainer, tokenizer, ["The sky is [MASK] ."], max_sequence_length=7)
    with pytest.raises(TypeError, match="not a single text"):
        fill_mask(pretrainer, tokenizer, "The sky is [MASK].")
    with pytest.raises(ValueError, match="`top_k` must be a positive integer. Received: top_k=0"):
        fill_mask(pretrainer, tokenizer, ["[MASK]"], top_k=0)
    with pytest.raises(ValueError, match="`top_k` must be at most the vocabulary_size=30000"):
        fill_mask(pretrainer, tokenizer, ["[MASK]"], top_k=30001)
    with pytest.raises(ValueError, match="at most the model's max_sequence_length=64"):
        fill_mask(pretrainer, tokenizer, ["[MASK]"], max_sequence_length=65)
    with pytest.raises(TypeError, match="Received: model=AlbertBackbone"):
        fill_mask(pretrainer.backbone, tokenizer, ["[MASK]"])
    small = AlbertMaskedLM(
        AlbertBackbone(vocabulary_size=64, embedding_dim=8, hidden_dim=16, intermediate_dim=32,
                       num_layers=1, num_heads=2)
    )  # fmt: skip
    with pytest.raises(ValueError, match="vocabulary_size=64 pieces. Received: a tokenizer of "):
        fill_mask(small, tokenizer, ["[MASK]"])
    assert fill_mask(pretrainer, tokenizer, []) == []
