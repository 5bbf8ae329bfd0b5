"""Export an ALBERT checkpoint + its tokenizer for TF Serving (<output-dir>/<name>/<v>/).

With --format tflite: <output-dir>/<name>/model.tflite (token ids in, batch 1; float32, or
dynamic-range int8 weights with --precision int8) and the tokenizer's vocabulary beside it, for
every task (keras_albert.export.tflite says why token ids only).
With --format tfhub (a backbone or pretrainer): <output-dir>/<name>/encoder/ and preprocessor/,
the TF-Hub / Kaggle encoder and preprocessor interface (keras_albert.export.tfhub).
With --format onnx: <output-dir>/<name>/model.onnx (token ids in, any batch and length, float32;
pip install 'keras-albert[onnx]') and the tokenizer's vocabulary beside it, for every model
(keras_albert.export.onnx).

The checkpoint is any form `keras_albert.load_checkpoint` reads; the tokenizer's vocabulary (a
SentencePiece model or a WordPiece vocabulary) is found beside it (or named by a pretraining
run's run.json) unless --vocabulary says, and normalizes text as the run that wrote the
checkpoint recorded (--lowercase/--strip-accents, or their --no- forms, say otherwise).

Examples:
  keras-albert export runs/sst2/best.keras --name sst2
  keras-albert export mrpc.keras --vocabulary 30k-clean.model \\
      --name mrpc --pair --class-names not_equivalent equivalent
  keras-albert export albert_base/ --name embeddings --model backbone
  keras-albert export runs/squad/best.keras --name squad --doc-stride 128
  keras-albert export runs/race/best.keras --name race --num-choices 4
  keras-albert export runs/ner/best.keras --name ner
  keras-albert export runs/sst2/best.keras --name sst2 --format tflite
  keras-albert export albert_base/ --name albert_base --format tfhub
  keras-albert export runs/squad/best.keras --name squad --format onnx

Question answering, multiple choice (RACE) and token classification (NER) models get their own
string-in endpoints (docs/guides/serving.md); the --doc-stride ... --null-score-threshold flags are
the question-answering export's, --num-choices and --max-qa-length the multiple-choice one's.
"""

import argparse
import dataclasses

from keras_albert.cli import (
    VOCABULARY_METADATA,
    add_options,
    options_from_args,
    with_debug_help,
)
from keras_albert.directories import require_directory
from keras_albert.export import (
    BatchingParameters,
    CheckpointSource,
    ExportSpec,
    export_checkpoint,
)
from keras_albert.export.serving_layout import read_warmup_texts
from keras_albert.export.spec import (
    EXPORT_FORMATS,
    TFLITE_PRECISIONS,
    format_reads,
)
from keras_albert.serving.precision import SERVING_PRECISIONS
from keras_albert.tasks.registry import MODEL_KINDS, TASK_TYPES

_CHECKPOINT_OPTIONS = ("checkpoint", "vocabulary", "name", "output_dir", "model", "config")
# The options besides the spec's that each other format reads (a spec field's option has its
# name, and `ExportSpec` says which fields a format reads); the others must stay default.
_FORMAT_OPTIONS = {
    "tflite": (*_CHECKPOINT_OPTIONS, "num_classes", "num_choices"),  # num_choices: MC's
    "tfhub": (*_CHECKPOINT_OPTIONS, "lowercase", "strip_accents"),
    "onnx": (*_CHECKPOINT_OPTIONS, "num_classes"),
}


@dataclasses.dataclass(frozen=True)
class ExportOptions:
    """One export.

    Args:
        checkpoint: the checkpoint (.keras, HF or TF1 directory, training output, ...).
        vocabulary: the tokenizer's vocabulary file: a SentencePiece model (30k-clean.model)
            or a WordPiece vocabulary (vocab_chinese.txt); default: the one beside the
            checkpoint or named by its run.json.
        lowercase: the exported tokenizer lowercases; default: as recorded with the checkpoint
            (run.json or summary.json), else true.
        strip_accents: the exported tokenizer drops combining marks; default: as recorded with
            the checkpoint, else true.
        name: model name (its directory and its entry in models.config).
        output_dir: the TF Serving base directory (models.config, <name>/<version>/).
        version: the version number; default: one more than the latest.
        model: the model to export: backbone, pretrainer or a task type's head
            (classification, question_answering, ...); default: the checkpoint's own.
        config: the architecture (preset name or config JSON) for a .weights.h5 checkpoint.
        num_classes: for a classifier whose checkpoint does not say.
        pair: serving_default takes text and text_pair.
        max_sequence_length: the serving packing length; default: the model's limit.
        pad_to_max_length: pad every request to max_sequence_length.
        class_names: names for serve_examples' classes.
        warmup_texts: file of warmup texts, one per line (TAB separates a pair).
        base_path_prefix: base path written in models.config, e.g. /models.
        max_batch_size: batching_parameters.txt's max_batch_size.
        precision: the serving precision: float32 or bfloat16 (bfloat16 matrix multiplies,
            float32 LayerNorm/softmax/outputs); with --format tflite float32 or int8
            (dynamic-range int8 weights).
        num_layers: apply the shared block this many times instead of the trained depth.
        format: savedmodel (TF Serving), tflite (token ids in; only the checkpoint,
            tokenizer, name, output directory, model, precision (float32 or int8) and
            num_choices options apply) or tfhub (the TF-Hub
            encoder + preprocessor of a backbone or pretrainer; also the normalization and
            max_sequence_length, the preprocessor's packed length, default 128) or onnx
            (token ids in, float32; the checkpoint, tokenizer, name, output directory, model,
            num_classes and num_layers options apply).
    """

    checkpoint: str = dataclasses.field(metadata={"flag": False})
    vocabulary: str | None = dataclasses.field(default=None, metadata=VOCABULARY_METADATA)
    lowercase: bool | None = None
    strip_accents: bool | None = None
    name: str = "albert"
    output_dir: str = "saved_models"
    version: int | None = None
    model: str | None = dataclasses.field(default=None, metadata={"choices": MODEL_KINDS})
    config: str | None = None
    num_classes: int | None = None
    pair: bool = False
    max_sequence_length: int | None = None
    pad_to_max_length: bool = False
    class_names: tuple[str, ...] | None = dataclasses.field(
        default=None, metadata={"parse": str, "nargs": "+"}
    )
    warmup_texts: str | None = None
    base_path_prefix: str | None = None
    max_batch_size: int = BatchingParameters.max_batch_size
    precision: str = dataclasses.field(
        default="float32",
        metadata={"choices": tuple(dict.fromkeys(SERVING_PRECISIONS + TFLITE_PRECISIONS))},
    )
    num_layers: int | None = None
    format: str = dataclasses.field(default="savedmodel", metadata={"choices": EXPORT_FORMATS})


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=with_debug_help("\n".join(__doc__.splitlines()[2:])),
    )
    parser.add_argument("checkpoint", help="the checkpoint (any form load_checkpoint reads)")
    add_options(parser, ExportOptions)
    for task_type in TASK_TYPES:
        if task_type.export_options is not None:
            group = parser.add_argument_group(f"{task_type.name} export options")
            add_options(group, task_type.export_options, given_only=True)
    return parser


def task_options_from_args(args: argparse.Namespace) -> dict:
    """Each task type's export options from its flags (defaults where not given): the model's
    own task type's are used (`ExportSpec.own_task_options`)."""
    return {
        task_type.name: options_from_args(args, task_type.export_options)
        for task_type in TASK_TYPES
        if task_type.export_options is not None
    }


def _given_task_flags(args: argparse.Namespace) -> list[str]:
    return [
        field.name
        for task_type in TASK_TYPES
        if task_type.export_options is not None
        for field in dataclasses.fields(task_type.export_options)
        if hasattr(args, field.name)
    ]


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    options = options_from_args(args, ExportOptions, checkpoint=args.checkpoint)
    require_directory("output_dir", options.output_dir)  # before the checkpoint is read
    if options.format != "savedmodel":
        _require_format_options(options, _given_task_flags(args))
    spec = export_spec(options, task_options_from_args(args))
    path = export_checkpoint(checkpoint_source(options), options.output_dir, options.name, spec)
    print(f"wrote {path}")
    return 0


def _require_format_options(options: ExportOptions, given_task_flags: list[str]) -> None:
    def reads(name: str) -> bool:
        return name in _FORMAT_OPTIONS[options.format] or format_reads(options.format, name)

    for name in given_task_flags:
        if not reads(name):
            raise ValueError(
                f"`{name}` must not be given for --format {options.format} (it is a SavedModel "
                f"option). Received: {name}={getattr(options, name, None)!r}"
            )
    for field in dataclasses.fields(options):
        value = getattr(options, field.name)
        if not reads(field.name) and value != field.default:
            raise ValueError(
                f"`{field.name}` must be left at {field.default!r} for --format "
                f"{options.format} (it is a SavedModel option). "
                f"Received: {field.name}={value!r}"
            )


def checkpoint_source(options: ExportOptions) -> CheckpointSource:
    """What the export reads: the checkpoint, its tokenizer and its architecture."""
    return CheckpointSource(
        options.checkpoint,
        vocabulary=options.vocabulary,
        model_kind=options.model,
        config=options.config,
        num_classes=options.num_classes,
        lowercase=options.lowercase,
        strip_accents=options.strip_accents,
    )


def export_spec(options: ExportOptions, task_options: dict) -> ExportSpec:
    """What the export is: the one place the flags become the spec."""
    warmup = {}
    if options.warmup_texts is not None:
        texts, pairs = read_warmup_texts(options.warmup_texts)
        warmup = {"warmup_texts": texts, "warmup_text_pairs": pairs if options.pair else None}
    return ExportSpec(
        format=options.format,
        precision=options.precision,
        num_layers=options.num_layers,
        max_sequence_length=options.max_sequence_length,
        pad_to_max_length=options.pad_to_max_length,
        text_pair=options.pair,
        class_names=options.class_names,
        # Every task type's options; a format that reads none (TF-Hub) gets none.
        task_options=task_options if format_reads(options.format, "task_options") else None,
        version=options.version,
        batching=BatchingParameters(max_batch_size=options.max_batch_size),
        base_path_prefix=options.base_path_prefix,
        **warmup,
    )
