"""ONNX (`keras_albert.export.onnx`): ONNX Runtime runs each exported model as Keras does.

Each model kind (the sentence embedder too) is exported once: a tiny model (dropout 0.1, every
weight drawn from a seed, biases and LayerNorm included) with the 12-piece SentencePiece model.
ONNX Runtime (CPU) runs the one file on packed-looking inputs with real padding at batch 1 and 3
and two sequence lengths (multiple choice: two numbers of choices, one choice absent; fill-mask:
two numbers of masked positions), so its dimensions are dynamic, and gives the Keras model's
outputs in inference (dropout off) within 1e-4, float32, every output by its name. A real
trained checkpoint (`tests/data/legacy_runs/finetune_squad_v2`: SQuAD v2 with the original
answer-class head, top-k indices among its outputs) is exported through the export tool.
"""

import os
import sys

import keras
import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import numpy_helper

from keras_albert import (
    AlbertClassifier,
    AlbertMaskedLM,
    AlbertMultipleChoice,
    AlbertQuestionAnswerer,
    AlbertTextEmbedder,
    AlbertTokenClassifier,
    AlbertTokenizer,
)
from keras_albert.export import export_onnx
from keras_albert.export.vocabulary import SENTENCEPIECE_FILE, standalone_vocabulary
from keras_albert.serving.precision import serving_model
from tests.helpers import perturbed, random_inputs, tiny_backbone
from tests.test_tool_errors import load_tool
from tests.text.text_data import DATA, KERAS_HUB_TEST_MODEL

ATOL = 1e-4
VOCABULARY_SIZE = 12  # the SentencePiece model's
PADDING = 3
# (batch, sequence length, choices or masked positions): one file for all of them.
SHAPES = ((1, 10, 2), (3, 10, 2), (1, 21, 4), (3, 21, 4))
KINDS = {
    "backbone": lambda backbone: backbone,
    "classification": lambda backbone: AlbertClassifier(backbone, num_classes=3),
    "question_answering": lambda backbone: AlbertQuestionAnswerer(backbone),
    "multiple_choice": lambda backbone: AlbertMultipleChoice(backbone),
    "token_classification": lambda backbone: AlbertTokenClassifier(backbone, num_classes=5),
    "fill_mask": lambda backbone: AlbertMaskedLM(backbone),
    "text_embedding": lambda backbone: AlbertTextEmbedder(backbone),
}
SQUAD_RUN = DATA / "legacy_runs" / "finetune_squad_v2"


def tiny_model(kind: str, seed: int, **backbone_changes) -> keras.Model:
    backbone = tiny_backbone(vocabulary_size=VOCABULARY_SIZE, dropout=0.1, **backbone_changes)
    return perturbed(KINDS[kind](backbone), seed)


def model_inputs(kind: str, batch: int, length: int, count: int, seed: int) -> dict:
    """Packed-looking int32 inputs, every row padded (`PADDING` positions at least); `count`
    choices (the last example's last one absent when there are several examples) or masked
    positions."""
    num_masked = count if kind == "fill_mask" else 0
    rows = batch * count if kind == "multiple_choice" else batch
    inputs = random_inputs(VOCABULARY_SIZE, rows, length - PADDING, num_masked, seed)
    for name in ("token_ids", "segment_ids", "padding_mask"):
        inputs[name] = np.pad(inputs[name], [(0, 0), (0, PADDING)])
    if kind == "multiple_choice":
        inputs = {name: value.reshape(batch, count, length) for name, value in inputs.items()}
        if batch > 1:
            for value in inputs.values():
                value[-1, -1] = 0
    return inputs


def keras_outputs(model: keras.Model, inputs: dict, training: bool = False) -> dict:
    outputs = model(inputs, training=training)
    if not isinstance(outputs, dict):
        outputs = {model.OUTPUT_NAME: outputs}
    return {name: keras.ops.convert_to_numpy(value) for name, value in outputs.items()}


def onnx_outputs(session: onnxruntime.InferenceSession, inputs: dict) -> dict:
    names = [output.name for output in session.get_outputs()]
    return dict(zip(names, session.run(names, inputs), strict=True))


def assert_outputs_equal(actual: dict, expected: dict) -> None:
    assert sorted(actual) == sorted(expected)
    for name, value in expected.items():
        assert actual[name].dtype == value.dtype, name
        if np.issubdtype(value.dtype, np.integer):
            np.testing.assert_array_equal(actual[name], value, err_msg=name)
        else:
            np.testing.assert_allclose(actual[name], value, atol=ATOL, rtol=0, err_msg=name)


@pytest.fixture(scope="module")
def tokenizer():
    return AlbertTokenizer(KERAS_HUB_TEST_MODEL)


@pytest.fixture(scope="module", params=sorted(KINDS))
def exported(request, tokenizer, tmp_path_factory):
    """(kind, model, export directory, ONNX Runtime session): one export per model kind."""
    kind = request.param
    model = tiny_model(kind, seed=sorted(KINDS).index(kind))
    path = export_onnx(model, tokenizer, tmp_path_factory.mktemp(kind) / "onnx")
    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    return kind, model, os.path.dirname(path), session


def test_onnx_runtime_gives_the_keras_outputs_at_any_batch_and_length(exported):
    kind, model, _, session = exported
    for seed, (batch, length, count) in enumerate(SHAPES):
        inputs = model_inputs(kind, batch, length, count, seed)
        expected = keras_outputs(model, inputs)
        assert_outputs_equal(onnx_outputs(session, inputs), expected)
    # Dropout (0.1) would change them: the exported graph is the inference one.
    trained = keras_outputs(model, inputs, training=True)
    assert any(np.abs(trained[name] - expected[name]).max() > 1e-3 for name in expected)


def test_the_inputs_are_the_models_and_the_weights_are_written_once(exported, tokenizer):
    kind, model, directory, session = exported
    axes = {"token_ids": ["batch", "sequence"], "mask_positions": ["batch", "num_masked"]}
    if kind == "multiple_choice":
        axes["token_ids"] = ["batch", "num_choices", "sequence"]
    assert sorted(i.name for i in session.get_inputs()) == sorted(t.name for t in model.inputs)
    for graph_input in session.get_inputs():
        assert graph_input.type == "tensor(int32)"
        assert graph_input.shape == axes.get(graph_input.name, axes["token_ids"])
    # The shared block's weights are written once, not once a pass (3 here): the constants
    # beside the weights are fewer than a second copy of the block would be (and weights no
    # output uses, the pooler of a span or tag model, are left out).
    graph = onnx.load(os.path.join(directory, "model.onnx")).graph
    (block,) = (model if kind == "backbone" else model.backbone).encoder_layers
    written = sum(numpy_helper.to_array(tensor).size for tensor in graph.initializer)
    assert written < model.count_params() + block.count_params()
    # The tokenizer an app runs is beside the model.
    assert sorted(os.listdir(directory)) == ["model.onnx", SENTENCEPIECE_FILE]
    with open(os.path.join(directory, SENTENCEPIECE_FILE), "rb") as file:
        assert file.read() == standalone_vocabulary(tokenizer)[1]


def test_a_mixed_precision_model_is_exported_in_float32_at_the_depth_asked(tmp_path, tokenizer):
    model = tiny_model("backbone", seed=7, dtype="mixed_bfloat16")
    path = export_onnx(model, tokenizer, tmp_path / "onnx", num_layers=1)
    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    inputs = model_inputs("backbone", 3, 11, 0, seed=7)
    # The float32 copy of the weights, the shared block applied once (not 3 times).
    expected = keras_outputs(serving_model(model, "float32", num_layers=1), inputs)
    assert_outputs_equal(onnx_outputs(session, inputs), expected)  # float32 outputs
    trained_depth = keras_outputs(serving_model(model, "float32"), inputs)
    assert np.abs(trained_depth["pooled_output"] - expected["pooled_output"]).max() > 1e-2


def test_bad_exports_fail_before_writing(tmp_path, tokenizer, monkeypatch):
    backbone = tiny_backbone(vocabulary_size=VOCABULARY_SIZE)
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "model.onnx").write_text("an earlier export")
    with pytest.raises(FileExistsError, match=r"^`export_dir` must be a new or empty directory"):
        export_onnx(backbone, tokenizer, tmp_path / "full")
    with pytest.raises(
        ValueError, match=r"^`precision` must be left at 'float32' for format 'onnx'"
    ):
        export_onnx(backbone, tokenizer, tmp_path / "bf16", precision="bfloat16")
    monkeypatch.setitem(sys.modules, "tf2onnx", None)  # not installed
    with pytest.raises(ImportError, match=r"^`export_onnx` needs tf2onnx and onnx .* pip install"):
        export_onnx(backbone, tokenizer, tmp_path / "no_tf2onnx")
    assert sorted(os.listdir(tmp_path)) == ["full"]


def test_the_export_tool_writes_a_trained_squad_checkpoint(tmp_path):
    tool = load_tool("export_saved_model")
    argv = [str(SQUAD_RUN / "best.keras"), "--vocabulary", str(KERAS_HUB_TEST_MODEL)]
    argv += ["--format", "onnx", "--name", "squad"]
    with pytest.raises(ValueError, match="`pair` must be left at False for --format onnx"):
        tool.main([*argv, "--output-dir", str(tmp_path), "--pair"])
    with pytest.raises(ValueError, match="`precision` must be left at 'float32' for --format"):
        tool.main([*argv, "--output-dir", str(tmp_path), "--precision", "bfloat16"])
    assert tool.main([*argv, "--output-dir", str(tmp_path)]) == 0
    assert sorted(os.listdir(tmp_path / "squad")) == ["model.onnx", SENTENCEPIECE_FILE]
    model = keras.saving.load_model(SQUAD_RUN / "best.keras")
    assert model.answerability == "answer_class"
    session = onnxruntime.InferenceSession(
        str(tmp_path / "squad" / "model.onnx"), providers=["CPUExecutionProvider"]
    )
    for seed, (batch, length) in enumerate([(1, 32), (3, 24)]):
        inputs = model_inputs("question_answering", batch, length, 0, seed)
        assert_outputs_equal(onnx_outputs(session, inputs), keras_outputs(model, inputs))
