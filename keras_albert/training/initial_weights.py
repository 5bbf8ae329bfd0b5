"""Where the drivers' weights and architecture come from: presets, config files, checkpoints.

The drivers call three functions: `initial_pretrainer(options)`, `initial_classifier(options,
task)` and `sentencepiece_model_for(options)`. (What a checkpoint may be is to be answered by
one resolver in `keras_albert.convert`; these bodies are the drivers' rules until then.)
"""

from __future__ import annotations

import os

import keras

from keras_albert.config import AlbertConfig, get_preset
from keras_albert.models import AlbertBackbone, AlbertClassifier, AlbertPretrainer
from keras_albert.text.glue import TaskSpec
from keras_albert.training.options import FinetuningOptions, PretrainingOptions
from keras_albert.training.run_directory import read_run_file
from keras_albert.validation import require_file

# ------------------------------------------------------------------------------------------
# Pretraining: the config, and the model to copy initial weights from.


def initial_pretrainer(options: PretrainingOptions):
    """(config, init_model): the architecture, and the initial model when `init_checkpoint` is
    given (loaded outside the strategy scope; `copy_initial_weights` copies its weights into
    the model built under it)."""
    config = None
    if options.preset is not None:
        config = get_preset(options.preset)
    elif options.config is not None:
        require_file("config", options.config)
        config = AlbertConfig.from_json(options.config)
    init_model = None
    if options.init_checkpoint is not None:
        init_model = _load_initial_model(options.init_checkpoint, config)
        init_config = init_model.albert_config if hasattr(init_model, "albert_config") else None
        if init_config is None:
            init_config = init_model.backbone.albert_config
        if config is None:
            config = init_config
        elif _architecture(config) != _architecture(init_config):
            raise ValueError(
                f"init_checkpoint {options.init_checkpoint!r} has the architecture "
                f"{_architecture(init_config)}, which differs from the requested "
                f"{_architecture(config)}."
            )
    return config, init_model


def copy_initial_weights(source, target: AlbertPretrainer, path: str) -> None:
    if isinstance(source, AlbertBackbone):
        target.backbone.set_weights(source.get_weights())
        print(f"keras_albert: initialized the backbone from {path}; the heads are fresh.")
    else:
        target.set_weights(source.get_weights())
        print(f"keras_albert: initialized the model from {path}.")


def _architecture(config: AlbertConfig) -> dict:
    # Dropout rates change training, not the weights' shapes or meaning.
    values = config.to_dict()
    values.pop("dropout")
    values.pop("attention_dropout")
    return values


def _load_initial_model(path: str, config: AlbertConfig | None):
    if path.endswith(".weights.h5"):
        if config is None:
            raise ValueError(
                f"init_checkpoint {path!r} holds weights only: give `preset` or `config`."
            )
        model = AlbertPretrainer(AlbertBackbone.from_albert_config(config))
        model.load_weights(path)
        return model
    from keras_albert.convert import load_checkpoint  # the converters are only needed here

    model = load_checkpoint(path)
    if not isinstance(model, (AlbertPretrainer, AlbertBackbone)):
        raise ValueError(
            f"init_checkpoint {path!r} holds a {type(model).__name__}; expected an "
            "AlbertPretrainer or an AlbertBackbone."
        )
    return model


# ------------------------------------------------------------------------------------------
# Fine-tuning: the classifier, and the SentencePiece model next to the checkpoint.


def initial_classifier(options: FinetuningOptions, task: TaskSpec) -> AlbertClassifier:
    """The classifier: `init_checkpoint`'s backbone with a fresh head, or a fresh model of the
    `preset` / `config` architecture."""
    if options.init_checkpoint:
        return classifier_from_pretrained(
            options.init_checkpoint, task.num_classes, dropout=options.dropout
        )
    config = (
        get_preset(options.preset) if options.preset else AlbertConfig.from_json(options.config)
    )
    return AlbertClassifier(
        AlbertBackbone.from_albert_config(config),
        num_classes=task.num_classes,
        dropout=options.dropout,
    )


def load_backbone(path: str | os.PathLike) -> AlbertBackbone:
    """The backbone of a checkpoint, in one call.

    Accepts our pretraining output directory (holding `pretrainer.keras`), a `.keras` file of
    an `AlbertPretrainer`, `AlbertBackbone` or `AlbertClassifier`, or anything
    `keras_albert.convert.load_checkpoint` reads (Hugging Face directory, original TF1
    checkpoint).
    """
    path = os.fspath(path)
    if os.path.isdir(path):
        keras_files = sorted(name for name in os.listdir(path) if name.endswith(".keras"))
        preferred = [name for name in ("pretrainer.keras", "backbone.keras") if name in keras_files]
        if preferred or len(keras_files) == 1:
            path = os.path.join(path, (preferred or keras_files)[0])
    if path.endswith(".keras"):
        if not os.path.isfile(path):
            raise FileNotFoundError(f"Checkpoint not found: {path!r}")
        # compile=False: a pretraining output keeps its optimizer (Lamb), which fine-tuning
        # replaces; not restoring it also spares importing its module first.
        model = keras.models.load_model(path, compile=False)
    else:
        from keras_albert.convert import load_checkpoint

        model = load_checkpoint(path, model="backbone")
    if isinstance(model, (AlbertPretrainer, AlbertClassifier)):
        return model.backbone
    if isinstance(model, AlbertBackbone):
        return model
    raise ValueError(
        f"{path} holds a {type(model).__name__}; expected an AlbertPretrainer, AlbertBackbone "
        "or AlbertClassifier."
    )


def classifier_from_pretrained(
    path: str | os.PathLike, num_classes: int, dropout: float = 0.1
) -> AlbertClassifier:
    """A classifier with the backbone weights of `path` (see `load_backbone`) and a fresh head."""
    return AlbertClassifier(load_backbone(path), num_classes=num_classes, dropout=dropout)


def sentencepiece_model_for(options: FinetuningOptions) -> str | None:
    """`options.sentencepiece_model`, else the one found beside `init_checkpoint`."""
    return options.sentencepiece_model or find_sentencepiece_model(options.init_checkpoint)


def find_sentencepiece_model(init_checkpoint: str | None) -> str | None:
    """The SentencePiece model next to a checkpoint: `*.model` in its directory, or the
    `sentencepiece_model` named in a pretraining output's `run.json`."""
    if init_checkpoint is None:
        return None
    directory = (
        init_checkpoint if os.path.isdir(init_checkpoint) else os.path.dirname(init_checkpoint)
    )
    models = sorted(name for name in os.listdir(directory or ".") if name.endswith(".model"))
    if len(models) == 1:
        return os.path.join(directory, models[0])
    recorded = read_run_file(directory or ".") or {}
    return recorded.get("sentencepiece_model") or None
