"""Where pretraining's weights and architecture come from, through the ONE checkpoint resolver
(`keras_albert.convert.load_checkpoint`: presets, config files, `.keras`, `.weights.h5`, our
training outputs, Hugging Face and original TF1 checkpoints).

The pretraining driver calls `initial_pretrainer(options)` and `copy_initial_weights(...)`
(the fine-tuning driver loads its backbone through the same resolver).
"""

from __future__ import annotations

from keras_albert.config import AlbertConfig
from keras_albert.convert import load_checkpoint, resolve_config
from keras_albert.models import AlbertBackbone, AlbertPretrainer
from keras_albert.pretraining.options import PretrainingOptions


def initial_pretrainer(options: PretrainingOptions):
    """(config, init_model): the architecture, and the initial model when `init_checkpoint` is
    given (loaded outside the strategy scope; `copy_initial_weights` copies its weights into
    the model built under it, so that fresh heads are drawn after the run's seed is set)."""
    architecture = options.preset or options.config
    config = resolve_config(architecture) if architecture else None
    init_model = None
    if options.init_checkpoint is not None:
        init_model = load_checkpoint(options.init_checkpoint, config=config)
        if not isinstance(init_model, (AlbertPretrainer, AlbertBackbone)):
            init_model = init_model.backbone  # a task model: its body, the heads are fresh
        init_config = _backbone(init_model).albert_config
        if config is None:
            config = init_config
        elif _architecture(config) != _architecture(init_config):
            raise ValueError(
                f"`init_checkpoint` must have the architecture asked for "
                f"({_architecture(config)}); it has the architecture {_architecture(init_config)}. "
                f"Received: init_checkpoint={options.init_checkpoint!r}"
            )
    return config, init_model


def copy_initial_weights(source, target: AlbertPretrainer, path: str) -> None:
    if isinstance(source, AlbertPretrainer):
        target.set_weights(source.get_weights())
        print(f"keras_albert: initialized the model from {path}.")
    else:
        target.backbone.set_weights(_backbone(source).get_weights())
        print(f"keras_albert: initialized the backbone from {path}; the heads are fresh.")


def _backbone(model) -> AlbertBackbone:
    return model if isinstance(model, AlbertBackbone) else model.backbone


def _architecture(config: AlbertConfig) -> dict:
    # Dropout rates change training, not the weights' shapes or meaning.
    values = config.to_dict()
    values.pop("dropout")
    values.pop("attention_dropout")
    return values
