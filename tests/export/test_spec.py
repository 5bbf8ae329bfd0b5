"""`ExportSpec`: every bad value is refused by name, once, before anything is loaded or built."""

import dataclasses

import pytest

from keras_albert.export.spec import (
    DEFAULT_WARMUP_TEXTS,
    FORMAT_FIELDS,
    BatchingParameters,
    ExportSpec,
    resolve_spec,
)
from keras_albert.tasks.multiple_choice.options import MultipleChoiceServingOptions
from keras_albert.tasks.question_answering.options import QuestionAnsweringServingOptions

# One bad value per field (and the format it is bad for, when not the SavedModel).
BAD_VALUES = [
    ("format", "openvino"),
    ("precision", "int8"),  # TFLite's, not the SavedModel's
    ("precision", "float16"),
    ("num_layers", 0),
    ("num_layers", 2.0),
    ("max_sequence_length", 0),
    ("max_sequence_length", True),
    ("pad_to_max_length", 1),
    ("text_pair", "yes"),
    ("class_names", "negative"),  # a string is not a sequence of names
    ("class_names", ["negative", 1]),
    ("task_options", 3),
    ("task_options", QuestionAnsweringServingOptions),  # the class, not options
    ("task_options", {"question_answering": {}, "doc_stride": 64}),  # by name, or one model's
    ("warmup_texts", "a fine film"),
    ("warmup_texts", ["a fine film", None]),
    ("warmup_text_pairs", [1]),
    ("version", -1),
    ("version", "2"),
    ("batching", {"max_batch_size": 8}),
    ("base_path_prefix", 1),
]


def test_the_defaults_are_a_valid_savedmodel_spec():
    spec = ExportSpec()
    assert spec.format == "savedmodel" and spec.precision == "float32"
    assert spec.warmup_texts == DEFAULT_WARMUP_TEXTS and spec.batching == BatchingParameters()


@pytest.mark.parametrize("name,value", BAD_VALUES, ids=[f"{n}={v!r}" for n, v in BAD_VALUES])
def test_each_bad_value_names_itself(name, value):
    with pytest.raises(ValueError, match=rf"^`{name}` must .* Received: {name}="):
        ExportSpec(**{name: value})


def test_every_field_has_a_bad_value():
    assert {name for name, _ in BAD_VALUES} == {f.name for f in dataclasses.fields(ExportSpec)}


def test_sequences_are_kept_as_tuples():
    spec = ExportSpec(class_names=["no", "yes"], warmup_texts=["a"], warmup_text_pairs=[b"b"])
    assert (spec.class_names, spec.warmup_texts, spec.warmup_text_pairs) == (
        ("no", "yes"),
        ("a",),
        (b"b",),
    )
    assert spec == ExportSpec(
        class_names=("no", "yes"), warmup_texts=("a",), warmup_text_pairs=(b"b",)
    )


@pytest.mark.parametrize("format", sorted(FORMAT_FIELDS))
def test_a_format_refuses_the_fields_it_does_not_read(format):
    changed = {
        "precision": "bfloat16",
        "num_layers": 2,
        "max_sequence_length": 64,
        "pad_to_max_length": True,
        "text_pair": True,
        "class_names": ("no", "yes"),
        "task_options": {"multiple_choice": MultipleChoiceServingOptions(num_choices=3)},
        "warmup_texts": ("a fine film",),
        "warmup_text_pairs": ("a pair",),
        "version": 2,
        "batching": BatchingParameters(max_batch_size=8),
        "base_path_prefix": "/models",
    }
    assert set(changed) == {f.name for f in dataclasses.fields(ExportSpec)} - {"format"}
    ExportSpec(**changed)  # the SavedModel reads every field
    for name, value in changed.items():
        if name == "precision" and format == "tflite":
            value = "int8"
        if name in FORMAT_FIELDS[format]:
            assert getattr(ExportSpec(format=format, **{name: value}), name) == value
        else:
            message = rf"^`{name}` must be left at .* for format '{format}', which does not read it"
            with pytest.raises(ValueError, match=message):
                ExportSpec(format=format, **{name: value})


def test_keyword_arguments_build_or_replace_the_spec():
    assert resolve_spec(None, {}, "savedmodel") == ExportSpec()
    assert resolve_spec(None, {"precision": "int8"}, "tflite") == ExportSpec(
        format="tflite", precision="int8"
    )
    spec = ExportSpec(max_sequence_length=64, text_pair=True)
    assert resolve_spec(spec, {}, "savedmodel") is spec
    assert resolve_spec(spec, {"text_pair": False}, "savedmodel") == ExportSpec(
        max_sequence_length=64
    )
    # Without a format of its own (`export_checkpoint`), the spec's or the keywords' applies.
    assert resolve_spec(None, {"format": "tfhub"}) == ExportSpec(format="tfhub")
    assert resolve_spec(ExportSpec(format="tflite"), {}).format == "tflite"
    assert resolve_spec(None, {}) == ExportSpec()
    with pytest.raises(
        TypeError, match=r"must be fields of ExportSpec .* Received: sequence_length"
    ):
        resolve_spec(None, {"sequence_length": 64}, "tfhub")
    with pytest.raises(
        ValueError, match=r"^`format` must be 'tflite' .* Received: format='savedmodel'"
    ):
        resolve_spec(spec, {}, "tflite")
    with pytest.raises(ValueError, match=r"^`spec` must be an ExportSpec"):
        resolve_spec({"text_pair": True}, {}, "savedmodel")


def test_a_model_takes_its_own_task_options():
    race = MultipleChoiceServingOptions(num_choices=3)
    by_name = ExportSpec(task_options={"multiple_choice": race})
    assert by_name.own_task_options("multiple_choice") is race
    assert by_name.own_task_options("question_answering") is None
    assert by_name.own_task_options(None) is None  # a classifier, backbone or pretrainer
    own = ExportSpec(task_options={"doc_stride": 64})
    assert own.own_task_options("question_answering") == {"doc_stride": 64}
    assert ExportSpec(task_options=race).own_task_options("multiple_choice") is race
