"""LoRA adapters merged into their kernels: what an export serves and what a trainable-weight
count reports (`AlbertBackbone.enable_lora` adds them)."""

import os
import tempfile

import keras


def has_lora(model: keras.Model) -> bool:
    """Whether any layer of `model` has LoRA adapters enabled."""
    return any(getattr(layer, "lora_enabled", False) for layer in model._flatten_layers())


def merged_lora(model: keras.Model) -> keras.Model:
    """`model` itself when it has no LoRA adapters; else a copy of the same class whose
    adapted `Dense` layers are plain again, their kernels `kernel + A·B·alpha/rank`.

    The copy is made as Keras saves and loads a LoRA layer (`Dense.save_own_variables`
    writes the merged kernel, with no adapters): the architecture from `get_config` (where
    the attention's projections are not configured, so they come back plain), the weights
    through a `.weights.h5` file.
    """
    if not has_lora(model):
        return model
    copy = type(model).from_config(model.get_config())
    if getattr(model, "preprocessor", None) is not None:
        # From a config, a preprocessor has no tokenizer (it comes with a file's assets).
        copy.preprocessor = model.preprocessor
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "merged.weights.h5")
        model.save_weights(path)
        copy.load_weights(path)
    return copy


def is_adapter(weight) -> bool:
    """Whether `weight` is a LoRA adapter: Keras's `enable_lora` names them `lora_kernel_a`,
    `lora_kernel_b` (Dense, EinsumDense) and `lora_embeddings_a`, `lora_embeddings_b`."""
    return weight.name.startswith("lora_")


def parameter_counts(model: keras.Model) -> dict:
    """`parameters`: the model's own, without LoRA adapters (what `merged_lora(model)`, a
    saved model or an export has); `trainable_parameters`: those training updates, adapters
    included."""

    def count(weights) -> int:
        return int(sum(int(keras.ops.size(weight)) for weight in weights))

    return {
        "parameters": count(w for w in model.weights if not is_adapter(w)),
        "trainable_parameters": count(model.trainable_weights),
    }
