"""TFLite for the task heads: SQuAD question answering, RACE multiple choice, NER tagging,
sentence embeddings.

Tiny models with the real 30k SentencePiece model and random weights (biases and LayerNorm
too); real inputs: SQuAD windows from `squad_features`, RACE choices packed by the multiple
choice serving module, WNUT-17 sentences packed by the NER one, sentences of four lengths
packed by the text-embedding one. `tf.lite.Interpreter` on one example at a time (the exported
`[1, ...]` signatures) gives the Keras model's outputs within 1e-5 (float32). Dynamic-range
int8 (`precision="int8"`: int8 weights, activations quantized on the fly) is held to a stated
tolerance (`INT8_RELATIVE`), with the float32 export of the same model under 1e-5 in the same
test (the bound is over the examples of a task: 15% of its outputs' largest |value|).
"""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_albert import AlbertBackbone, AlbertTextEmbedder, AlbertTokenizer
from keras_albert.export.modules import serving_module
from keras_albert.export.tflite import export_tflite
from keras_albert.tasks.multiple_choice.features import read_race
from keras_albert.tasks.multiple_choice.model import AlbertMultipleChoice
from keras_albert.tasks.question_answering.features import read_squad_examples, squad_features
from keras_albert.tasks.question_answering.model import AlbertQuestionAnswerer
from keras_albert.tasks.token_classification.features import read_conll
from keras_albert.tasks.token_classification.model import AlbertTokenClassifier
from tests.helpers import perturbed
from tests.test_tool_errors import load_tool
from tests.text.text_data import ALBERT_MODEL, DATA

ATOL = 1e-5
# int8's largest error over a task's examples ÷ its outputs' largest |value|, measured (AVX-512
# host): RACE logits 0.078, SQuAD start logits 0.032, NER < 0.02.
INT8_RELATIVE = 0.15
SEQUENCE_LENGTH = 64
SIZES = dict(
    vocabulary_size=30000,
    embedding_dim=8,
    hidden_dim=32,
    intermediate_dim=64,
    num_layers=2,
    num_heads=2,
    max_sequence_length=SEQUENCE_LENGTH,
)
INPUTS = ("token_ids", "segment_ids", "padding_mask")


@pytest.fixture(scope="module")
def tokenizer():
    return AlbertTokenizer(ALBERT_MODEL)


def trimmed(inputs):
    """One example, `[1, ..., seq]`, cut to its longest real sequence (as an app sends it)."""
    length = int(np.asarray(inputs["padding_mask"]).sum(-1).max())
    return {name: np.asarray(inputs[name])[None, ..., :length].astype("int32") for name in INPUTS}


def squad_inputs(tokenizer):
    examples = list(read_squad_examples(DATA / "squad" / "dev-v2.0-small.json"))[:4]
    features = squad_features(
        examples, tokenizer, sequence_length=SEQUENCE_LENGTH, doc_stride=24, max_query_length=16
    )
    return [trimmed({name: getattr(f, name) for name in INPUTS}) for f in features][:8]


def race_inputs(tokenizer, model):
    examples = read_race(str(DATA / "race" / "expmrc-race-dev-sample.json"))
    module = serving_module(model, tokenizer)
    packed = module.pack(
        tf.constant(examples.articles[:3]),
        tf.constant(examples.questions[:3]),
        tf.constant([list(options[:4]) for options in examples.options[:3]]),
    )  # (3, 4, seq) each
    # The multiple-choice TFLite model takes every choice padded to max_sequence_length.
    padded = {
        name: tf.pad(value, [[0, 0], [0, 0], [0, SEQUENCE_LENGTH - tf.shape(value)[-1]]])
        for name, value in packed.items()
    }
    return [{name: padded[name][row][None].numpy() for name in INPUTS} for row in range(3)]


def ner_inputs(tokenizer, model):
    sentences = read_conll(DATA / "ner" / "wnut17_dev.conll").words[:6]
    module = serving_module(model, tokenizer)
    packed, _ = module.pack(tf.ragged.constant(sentences))
    return [trimmed({name: packed[name][row] for name in INPUTS}) for row in range(6)]


def embedding_inputs(tokenizer, model):
    sentences = [
        "A man is playing a guitar.",
        "A woman is slicing an onion into thin rings on a wooden board.",
        "Kids play.",
        "The stock market fell sharply on Monday after the central bank raised rates again.",
    ]
    module = serving_module(model, tokenizer)
    packed = module.pack(tf.constant(sentences))
    return [trimmed({name: packed[name][row] for name in INPUTS}) for row in range(4)]


TASKS = {
    "squad": (lambda: AlbertQuestionAnswerer(AlbertBackbone(**SIZES)), squad_inputs),
    "race": (lambda: AlbertMultipleChoice(AlbertBackbone(**SIZES)), race_inputs),
    "ner": (
        lambda: AlbertTokenClassifier(AlbertBackbone(**SIZES), num_classes=13),
        ner_inputs,
    ),
    "embedding": (lambda: AlbertTextEmbedder(AlbertBackbone(**SIZES)), embedding_inputs),
}


def keras_outputs(model, inputs):
    outputs = model(inputs, training=False)
    if not isinstance(outputs, dict):
        outputs = {model.OUTPUT_NAME: outputs}
    return {name: np.asarray(keras.ops.convert_to_numpy(v)) for name, v in outputs.items()}


# Every head runs with `--run-slow` (CI); the default run keeps the pooled vector (the
# embedding) and leaves the per-token and per-choice heads, which export the same layers, to it.
DEFAULT_RUN = ("embedding",)


@pytest.mark.parametrize(
    "task",
    [task if task in DEFAULT_RUN else pytest.param(task, marks=pytest.mark.slow)
     for task in sorted(TASKS)],
)  # fmt: skip
def test_tflite_task_heads_match_keras(tmp_path, tokenizer, task):
    build, make_inputs = TASKS[task]
    model = perturbed(build(), seed=len(task))
    examples = make_inputs(tokenizer) if task == "squad" else make_inputs(tokenizer, model)
    if task != "race":  # multiple choice takes a fixed length; the others any
        assert len({example["token_ids"].shape[-1] for example in examples}) > 1
    options = {"max_query_length": 16} if task == "squad" else None  # fits SEQUENCE_LENGTH
    paths = {
        precision: export_tflite(
            model, tokenizer, tmp_path / precision, task_options=options, precision=precision
        )
        for precision in ("float32", "int8")
    }
    runners = {
        precision: tf.lite.Interpreter(model_path=path).get_signature_runner()
        for precision, path in paths.items()
    }
    compared = 0
    int8_errors, scales = {}, {}
    for inputs in examples:
        expected = keras_outputs(model, inputs)
        float_outputs = runners["float32"](**inputs)
        int8_outputs = runners["int8"](**inputs)
        for name, value in expected.items():
            if name not in float_outputs:
                continue
            compared += 1
            np.testing.assert_allclose(float_outputs[name], value, atol=ATOL, rtol=0)
            if value.dtype.kind == "f":
                error = np.abs(int8_outputs[name] - value).max()
                int8_errors[name] = max(int8_errors.get(name, 0.0), error)
                scales[name] = max(scales.get(name, 0.0), np.abs(value).max())
    assert compared >= len(examples)
    for name, error in int8_errors.items():
        assert error <= INT8_RELATIVE * scales[name], (name, error, scales[name])
    interpreter = tf.lite.Interpreter(model_path=paths["float32"])
    ops = {op["op_name"] for op in interpreter._get_ops_details()}
    assert not any(op.startswith("Flex") or op == "CUSTOM" for op in ops), ops
    # The int8 file is the smaller one (int8 kernels); both carry the SentencePiece model.
    assert (tmp_path / "int8" / "model.tflite").stat().st_size < (
        tmp_path / "float32" / "model.tflite"
    ).stat().st_size
    assert (tmp_path / "int8" / "sentencepiece.model").is_file()


def test_export_tool_maps_num_choices_and_int8(tmp_path, tokenizer):
    AlbertMultipleChoice(AlbertBackbone(**SIZES)).save(tmp_path / "race.keras")
    (tmp_path / "tokenizer.model").write_bytes(ALBERT_MODEL.read_bytes())
    argv = [str(tmp_path / "race.keras"), "--format", "tflite", "--name", "race"]
    options = ["--num-choices", "3", "--precision", "int8", "--output-dir", str(tmp_path)]
    assert load_tool("export_saved_model").main([*argv, *options]) == 0
    interpreter = tf.lite.Interpreter(model_path=str(tmp_path / "race" / "model.tflite"))
    shapes = {d["name"]: list(d["shape"]) for d in interpreter.get_input_details()}
    assert shapes and all(shape == [1, 3, SEQUENCE_LENGTH] for shape in shapes.values()), shapes
    # Dynamic-range int8: int8 weight tensors in the file.
    assert any(t["dtype"] == np.int8 for t in interpreter.get_tensor_details())
