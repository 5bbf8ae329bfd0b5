"""Writing a keras_albert model out: `.keras`, `.weights.h5`, a Hugging Face directory, or a
keras-hub preset directory.

Reading is `keras_albert.convert.resolve.load_checkpoint` (every accepted source in one place).
"""

import os

from keras_albert.convert.huggingface import write_hf_directory
from keras_albert.convert.keras_hub import write_keras_hub_preset
from keras_albert.directories import require_new_directory
from keras_albert.models.lora import merged_lora
from keras_albert.text.files import write_atomically
from keras_albert.validation import require_one_of

WRITE_FORMATS = ("auto", "keras", "hf", "keras_hub")


def save_checkpoint(
    model,
    destination: str | os.PathLike,
    format: str = "auto",
    vocabulary: str | os.PathLike | None = None,
    lowercase: bool = True,
    strip_accents: bool = True,
) -> None:
    """Writes `model` as `.keras`, `.weights.h5`, a Hugging Face directory ("hf") or a
    keras-hub preset directory ("keras_hub").

    "auto" writes Keras's formats for a destination ending in `.keras` or `.weights.h5`, and
    a Hugging Face directory (`config.json` + `model.safetensors`) otherwise.
    `vocabulary` (a SentencePiece model) goes into a keras-hub preset as its tokenizer, with
    the normalization `lowercase` and `strip_accents` say written into it (the other formats
    ignore all three). A model with LoRA adapters is written with them merged into its
    weights, in every format, and uncompiled (as a LoRA run's `best.keras`): its optimizer's
    state holds the adapters' moments, for variables the merged model does not have (Keras
    would skip loading it, with a warning).

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
    else:
        write_hf_directory(model, destination)
