"""The export of a checkpoint, in any format: `export_checkpoint(source, base_dir, name, spec)`.

`source` (a `CheckpointSource`, or a checkpoint's path) gives the model and its tokenizer;
`spec` (`keras_albert.export.spec.ExportSpec`) says what to write of them, and where under
`<base_dir>/<name>/`:

- "savedmodel": the next version, `<base_dir>/<name>/<version>/`, with `models.config` and
  `batching_parameters.txt` (`keras_albert.export.serving_layout.export_for_serving`);
- "tflite": `<base_dir>/<name>/model.tflite` and the vocabulary (`keras_albert.export.tflite`);
- "tfhub": `<base_dir>/<name>/encoder/` and `preprocessor/` (`keras_albert.export.tfhub`);
- "onnx": `<base_dir>/<name>/model.onnx` and the vocabulary (`keras_albert.export.onnx`).
"""

from __future__ import annotations

import dataclasses
import os

import keras

from keras_albert.export.onnx import export_onnx
from keras_albert.export.serving_layout import export_for_serving, model_directory
from keras_albert.export.spec import ExportSpec, resolve_spec
from keras_albert.export.tfhub import export_tfhub
from keras_albert.export.tflite import export_tflite
from keras_albert.text.tokenizer import AlbertTokenizer

# The formats written to one directory, `<base_dir>/<name>/`: `(model, tokenizer, dir, spec)`.
_DIRECTORY_EXPORTS = {"tflite": export_tflite, "tfhub": export_tfhub, "onnx": export_onnx}


@dataclasses.dataclass(frozen=True)
class CheckpointSource:
    """What every export of a checkpoint reads the model and its tokenizer from.

    Args:
        checkpoint: any form `keras_albert.convert.load_checkpoint` reads.
        vocabulary: the tokenizer's SentencePiece model or WordPiece vocabulary; default: the
            one found beside the checkpoint (`keras_albert.convert.require_vocabulary`, which
            requires it before anything is loaded).
        model_kind, config, num_classes: `load_checkpoint`'s `model`, `config` and
            `num_classes`.
        lowercase, strip_accents: the tokenizer's (and so the exported graph's) normalization;
            default: what the checkpoint's run recorded
            (`keras_albert.convert.resolve_normalization`).
    """

    checkpoint: str | os.PathLike
    vocabulary: str | os.PathLike | None = None
    model_kind: str | None = None
    config: object = None
    num_classes: int | None = None
    lowercase: bool | None = None
    strip_accents: bool | None = None

    @classmethod
    def of(cls, source: CheckpointSource | str | os.PathLike) -> CheckpointSource:
        """`source`, or the source of the checkpoint at the path `source` (all else default)."""
        return source if isinstance(source, CheckpointSource) else cls(source)

    def load(self) -> tuple[keras.Model, AlbertTokenizer]:
        """The model, as `load_checkpoint` reads it (a `.keras` file's with the preprocessor it
        was saved with), and its tokenizer (`keras_albert.convert.load_tokenizer`).

        Not `from_preset` with a fresh preprocessor: the token-id formats (ONNX, TFLite) need
        none, and a task's preprocessor refuses a tokenizer its string-in features cannot use
        (a question answerer's, without in-graph offsets); and a fresh preprocessor's options
        (a question answerer's `max_query_length`) would replace the serving modules' own
        defaults (`serving_module`).
        """
        from keras_albert.convert import load_checkpoint, load_tokenizer

        # First: the vocabulary is required before anything is loaded.
        tokenizer = load_tokenizer(
            self.checkpoint,
            self.vocabulary,
            lowercase=self.lowercase,
            strip_accents=self.strip_accents,
        )
        model = load_checkpoint(
            self.checkpoint, model=self.model_kind, config=self.config, num_classes=self.num_classes
        )
        return model, tokenizer


def export_checkpoint(
    source: CheckpointSource | str | os.PathLike,
    base_dir: str | os.PathLike = "saved_models",
    name: str = "albert",
    spec: ExportSpec | None = None,
    **fields,
) -> str:
    """Writes the model and tokenizer of `source` as `spec` says (see the module docstring);
    returns the path written.

    `fields` are the spec's fields (`resolve_spec`), e.g. `format="tflite"`; `task_options`
    may map task type names to their options, of which the loaded model's task type's apply.
    `base_dir` and `name` are checked before the checkpoint is read.
    """
    spec = resolve_spec(spec, fields)
    export_dir = model_directory(base_dir, name)  # before the checkpoint is read
    model, tokenizer = CheckpointSource.of(source).load()
    if spec.format == "savedmodel":  # a version under export_dir, and the server's files
        return export_for_serving(model, tokenizer, base_dir, name, spec)
    return _DIRECTORY_EXPORTS[spec.format](model, tokenizer, export_dir, spec)
