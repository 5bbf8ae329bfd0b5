"""Writing a keras_albert model out: `.keras`, `.weights.h5`, a Hugging Face directory, or a
keras-hub preset directory.

Reading is `keras_albert.convert.resolve.load_checkpoint` (every accepted source in one place).
"""

import os

from keras_albert.convert.huggingface import write_hf_directory
from keras_albert.convert.keras_hub import write_keras_hub_preset
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
    ignore all three).
    """
    require_one_of("format", format, WRITE_FORMATS)
    destination = os.fspath(destination)
    if format == "auto":
        format = "keras" if destination.endswith((".keras", ".weights.h5")) else "hf"
    if format == "keras":
        if destination.endswith(".weights.h5"):
            model.save_weights(destination)
        else:
            model.save(destination)
    elif format == "keras_hub":
        write_keras_hub_preset(
            model,
            destination,
            vocabulary and os.fspath(vocabulary),
            lowercase=lowercase,
            strip_accents=strip_accents,
        )
    else:
        write_hf_directory(model, destination)
