"""Writing a keras_albert model out: `.keras`, `.weights.h5`, or a Hugging Face directory.

Reading is `keras_albert.convert.resolve.load_checkpoint` (every accepted source in one place).
"""

import os

from keras_albert.convert.huggingface import write_hf_directory
from keras_albert.validation import require_one_of

WRITE_FORMATS = ("auto", "keras", "hf")


def save_checkpoint(model, destination: str | os.PathLike, format: str = "auto") -> None:
    """Writes `model` as `.keras`, `.weights.h5`, or a Hugging Face directory ("hf").

    "auto" writes Keras's formats for a destination ending in `.keras` or `.weights.h5`, and
    a Hugging Face directory (`config.json` + `model.safetensors`) otherwise.
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
    else:
        write_hf_directory(model, destination)
