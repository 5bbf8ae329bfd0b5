"""`from_preset`: a model class's `from_preset(source)`, with its weights, config and the
tokenizer its task type's preprocessor needs, from anything `load_checkpoint` reads;
`load_tokenizer`, the tokenizer of such a source (the one place it is built); and
`save_to_preset`, a model's (with its tokenizer) as a keras-hub preset, or, for a task keras-hub
has no class for, as a fine-tuning run leaves its model (`write_model_preset`).

The models call it through `keras_albert.models.task.register_preset_loader` (models import
no converter); `import keras_albert` registers it.
"""

from __future__ import annotations

import json
import os

from keras_albert.convert.hubs import local_source
from keras_albert.convert.keras_hub import keras_hub_kind, write_keras_hub_preset
from keras_albert.convert.resolve import load_checkpoint
from keras_albert.convert.vocabulary import (
    find_vocabulary,
    require_vocabulary,
    resolve_normalization,
)
from keras_albert.models.task import register_preset_loader
from keras_albert.tasks.registry import BASE_MODEL_KINDS, get_task_type, model_kind_of
from keras_albert.text.files import write_atomically
from keras_albert.text.preprocessing import tokenizer_class
from keras_albert.validation import require_int, require_one_of


def load_tokenizer(
    source: str | os.PathLike | None,
    vocabulary: str | os.PathLike | None = None,
    *,
    lowercase: bool | None = None,
    strip_accents: bool | None = None,
):
    """The tokenizer of `source` (anything `load_checkpoint` reads): `vocabulary`, default the
    one beside `source` (`keras_albert.convert.require_vocabulary`, which requires one), with
    `lowercase` and `strip_accents` as given, else as its run recorded them
    (`keras_albert.convert.resolve_normalization`). TensorFlow's `AlbertTokenizer`; where it
    is not installed, the Python half. `from_preset` puts it in a task model's preprocessor;
    the export (`keras_albert.export.CheckpointSource`) and the fine-tuning driver take it
    alone."""
    vocabulary = require_vocabulary(source, vocabulary)
    return tokenizer_class()(vocabulary, **resolve_normalization(source, lowercase, strip_accents))


def from_preset(
    model_class: type,
    source: str | os.PathLike,
    *,
    num_classes: int | None = None,
    config=None,
    preprocessor: bool | str = "auto",
    vocabulary: str | os.PathLike | None = None,
    sequence_length: int | None = None,
    lowercase: bool | None = None,
    strip_accents: bool | None = None,
):
    """A `model_class` (`AlbertBackbone`, `AlbertClassifier`, ...) with the weights of `source`.

    Args:
        model_class: the class asked for; its kind is `load_checkpoint`'s `model=`.
        source: anything `load_checkpoint` reads (our run directory, a `.keras` file, a Hugging
            Face directory, an original TF1 release, a keras-hub preset, a TF-Hub encoder, a
            hub name `hf://owner/name` or `kaggle://owner/model/framework/variation`, a
            preset name: random weights).
        num_classes, config: `load_checkpoint`'s (a head the checkpoint does not hold needs
            its `num_classes`).
        preprocessor: attach the task type's preprocessor (a tokenizer from the vocabulary
            beside `source` and the normalization its run recorded): True requires one,
            "auto" attaches one where a vocabulary is found, False none. A backbone or a task
            type without a preprocessor never gets one. A `.keras` file that holds the model
            with its preprocessor keeps that one, unless `vocabulary`, `sequence_length`,
            `lowercase` or `strip_accents` asks for another.
        vocabulary: the tokenizer's SentencePiece model or WordPiece vocabulary; default: the
            one beside `source` (`keras_albert.convert.find_vocabulary`).
        sequence_length: the preprocessor's packed length; default: the backbone's
            `max_sequence_length`.
        lowercase, strip_accents: the tokenizer's normalization; default: as recorded.
    """
    require_one_of("preprocessor", preprocessor, (True, False, "auto"))
    require_int("sequence_length", sequence_length, minimum=3, optional=True)
    kind = model_kind_of(model_class)
    source = local_source(source)  # a hub name's directory: its weights and its vocabulary
    model = load_checkpoint(source, model=kind, config=config, num_classes=num_classes)
    kind = model_kind_of(model)
    preprocessor_class = (
        None if kind in BASE_MODEL_KINDS else get_task_type(kind).preprocessor_class()
    )
    if preprocessor is False or preprocessor_class is None:
        if getattr(model, "preprocessor", None) is not None:  # a `.keras` file's own
            model.preprocessor = None
        return model
    given = (vocabulary, sequence_length, lowercase, strip_accents)
    if isinstance(model.preprocessor, preprocessor_class) and given == (None,) * 4:
        # A `.keras` file saved with its preprocessor (`save_to_preset`'s `model.keras`): its
        # tokenizer and options as they were saved.
        return model
    if preprocessor == "auto" and vocabulary is None:
        vocabulary = find_vocabulary(source)
        if vocabulary is None:  # none beside `source` (a preset name): token ids in, as before
            return model
    tokenizer = load_tokenizer(source, vocabulary, lowercase=lowercase, strip_accents=strip_accents)
    config = model.backbone.albert_config
    length = config.max_sequence_length if sequence_length is None else sequence_length
    model.preprocessor = preprocessor_class(tokenizer, sequence_length=length)
    return model


def save_to_preset(model, directory: str | os.PathLike) -> None:
    """Writes `model`, and the tokenizer of the preprocessor it carries, as a preset directory
    that `from_preset` reads: for a model keras-hub has a class for (a backbone, a classifier,
    a pretrainer or a masked LM: `keras_hub_kind`), a keras-hub preset (`write_keras_hub_preset`,
    the one writer of the conversion tool's `--format keras_hub`); for a task keras-hub has no
    class for, `write_model_preset`."""
    if keras_hub_kind(model) is None:
        write_model_preset(model, directory)
        return
    preprocessor = getattr(model, "preprocessor", None)
    if preprocessor is None:
        write_keras_hub_preset(model, directory)
        return
    tokenizer = preprocessor.tokenizer
    write_keras_hub_preset(
        model,
        directory,
        vocabulary=tokenizer.serialized_model,
        lowercase=tokenizer.lowercase,
        strip_accents=tokenizer.strip_accents,
    )


def write_model_preset(model, directory: str | os.PathLike) -> None:
    """Writes `model` to the new (or empty) `directory` as a fine-tuning run leaves its model:
    `model.keras` (the model and the preprocessor it carries, its tokenizer included), the
    tokenizer's vocabulary beside it (`tokenizer.model`, or `vocab.txt` for WordPiece) and
    `summary.json` with its normalization (`lowercase`, `strip_accents`), so that
    `load_checkpoint`, `from_preset` and the export command read it as they read a run's.
    Written beside, then renamed into place: a failure leaves nothing that loads."""
    preprocessor = getattr(model, "preprocessor", None)
    tokenizer = None if preprocessor is None else preprocessor.tokenizer

    def write(path: str) -> None:
        model.save(os.path.join(path, "model.keras"))
        if tokenizer is None:
            return
        name = "vocab.txt" if tokenizer.wordpiece else "tokenizer.model"
        with open(os.path.join(path, name), "wb") as file:
            file.write(tokenizer.serialized_model)
        record = {"lowercase": tokenizer.lowercase, "strip_accents": tokenizer.strip_accents}
        with open(os.path.join(path, "summary.json"), "w", encoding="utf-8") as file:
            json.dump({"model": model_kind_of(model), **record}, file, indent=2, sort_keys=True)
            file.write("\n")

    write_atomically(directory, write, directory=True, name="directory")


register_preset_loader(from_preset, save_to_preset)
