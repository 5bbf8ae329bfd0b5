"""keras-hub ALBERT presets ↔ keras_albert models, read and written without keras_hub.

A keras-hub preset directory (`keras_hub/src/utils/preset_utils.py`) holds:

- `config.json`: the serialized `AlbertBackbone` (`registered_name` "keras_hub>AlbertBackbone");
- `model.weights.h5`: Keras's weights file of that backbone;
- `metadata.json`: versions, parameter count, date, the tasks the backbone serves;
- `tokenizer.json` + `assets/tokenizer/vocabulary.spm`: the SentencePiece tokenizer;
- for a task: `task.json` (`AlbertTextClassifier`, `AlbertMaskedLM`), `task.weights.h5` (the
  head's weights only) and `preprocessor.json`.

The library does not import keras_hub (a test dependency only): the JSON is plain, and the
weights files are h5py files in the layout Keras's `save_weights` gives those models; their
name table and layout are `keras_albert.convert.keras_hub_weights`.

keras-hub's ALBERT differs from ours in ways the writer refuses rather than hides: one sharing
mode ("all"), GELU's tanh approximation, LayerNorm epsilon 1e-12, one dropout rate for hidden
and attention dropout (we write `dropout`), and `num_groups` must divide `num_layers` (group g
runs for layers g·L/G … (g+1)·L/G − 1, as ours). Its attention kernels are per head
(EinsumDense `(hidden, heads, head_dim)`): the table reshapes them. Its `AlbertMaskedLM` has no
sentence-order head (ours is then freshly initialized, and one printed line says so) and its
MLM head's LayerNorm epsilon is 1e-5 where ours uses the backbone's: MLM logits differ by that.
Its `AlbertTokenizer` runs SentencePiece alone, without the original's lowercasing and accent
stripping: the written `vocabulary.spm` carries them in its own normalizer
(`keras_albert.text.sentencepiece_model.with_albert_normalization`), so keras-hub tokenizes
cased and accented text as ours does (but for the digit-comma re-split, which it lacks).
"""

import datetime
import importlib.metadata
import json
import os

import keras
import numpy as np

from keras_albert.config import AlbertConfig
from keras_albert.convert.keras_hub_weights import (
    entries_for,
    keras_hub_name_table,
    read_weights_file,
    weights_file_location,
    write_weights_file,
)
from keras_albert.convert.name_table import assign_from_table, read_from_table
from keras_albert.lazy import needs_tensorflow
from keras_albert.models import AlbertBackbone, AlbertPretrainer
from keras_albert.tasks.registry import TASK_TYPES, get_task_type, model_kind_of
from keras_albert.text.files import write_atomically

# keras-hub class (config.json / task.json `class_name`) → the kind of model we build for it:
# the task types name theirs (`TaskType.checkpoint_names.keras_hub_class`).
KERAS_HUB_CLASSES = {
    "AlbertBackbone": "backbone",
    "AlbertMaskedLM": "pretrainer",
    **{
        task_type.checkpoint_names.keras_hub_class: task_type.name
        for task_type in TASK_TYPES
        if task_type.checkpoint_names.keras_hub_class is not None
    },
}
_KINDS = {kind: class_name for class_name, kind in KERAS_HUB_CLASSES.items()}
TOKENIZER_ASSET = os.path.join("assets", "tokenizer", "vocabulary.spm")
# A task type's head written as the keras-hub class of another kind: fill-mask's masked LM is
# keras-hub's `AlbertMaskedLM`, as a pretrainer is (without its sentence-order head).
_WRITTEN_AS = {"fill_mask": "pretrainer"}


def keras_hub_kind(model) -> str | None:
    """The kind (`KERAS_HUB_CLASSES`' values) keras-hub's class for `model` is read back as,
    or None where keras-hub has no class for its head."""
    kind = model_kind_of(model)
    kind = _WRITTEN_AS.get(kind, kind)
    return kind if kind in _KINDS else None


# A keras-hub task is compiled when built (Adam, `iterations` and `learning_rate`), and loading
# task.weights.h5 warns unless the file has those two scalars: write what keras-hub's own
# `save_to_preset` writes for a fresh task (step 0, its default learning rate).
_TASK_OPTIMIZER_LEARNING_RATES = {"AlbertTextClassifier": 1e-5, "AlbertMaskedLM": 5e-5}
# keras-hub task class → its module, and its preprocessor's class and module.
_TASK_MODULES = {
    "AlbertTextClassifier": "albert_text_classifier",
    "AlbertMaskedLM": "albert_masked_lm",
}
_PREPROCESSORS = {
    "AlbertTextClassifier": (
        "AlbertTextClassifierPreprocessor",
        "albert_text_classifier_preprocessor",
    ),
    "AlbertMaskedLM": ("AlbertMaskedLMPreprocessor", "albert_masked_lm_preprocessor"),
}


def _head_options(task_class: str, config: dict) -> tuple[int | None, dict]:
    """`(num_classes, head options)` of our model from a keras-hub task's config."""
    if task_class != "AlbertTextClassifier":
        return None, {}
    if config.get("activation") not in (None, "linear"):
        # Ours returns logits; a softmax inside keras-hub's head would differ silently.
        raise ValueError(
            "The keras-hub classifier's `activation` must be linear (logits). Received: "
            f"activation={config['activation']!r}"
        )
    return config["num_classes"], {"dropout": config.get("dropout", 0.1)}


def _task_config(task_class: str, model) -> dict:
    """The keras-hub task's own config fields of `model`."""
    if task_class != "AlbertTextClassifier":
        return {}
    return {"num_classes": model.num_classes, "activation": "linear", "dropout": model.dropout}


# What keras-hub fixes and we make configurable: a preset cannot say anything else.
_KERAS_HUB_FIXED = {"sharing": "all", "activation": "gelu_approximate", "layer_norm_epsilon": 1e-12}
_BACKBONE_FIELDS = (
    "vocabulary_size",
    "num_layers",
    "num_heads",
    "num_groups",
    "num_inner_repetitions",
    "embedding_dim",
    "hidden_dim",
    "intermediate_dim",
    "dropout",
    "max_sequence_length",
    "num_segments",
)


# --- Reading ---------------------------------------------------------------------------------


def is_keras_hub_preset(directory: str | os.PathLike) -> bool:
    """Whether `directory` holds a keras-hub preset (its config.json is a Keras object
    registered by keras_hub, or by keras_nlp as the older presets say), not a Hugging Face
    config.json."""
    config = _read_json(os.path.join(os.fspath(directory), "config.json"))
    return str(config.get("registered_name", "")).startswith(("keras_hub>", "keras_nlp>"))


def _read_json(path: str) -> dict:
    if not os.path.isfile(path):
        return {}
    with open(path, encoding="utf-8") as file:
        try:
            values = json.load(file)
        except json.JSONDecodeError:
            return {}
    return values if isinstance(values, dict) else {}


def keras_hub_config(directory: str | os.PathLike) -> AlbertConfig:
    """The architecture of a keras-hub preset, from its config.json."""
    directory = os.fspath(directory)
    saved = _read_json(os.path.join(directory, "config.json"))
    if saved.get("class_name") != "AlbertBackbone":
        raise ValueError(
            "`source` must be a keras-hub ALBERT preset (config.json of an AlbertBackbone). "
            f"Received: class_name={saved.get('class_name')!r} in {directory!r}"
        )
    fields = saved["config"]
    return AlbertConfig(
        **{name: fields[name] for name in _BACKBONE_FIELDS if name in fields},
        attention_dropout=fields.get("dropout", 0.0),
        **_KERAS_HUB_FIXED,
    )


def load_keras_hub_preset(directory: str | os.PathLike, kind: str | None = None):
    """Our model of a keras-hub preset: a backbone, or with task.json an `AlbertClassifier`
    (`AlbertTextClassifier`) or `AlbertPretrainer` (`AlbertMaskedLM`, a fresh sentence-order
    head). `kind="backbone"` skips the task's head."""
    directory = os.fspath(directory)
    config = keras_hub_config(directory)
    task = _read_json(os.path.join(directory, "task.json"))
    task_class = task.get("class_name", "AlbertBackbone") if kind != "backbone" else None
    if task_class not in (None, *KERAS_HUB_CLASSES):
        raise ValueError(
            f"The keras-hub task must be one of {sorted(KERAS_HUB_CLASSES)}. "
            f"Received: class_name={task_class!r} in {os.path.join(directory, 'task.json')}"
        )
    own = KERAS_HUB_CLASSES.get(task_class, "backbone")
    backbone = AlbertBackbone.from_albert_config(config)
    if own == "pretrainer":
        model = AlbertPretrainer(backbone)
    elif own != "backbone":
        num_classes, head = _head_options(task_class, task["config"])
        model = get_task_type(own).build_model(backbone, num_classes, **head)
    else:
        model = backbone
    files = {"model": read_weights_file(os.path.join(directory, "model.weights.h5"))}
    if own != "backbone":
        files["task"] = read_weights_file(os.path.join(directory, "task.weights.h5"))
    table = keras_hub_name_table(config, head=None if own == "backbone" else own)
    # keras-hub's variable paths for the datasets the table expects; any other dataset keeps
    # its file path, and the checker lists it as unused.
    names = {weights_file_location(entry.source_name, config): entry.source_name for entry in table}
    if own == "pretrainer":
        # Entries with no tensor, so that the checker lets exactly these weights stay fresh.
        table += entries_for("sentence_order_head/dense", "(not in keras-hub) sentence_order_head")
    tensors = {
        names.get((file, path), f"{file}.weights.h5:{path}"): value
        for file, datasets in files.items()
        for path, value in datasets.items()
    }
    assign_from_table(
        model.weights,
        table,
        tensors,
        # A compiled task's optimizer scalars and the (variable-less) preprocessor.
        ignore_patterns=[r"^task\.weights\.h5:(optimizer|preprocessor)/"],
        allow_uninitialized=[r"^sentence_order_head/"] if own == "pretrainer" else [],
        source_description=f"keras-hub preset {directory}",
    )
    if own == "pretrainer":
        print(
            f"keras_albert: {directory} holds a keras-hub AlbertMaskedLM, which has no "
            "sentence-order head: the AlbertPretrainer's sentence_order_head is freshly "
            "initialized."
        )
    return model


def find_keras_hub_sentencepiece_model(directory: str | os.PathLike) -> str | None:
    """The preset's `assets/tokenizer/vocabulary.spm`, if there is one."""
    path = os.path.join(os.fspath(directory), TOKENIZER_ASSET)
    return path if os.path.isfile(path) else None


# --- Writing ---------------------------------------------------------------------------------


def _serialized(class_name: str, module: str, config: dict, dtype: str = "float32") -> dict:
    return {
        "module": f"keras_hub.src.models.albert.{module}",
        "class_name": class_name,
        "config": {
            "name": module,
            "trainable": True,
            "dtype": {
                "module": "keras",
                "class_name": "DTypePolicy",
                "config": {"name": dtype},
                "registered_name": None,
            },
            **config,
        },
        "registered_name": f"keras_hub>{class_name}",
    }


def _check_writable(config: AlbertConfig) -> None:
    for name, fixed in _KERAS_HUB_FIXED.items():
        if getattr(config, name) != fixed:
            raise ValueError(
                f"`{name}` must be {fixed!r} to write a keras-hub preset (keras-hub's ALBERT "
                f"has no other). Received: {name}={getattr(config, name)!r}"
            )


def _write_json(path: str, values: dict) -> None:
    with open(path, "w", encoding="utf-8") as file:
        json.dump(values, file, indent=4)


def write_keras_hub_preset(
    model,
    directory: str | os.PathLike,
    vocabulary: str | None = None,
    lowercase: bool = True,
    strip_accents: bool = True,
) -> None:
    """Writes `model` (an `AlbertBackbone`, `AlbertPretrainer`, or the head of a task type that
    keras-hub has: `AlbertClassifier`, `AlbertMaskedLM`) as a keras-hub preset directory that
    `keras_hub.models.AlbertBackbone.from_preset` (and `AlbertTextClassifier.from_preset` /
    `AlbertMaskedLM.from_preset` for the tasks) loads.

    Args:
        model: the model; an `AlbertPretrainer` becomes an `AlbertMaskedLM` (its
            sentence-order head is not written: keras-hub has none), as ours is.
        directory: the preset directory: new or empty (it is written beside, then renamed
            into place: a failure leaves nothing that loads).
        vocabulary: the tokenizer's SentencePiece model (keras-hub's ALBERT tokenizer has no
            WordPiece form: a WordPiece vocabulary is refused), written to
            `assets/tokenizer/vocabulary.spm` with its `tokenizer.json` (and for a task its
            `preprocessor.json`); without it keras-hub loads the model but no preprocessor.
        lowercase, strip_accents: the normalization the model was trained with
            (`AlbertTokenizer`'s), written into `vocabulary.spm`'s own normalizer.
    """
    kind = keras_hub_kind(model)
    if kind is None:
        raise ValueError(
            f"`model` must be one of {', '.join(sorted(_KINDS))} or fill_mask (the models "
            f"keras-hub has) to write a keras-hub preset. Received: model={type(model).__name__}"
        )
    head = None if kind == "backbone" else kind
    task_class = None if head is None else _KINDS[kind]
    backbone = model if head is None else model.backbone
    _check_writable(backbone.albert_config)
    tokenizer_model = None
    if vocabulary is not None:
        # The tokenizer (TF Text): a preset without a vocabulary is written without TensorFlow.
        with needs_tensorflow("write_keras_hub_preset(vocabulary=...)"):
            from keras_albert.text.sentencepiece_model import with_albert_normalization
            from keras_albert.text.tokenizer import AlbertTokenizer

        tokenizer = AlbertTokenizer(vocabulary)  # one clear error for a file of another kind
        if tokenizer.wordpiece:
            raise ValueError(
                "`vocabulary` must be a SentencePiece model for a keras-hub preset "
                "(keras-hub's ALBERT tokenizer is SentencePiece only). Received: a WordPiece "
                f"vocabulary, vocabulary={vocabulary!r}"
            )
        tokenizer_model = with_albert_normalization(
            tokenizer.serialized_model, lowercase, strip_accents
        )
    write_atomically(
        directory,
        lambda path: _write_preset(path, model, head, task_class, tokenizer_model),
        directory=True,
        name="directory",
    )


def _write_preset(
    directory: str, model, head: str | None, task_class: str | None, tokenizer_model: bytes | None
) -> None:
    """The preset's files in `directory`; `tokenizer_model` is the SentencePiece model to
    write, its normalization already in it."""
    backbone = model if head is None else model.backbone
    config = backbone.albert_config
    backbone_json = _serialized(
        "AlbertBackbone",
        "albert_backbone",
        {name: getattr(config, name) for name in _BACKBONE_FIELDS},
    )
    _write_json(os.path.join(directory, "config.json"), backbone_json)
    try:
        keras_hub_version = importlib.metadata.version("keras-hub")
    except importlib.metadata.PackageNotFoundError:
        keras_hub_version = None
    _write_json(
        os.path.join(directory, "metadata.json"),
        {
            "keras_version": keras.version(),
            "keras_hub_version": keras_hub_version,
            "parameter_count": backbone.count_params(),
            "date_saved": datetime.datetime.now().strftime("%Y-%m-%d@%H:%M:%S"),
            "tasks": ["MaskedLM", "TextClassifier"],
            "written_by": "keras_albert",
        },
    )

    table = keras_hub_name_table(config, head=head)
    tensors = read_from_table(model.weights, table)
    files = {"model": {}, "task": {}}
    group_names = {"model": {"vars": "albert_backbone"}, "task": {}}
    for entry in table:
        file, path = weights_file_location(entry.source_name, config)
        files[file][path] = tensors[entry.source_name]
        layer = entry.source_name.rsplit("/", 1)[0]
        group_names[file][path.rsplit("/", 1)[0]] = layer.rsplit("/", 1)[-1]
    write_weights_file(
        os.path.join(directory, "model.weights.h5"), files["model"], group_names["model"]
    )

    preprocessor_json = None
    if tokenizer_model is not None:
        tokenizer_json = _serialized(
            "AlbertTokenizer",
            "albert_tokenizer",
            {
                "config_file": "tokenizer.json",
                "proto": None,
                "sequence_length": None,
                "add_bos": False,
                "add_eos": False,
            },
            dtype="int32",
        )
        _write_json(os.path.join(directory, "tokenizer.json"), tokenizer_json)
        asset = os.path.join(directory, TOKENIZER_ASSET)
        os.makedirs(os.path.dirname(asset), exist_ok=True)
        with open(asset, "wb") as file:
            file.write(tokenizer_model)
        if head is not None:
            class_name, module = _PREPROCESSORS[task_class]
            preprocessor_json = _serialized(
                class_name,
                module,
                {
                    "tokenizer": tokenizer_json,
                    "config_file": "preprocessor.json",
                    "sequence_length": config.max_sequence_length,
                    "truncate": "round_robin",
                },
            )
            _write_json(os.path.join(directory, "preprocessor.json"), preprocessor_json)

    if head is None:
        return
    task_config = {"backbone": backbone_json, "preprocessor": preprocessor_json}
    task_config.update(_task_config(task_class, model))
    task_module = _TASK_MODULES[task_class]
    task_json = _serialized(task_class, task_module, task_config)
    del task_json["config"]["trainable"], task_json["config"]["dtype"]
    _write_json(os.path.join(directory, "task.json"), task_json)
    files["task"]["optimizer/vars/0"] = np.array(0, "int64")
    files["task"]["optimizer/vars/1"] = np.array(
        _TASK_OPTIMIZER_LEARNING_RATES[task_class], "float32"
    )
    write_weights_file(
        os.path.join(directory, "task.weights.h5"),
        files["task"],
        {**group_names["task"], "vars": task_module, "optimizer/vars": "adam"},
    )
