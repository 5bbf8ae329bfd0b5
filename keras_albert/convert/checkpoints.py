"""Writing a keras_albert model out: `.keras`, `.weights.h5`, a Hugging Face directory, a
keras-hub preset directory, or a format a task type owns (`TaskType.checkpoint_format`: a
sentence-transformers directory).

Reading is `keras_albert.convert.resolve.load_checkpoint` (every accepted source in one place).
"""

import os

from keras_albert.convert.huggingface import write_hf_directory
from keras_albert.convert.keras_hub import write_keras_hub_preset
from keras_albert.directories import require_new_directory
from keras_albert.models.lora import merged_lora
from keras_albert.tasks.registry import TASK_TYPES, model_kind_of
from keras_albert.text.files import write_atomically
from keras_albert.validation import require_one_of

# The formats task types own, by name: a Hugging Face directory of the backbone with the task
# type's files beside it.
TASK_FORMATS = {
    task_type.checkpoint_format.name: task_type
    for task_type in TASK_TYPES
    if task_type.checkpoint_format is not None
}
WRITE_FORMATS = ("auto", "keras", "hf", "keras_hub", *TASK_FORMATS)


def save_checkpoint(
    model,
    destination: str | os.PathLike,
    format: str = "auto",
    vocabulary: str | os.PathLike | None = None,
    lowercase: bool = True,
    strip_accents: bool = True,
) -> None:
    """Writes `model` as `.keras`, `.weights.h5`, a Hugging Face directory ("hf"), a
    keras-hub preset directory ("keras_hub") or a format its task type owns (`TASK_FORMATS`:
    "sentence_transformers" for an `AlbertTextEmbedder`).

    "auto" writes Keras's formats for a destination ending in `.keras` or `.weights.h5`, and
    a Hugging Face directory (`config.json` + `model.safetensors`) otherwise.
    `vocabulary` (a SentencePiece model) goes into a keras-hub preset as its tokenizer, with
    the normalization `lowercase` and `strip_accents` say written into it, and into a task
    type's format as its Hugging Face tokenizer (by default, there, the tokenizer of the
    preprocessor the model carries); the other formats ignore all three. A model with LoRA
    adapters is written with them merged into its weights, in every format, and uncompiled
    (as a LoRA run's `best.keras`): its optimizer's state holds the adapters' moments, for
    variables the merged model does not have (Keras would skip loading it, with a warning).

    Every format is written beside `destination`, then renamed into place: a failure leaves
    nothing that loads. A file replaces the one there; a directory must be new or empty.
    """
    require_one_of("format", format, WRITE_FORMATS)
    destination = os.fspath(destination)
    if format == "auto":
        format = "keras" if destination.endswith((".keras", ".weights.h5")) else "hf"
    if format != "keras":
        require_new_directory("destination", destination)  # named as the caller knows it
    model = merged_lora(model)
    if format == "keras":
        save = model.save_weights if destination.endswith(".weights.h5") else model.save
        write_atomically(destination, save, directory=False, name="destination")
        return
    if format == "keras_hub":
        write_keras_hub_preset(
            model,
            destination,
            vocabulary and os.fspath(vocabulary),
            lowercase=lowercase,
            strip_accents=strip_accents,
        )
    elif format in TASK_FORMATS:
        _write_task_format(model, destination, format, vocabulary, lowercase, strip_accents)
    else:
        write_hf_directory(model, destination)


def _write_task_format(
    model, destination: str, format: str, vocabulary, lowercase: bool, strip_accents: bool
) -> None:
    task_type = TASK_FORMATS[format]
    if model_kind_of(model) != task_type.name:
        raise ValueError(
            f"`model` must be an {task_type.model_class.__name__} to write format={format!r}. "
            f"Received: model={type(model).__name__}"
        )
    preprocessor = getattr(model, "preprocessor", None)
    if vocabulary is not None:
        with open(vocabulary, "rb") as file:
            tokenizer_model = file.read()
    elif preprocessor is not None:
        tokenizer = preprocessor.tokenizer
        if tokenizer.wordpiece:
            raise ValueError(
                f"`vocabulary` must be a SentencePiece model for format={format!r} (Hugging "
                "Face's AlbertTokenizer). Received: the model's WordPiece vocabulary"
            )
        tokenizer_model = tokenizer.serialized_model
        lowercase, strip_accents = tokenizer.lowercase, tokenizer.strip_accents
    else:
        raise ValueError(
            f"`vocabulary` must be given for format={format!r} (the model carries no "
            "preprocessor whose tokenizer to write). Received: vocabulary=None"
        )
    files = task_type.checkpoint_format.files(model, tokenizer_model, lowercase, strip_accents)
    write_hf_directory(model.backbone, destination, extra_files=files)
