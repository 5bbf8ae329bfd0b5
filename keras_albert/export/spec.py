"""`ExportSpec`: what one export is, in one frozen dataclass, validated once.

Every export function takes a spec: `serving_module` (the one place a spec becomes a serving
module's arguments), `export_saved_model`, `export_for_serving`, `export_tflite`,
`export_tfhub`, `export_onnx`, and `export_checkpoint`, which writes a checkpoint in the
spec's format. Each also takes the spec's fields as keyword arguments, which build the spec
(or replace its fields) in one place, `resolve_spec`:

    spec = ExportSpec(max_sequence_length=128, class_names=("negative", "positive"))
    export_for_serving(model, tokenizer, "saved_models", "sst2", spec)
    export_for_serving(model, tokenizer, "saved_models", "sst2", max_sequence_length=128)

A format other than the SavedModel reads only some fields (`FORMAT_FIELDS`); a spec of that
format refuses the others unless they are left at their defaults, so that no option is ignored
without a word.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from keras_albert.serving.precision import SERVING_PRECISIONS
from keras_albert.tasks.registry import TASK_TYPES
from keras_albert.validation import require_bool, require_int, require_one_of, require_positive_int

EXPORT_FORMATS = ("savedmodel", "tflite", "tfhub", "onnx")
TFLITE_PRECISIONS = ("float32", "int8")  # int8: dynamic-range int8 weights (the converter's)
DEFAULT_WARMUP_TEXTS = (
    "it 's a charming and often affecting journey .",
    "The quick brown fox jumps over the lazy dog.",
    "",
)
# The fields each format other than the SavedModel reads (the SavedModel reads every field).
FORMAT_FIELDS = {
    # The token-id model of the float32 serving module; the task options shape its inputs.
    "tflite": ("format", "precision", "task_options"),
    # The preprocessor's default packed length.
    "tfhub": ("format", "max_sequence_length"),
    # The model's own forward pass (float32, dynamic shapes): only its depth may change.
    "onnx": ("format", "num_layers"),
}


@dataclasses.dataclass(frozen=True)
class BatchingParameters:
    """TF Serving's server-side batching (`--batching_parameters_file`, text proto).

    `serving_default` and `serve_examples` take `[batch]` strings, so requests of any text
    length batch together. `pad_variable_length_inputs` is left off: only `serve_token_ids`
    has a variable-length dimension, and the values the server would pad it with are not
    known to be this model's `<pad>` id and mask 0 (not checked without the server), so its
    requests batch together only when their `seq` is equal (pad them to a common length).
    """

    max_batch_size: int = 32
    batch_timeout_micros: int = 2000
    max_enqueued_batches: int = 100
    num_batch_threads: int = 4
    allowed_batch_sizes: tuple[int, ...] = ()

    def __post_init__(self):
        for field in ("max_batch_size", "batch_timeout_micros", "max_enqueued_batches"):
            require_int(field, getattr(self, field), 0)
        require_positive_int("num_batch_threads", self.num_batch_threads)
        sizes = tuple(self.allowed_batch_sizes)
        if sizes and (sorted(sizes) != list(sizes) or sizes[-1] != self.max_batch_size):
            raise ValueError(
                "`allowed_batch_sizes` must increase and end with max_batch_size="
                f"{self.max_batch_size}. Received: allowed_batch_sizes={sizes!r}"
            )

    def to_text(self) -> str:
        lines = [
            f"max_batch_size {{ value: {self.max_batch_size} }}",
            f"batch_timeout_micros {{ value: {self.batch_timeout_micros} }}",
            f"max_enqueued_batches {{ value: {self.max_enqueued_batches} }}",
            f"num_batch_threads {{ value: {self.num_batch_threads} }}",
        ]
        lines += [f"allowed_batch_sizes: {size}" for size in self.allowed_batch_sizes]
        lines.append("pad_variable_length_inputs: false")
        return "\n".join(lines) + "\n"


@dataclasses.dataclass(frozen=True)
class ExportSpec:
    """One export of a model: its format and everything that shapes what is written.

    Args:
        format: "savedmodel" (TF Serving, string in), "tflite" (token ids in), "tfhub" (the
            TF-Hub encoder and preprocessor of a backbone or pretrainer) or "onnx" (token ids
            in, float32).
        precision: the SavedModel's "float32" or "bfloat16"
            (`keras_albert.serving.precision`); TFLite's "float32" or "int8" (dynamic-range
            int8 weights).
        num_layers: apply the shared block this many times instead of the trained depth.
        max_sequence_length: the serving packing length (TF-Hub: the preprocessor's default
            packed length, 128 or the model's limit if shorter); default: the model's limit.
        pad_to_max_length: pad every request to `max_sequence_length` (a classifier's,
            backbone's or pretrainer's module).
        text_pair: `serving_default` takes `text` and `text_pair` (idem).
        class_names: names of a classifier's classes for `serve_examples`.
        task_options: a task model's serving options: its task type's export options
            (`TaskType.export_options`, e.g. `QuestionAnsweringServingOptions`) or a mapping
            of their keywords, or a mapping of task type names ("question_answering", ...) to
            those, of which the model's own task type's entry applies.
        warmup_texts: the texts of the warmup requests of a classifier, backbone or pretrainer
            (a task model's module gives its own).
        warmup_text_pairs: their pairs, for a `text_pair` model (default: the texts again).
        version: the version number under `<base_dir>/<name>/`; default: the next free one.
        batching: TF Serving's `batching_parameters.txt`.
        base_path_prefix: the base path written in `models.config` (e.g. "/models");
            default: the absolute base directory.
    """

    format: str = "savedmodel"
    precision: str = "float32"
    num_layers: int | None = None
    max_sequence_length: int | None = None
    pad_to_max_length: bool = False
    text_pair: bool = False
    class_names: Sequence[str] | None = None
    task_options: object = None
    warmup_texts: Sequence[str | bytes] = DEFAULT_WARMUP_TEXTS
    warmup_text_pairs: Sequence[str | bytes] | None = None
    version: int | None = None
    batching: BatchingParameters = dataclasses.field(default_factory=BatchingParameters)
    base_path_prefix: str | None = None

    def __post_init__(self):
        require_one_of("format", self.format, EXPORT_FORMATS)
        precisions = TFLITE_PRECISIONS if self.format == "tflite" else SERVING_PRECISIONS
        require_one_of("precision", self.precision, precisions)
        require_int("num_layers", self.num_layers, 1, optional=True)
        require_int("max_sequence_length", self.max_sequence_length, 1, optional=True)
        require_bool("pad_to_max_length", self.pad_to_max_length)
        require_bool("text_pair", self.text_pair)
        # Tuples: a spec compares equal to one of the same values, whatever sequences built it.
        self._set_strings("class_names", (str,), optional=True)
        self._set_strings("warmup_texts", (str, bytes))
        self._set_strings("warmup_text_pairs", (str, bytes), optional=True)
        _require_task_options(self.task_options)
        require_int("version", self.version, 0, optional=True)
        if not isinstance(self.batching, BatchingParameters):
            raise ValueError(
                f"`batching` must be a BatchingParameters. Received: batching={self.batching!r}"
            )
        if self.base_path_prefix is not None and not isinstance(self.base_path_prefix, str):
            raise ValueError(
                "`base_path_prefix` must be a string. "
                f"Received: base_path_prefix={self.base_path_prefix!r}"
            )
        for field in dataclasses.fields(self):
            value, default = getattr(self, field.name), _default(field)
            if not format_reads(self.format, field.name) and value != default:
                raise ValueError(
                    f"`{field.name}` must be left at {default!r} for format {self.format!r}, "
                    f"which does not read it. Received: {field.name}={value!r}"
                )

    def _set_strings(self, name: str, kinds: tuple[type, ...], optional: bool = False) -> None:
        value = getattr(self, name)
        if optional and value is None:
            return
        if (
            isinstance(value, (str, bytes))
            or not isinstance(value, Sequence)
            or not all(isinstance(item, kinds) for item in value)
        ):
            what = " or ".join(kind.__name__ for kind in kinds)
            raise ValueError(f"`{name}` must be a sequence of {what}. Received: {name}={value!r}")
        object.__setattr__(self, name, tuple(value))

    def own_task_options(self, task_type_name: str | None):
        """The task options of a model of the task type `task_type_name` (None: a backbone or
        pretrainer): a mapping by task type name gives its entry (or None); any other
        `task_options` are the model's own."""
        if not _by_task_type(self.task_options):
            return self.task_options
        return None if task_type_name is None else self.task_options.get(task_type_name)


def format_reads(format: str, field: str) -> bool:
    """Whether an export of `format` reads the spec's `field` (`FORMAT_FIELDS`)."""
    return format not in FORMAT_FIELDS or field in FORMAT_FIELDS[format]


def resolve_spec(spec: ExportSpec | None, fields: Mapping, format: str | None = None) -> ExportSpec:
    """The spec an export function was given: `spec` (default: the default spec of `format`,
    or of the SavedModel) with the keyword arguments `fields` replacing its fields; a function
    of one `format` refuses a spec of another."""
    names = [field.name for field in dataclasses.fields(ExportSpec)]
    unknown = sorted(set(fields) - set(names))
    if unknown:
        raise TypeError(
            f"The keyword arguments must be fields of ExportSpec ({', '.join(names)}). "
            f"Received: {', '.join(unknown)}"
        )
    if spec is None:
        spec = ExportSpec(**({} if format is None else {"format": format}), **fields)
    elif not isinstance(spec, ExportSpec):
        raise ValueError(f"`spec` must be an ExportSpec. Received: spec={spec!r}")
    elif fields:
        spec = dataclasses.replace(spec, **fields)
    if format is not None and spec.format != format:
        raise ValueError(
            f"`format` must be {format!r} for this export. Received: format={spec.format!r}"
        )
    return spec


def _default(field: dataclasses.Field):
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return field.default


def _by_task_type(task_options) -> bool:
    """Whether `task_options` map task type names to their options (not one model's)."""
    names = {task_type.name for task_type in TASK_TYPES}
    return isinstance(task_options, Mapping) and bool(set(task_options) & names)


def _require_task_options(task_options) -> None:
    names = {task_type.name for task_type in TASK_TYPES}
    own = dataclasses.is_dataclass(task_options) and not isinstance(task_options, type)
    if task_options is None or own:
        return
    if isinstance(task_options, Mapping) and all(isinstance(key, str) for key in task_options):
        if not _by_task_type(task_options) or set(task_options) <= names:
            return
    raise ValueError(
        "`task_options` must be a task type's export options (or their keywords), or a "
        f"mapping of task type names ({', '.join(sorted(names))}) to those. "
        f"Received: task_options={task_options!r}"
    )
