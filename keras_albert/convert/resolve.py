"""The one answer to "what is a checkpoint": every source a keras_albert model can start from.

Pretraining init, fine-tuning init, the export and the converter all call `load_checkpoint`.
A source (`ACCEPTED_FORMS`; no network access but for a hub name) is:

- a preset name (`keras_albert.PRESETS`): fresh weights of that architecture;
- a config JSON file (ours, the original `albert_config.json` or HF `config.json`; a `.json`
  name, or any file holding a JSON object): fresh weights;
- a `.keras` file of an `AlbertBackbone`, `AlbertPretrainer` or `AlbertClassifier`;
- a `.weights.h5` file: weights only, so `config=` must give the architecture;
- a Hugging Face directory (`config.json` + `model.safetensors` or `pytorch_model.bin`);
- a format a task type owns (`TaskType.checkpoint_format`): a sentence-transformers directory
  (`modules.json`: ALBERT → Pooling → optional Normalize) is an `AlbertTextEmbedder` with its
  pooling, unless `model=` asks for another kind;
- a keras-hub preset directory (`config.json` of a keras-hub `AlbertBackbone`,
  `model.weights.h5`, optionally `task.json` of an `AlbertTextClassifier` or `AlbertMaskedLM`);
- an original TF1 directory (`albert_config.json` + `model.ckpt-*`, or a TF-Hub module's
  `variables/`) or a checkpoint prefix (`model.ckpt-100`, with `config=`);
- a TF-Hub / Kaggle encoder SavedModel (Model Garden's `AlbertEncoder` interface, or our
  `export_saved_model.py --format tfhub` export; `keras_albert.convert.model_garden`);
- a training output directory: `pretrainer.keras` (or its one `.keras` file, e.g. fine-tuning's
  `best.keras`), or else the latest `checkpoints/ckpt-N` of an unfinished pretraining run, with
  the architecture recorded in its `run.json` / `summary.json` (or `config=`);
- a hub name (`keras_albert.convert.hubs`): `hf://owner/name[@revision]` or
  `kaggle://owner/model/framework/variation[/version]`, downloaded into the hub library's own
  cache and read as the directory it becomes (any of the directories above).

`model=` one of `MODEL_KINDS` ("backbone", "pretrainer" or a task type's name: "classification",
"question_answering", ...) asks for a kind: a backbone is taken out of a
pretrainer or classifier; a pretrainer or classifier built around a checkpoint without those
heads gets fresh ones, and one printed line says so. `.keras` files are loaded without their
training state (`compile=False`): the weights, not the optimizer.
"""

import contextlib
import json
import os
import sys
import zipfile

import h5py
import keras

from keras_albert.config import AlbertConfig, get_preset
from keras_albert.convert.formats import (
    FORMATS,
    RUN_FILES,
    TRAINING_CHECKPOINTS,
    detect_format,
    latest_training_checkpoint,
    training_output_model,
)
from keras_albert.convert.hubs import local_source
from keras_albert.convert.huggingface import (
    HF_ARCHITECTURES,
    load_hf_weights,
    read_hf_directory,
)
from keras_albert.convert.keras_hub import (
    keras_hub_config,
    load_keras_hub_preset,
)
from keras_albert.convert.model_garden import load_tfhub_saved_model, tfhub_saved_model_config
from keras_albert.convert.tf1 import load_tf1_weights, read_tf1_checkpoint, tf1_head
from keras_albert.lazy import require_tensorflow
from keras_albert.models import (
    AlbertBackbone,
    AlbertPretrainer,
)
from keras_albert.tasks.registry import (
    BASE_MODEL_KINDS,
    TASK_TYPES,
    check_model_kind,
    get_task_type,
    model_kind_of,
)
from keras_albert.training.run_records import read_record
from keras_albert.validation import require_int, require_one_of


class CorruptCheckpointError(ValueError):
    """A checkpoint file that exists but cannot be read: cut short by an interrupted copy or
    write, or not the format its name says."""


def _read_errors() -> tuple:
    """What a damaged file raises: TensorFlow's errors only where TensorFlow read it."""
    errors = (OSError, zipfile.BadZipFile, IndexError)
    tf = sys.modules.get("tensorflow")
    return errors if tf is None else (*errors, tf.errors.OpError)


@contextlib.contextmanager
def _reading(path: str, what: str):
    """Turns what a damaged file raises into one error naming it: h5py's `OSError` ("truncated
    file"), zipfile's `BadZipFile`, TensorFlow's `DataLossError` ("not an sstable") or, for a
    checkpoint data file cut short, `IndexError` ("Read less bytes than requested")."""
    try:
        yield
    except _read_errors() as error:
        if isinstance(error, FileNotFoundError):
            raise
        detail = " ".join(str(getattr(error, "message", None) or error).split())
        raise CorruptCheckpointError(
            f"`source` must be a complete {what}: {path} is truncated or corrupt ({detail}). "
            f"Received: source={path!r}"
        ) from None


def resolve_config(
    source: str | os.PathLike | AlbertConfig, config: AlbertConfig | str | None = None
) -> AlbertConfig:
    """The architecture of `source` (any `load_checkpoint` source, or an `AlbertConfig`),
    without loading weights where the source says it in a file. `config` wins when given."""
    if isinstance(source, AlbertConfig):
        return source
    if config is not None:
        return config if isinstance(config, AlbertConfig) else resolve_config(config)
    source = local_source(source)
    form = detect_format(source)
    if form == "preset":
        return get_preset(source)
    if form == "config":
        return AlbertConfig.from_json(source)
    if form == "keras_hub":
        return keras_hub_config(source)
    if form == "hf":
        return AlbertConfig.from_json(os.path.join(source, "config.json"))
    if form == "tf1" and os.path.isdir(source):
        return AlbertConfig.from_json(os.path.join(source, "albert_config.json"))
    if form == "tfhub":
        return tfhub_saved_model_config(source)
    if form == "keras":
        return _keras_file_config(source)
    if form == "training_output":
        keras_file = training_output_model(source)
        return _keras_file_config(keras_file) if keras_file else _recorded_config(source)
    raise ValueError(
        f"`config` must be given for {source!r}: a {form} checkpoint holds weights, not the "
        f"architecture. Received: config=None"
    )


def load_checkpoint(
    source: str | os.PathLike,
    format: str = "auto",
    model: str | None = None,
    config: AlbertConfig | str | None = None,
    num_classes: int | None = None,
):
    """The model a checkpoint holds (or the kind asked for), with its weights.

    Args:
        source: a preset name or a path, in one of `ACCEPTED_FORMS` (the module docstring).
        format: one of `FORMATS`; "auto" tells it from `source`.
        model: one of `MODEL_KINDS`; `None` is the checkpoint's own
            (its HF architecture, the heads its tensors carry, the saved model; a backbone
            for a preset or config).
        config: the architecture (an `AlbertConfig`, a preset name or a config JSON path),
            for a `.weights.h5` file, a TF1 prefix, or a pretraining output without a record.
        num_classes: for a classifier (classes) or token classifier (tags) whose checkpoint
            does not say.
    """
    require_one_of("format", format, FORMATS)
    check_model_kind(model)
    require_int("num_classes", num_classes, 1, optional=True)
    source = local_source(source)
    if format == "auto":
        owned = _task_format(source)
        if owned is not None:  # a Hugging Face directory with a task type's files beside it
            task_type, hf_directory, head = owned
            backbone = _load_hf(hf_directory, "backbone", None)
            if model in (None, task_type.name):
                return task_type.build_model(backbone, num_classes, **head)
            return _as_kind(backbone, model, num_classes, source)
        format = detect_format(source)
    if format in ("preset", "config"):
        loaded = _build(model or "backbone", resolve_config(source), num_classes)
    elif format == "keras":
        loaded = _load_keras(source)
    elif format == "weights":
        loaded = _load_weights_file(source, resolve_config(source, config), num_classes)
    elif format == "hf":
        loaded = _load_hf(source, model, num_classes)
    elif format == "keras_hub":
        loaded = load_keras_hub_preset(source, model)
    elif format == "tf1":
        loaded = _load_tf1(source, model, config, num_classes)
    elif format == "tfhub":
        given = None if config is None else resolve_config(source, config)
        loaded = load_tfhub_saved_model(source, model, given)
    else:
        loaded = _load_training_output(source, config)
    return _as_kind(loaded, model, num_classes, source)


def _task_format(source: str):
    """`(task type, Hugging Face directory, head options)` where `source` is in the checkpoint
    format of a task type (`TaskType.checkpoint_format`: a sentence-transformers directory),
    else None."""
    if not os.path.isdir(source):
        return None
    for task_type in TASK_TYPES:
        if task_type.checkpoint_format is not None:
            read = task_type.checkpoint_format.read(source)
            if read is not None:
                return (task_type, *read)
    return None


def _build(kind: str, config: AlbertConfig, num_classes: int | None, **head):
    return _around(AlbertBackbone.from_albert_config(config), kind, num_classes, **head)


def _around(backbone: AlbertBackbone, kind: str, num_classes: int | None, **head):
    """A model of `kind` around `backbone`, its head fresh (`head`: the head's own options,
    e.g. `answerability` or tag `labels`)."""
    if kind == "backbone":
        return backbone
    if kind == "pretrainer":
        return AlbertPretrainer(backbone)
    task_type = get_task_type(kind)
    if task_type.count is not None and num_classes is None:
        raise ValueError(
            f"`num_classes` must be given to build a {kind} model (the checkpoint has no such "
            "head). Received: num_classes=None"
        )
    return task_type.build_model(backbone, num_classes, **head)


def _as_kind(loaded, kind: str | None, num_classes: int | None, source: str):
    """`loaded`, or its backbone, or a new model around its backbone with fresh heads."""
    own = model_kind_of(loaded)
    if kind is None or kind == own:
        counted = None if own in BASE_MODEL_KINDS else get_task_type(own).count
        if counted and num_classes not in (None, getattr(loaded, counted)):
            raise ValueError(
                f"`num_classes` must match the {own} model in {source!r} "
                f"({getattr(loaded, counted)}). Received: num_classes={num_classes}"
            )
        return loaded
    backbone = loaded if own == "backbone" else loaded.backbone
    if kind == "backbone":
        return backbone
    if kind != "pretrainer":
        from_model = get_task_type(kind).from_model
        shared = from_model(loaded) if from_model else None
        if shared is not None:  # a head made of the loaded model's own weights
            return shared
    model = _around(backbone, kind, num_classes)
    print(
        f"keras_albert: {source} holds an {type(loaded).__name__}; the "
        f"{type(model).__name__}'s {'heads are' if kind == 'pretrainer' else 'head is'} "
        "freshly initialized."
    )
    return model


# --- Keras files ----------------------------------------------------------------------------


def _load_keras(path: str):
    # Keras says "File not found" for a `.keras` file whose zip directory is cut off.
    if not zipfile.is_zipfile(path):
        raise CorruptCheckpointError(
            f"`source` must be a complete .keras file (a zip archive): {path} is truncated or "
            f"corrupt, or not a .keras file. Received: source={path!r}"
        )
    # compile=False: the optimizer of a training output (Lamb, AdamW) is not what a caller
    # starting from these weights wants, and it spares restoring it.
    with _reading(path, ".keras file"):
        return keras.models.load_model(path, compile=False)


def _keras_file_config(path: str) -> AlbertConfig:
    """The backbone's architecture from a `.keras` file's `config.json`, without its weights."""
    with _reading(path, ".keras file"), zipfile.ZipFile(path) as archive:
        saved = json.loads(archive.read("config.json"))
    backbone = _find_backbone_config(saved)
    if backbone is None:
        raise ValueError(f"`source` must hold an AlbertBackbone. Received: source={path!r}")
    fields = AlbertConfig.__dataclass_fields__
    return AlbertConfig.from_dict({k: v for k, v in backbone.items() if k in fields})


def _find_backbone_config(saved):
    if isinstance(saved, dict):
        if saved.get("class_name") == "AlbertBackbone":
            return saved["config"]
        children = saved.values()
    elif isinstance(saved, list):
        children = saved
    else:
        return None
    for child in children:
        found = _find_backbone_config(child)
        if found is not None:
            return found
    return None


def _load_weights_file(path: str, config: AlbertConfig, num_classes: int | None):
    """A model of the kind the `.weights.h5` file was saved from, with its weights."""
    # Keras keys a model's layers by their class (snake case), not their name: a pretrainer
    # holds `masked_lm_head`, a classifier `albert_backbone` beside its `dense` head.
    with _reading(path, ".weights.h5 file"), h5py.File(path, "r") as weights:
        layers = weights.get("layers", {})
        if "masked_lm_head" in layers:
            kind = "pretrainer"
        elif "albert_backbone" in layers and "dense" in layers:
            kind = "classification"
            # The head's kernel: (hidden_dim, num_classes).
            num_classes = int(layers["dense"]["vars"]["0"].shape[1])
        else:
            kind = "backbone"
    model = _build(kind, config, num_classes)
    with _reading(path, ".weights.h5 file"):
        model.load_weights(path)
    return model


# --- Training output directories -------------------------------------------------------------


def _recorded_config(directory: str) -> AlbertConfig:
    """The architecture a pretraining run recorded: `config` (the AlbertConfig's fields, or a
    config path) or `preset` in run.json, else summary.json's `config`."""
    for name in RUN_FILES:
        recorded = read_record(directory, name) or {}
        if isinstance(recorded.get("config"), dict):
            return AlbertConfig.from_dict(recorded["config"])
        for key in ("config", "preset"):
            if isinstance(recorded.get(key), str):
                return resolve_config(recorded[key])
    raise ValueError(
        f"`config` must be given for {directory!r}: neither {' nor '.join(RUN_FILES)} records "
        "the architecture of its checkpoints. Received: config=None"
    )


def _load_training_output(directory: str, config: AlbertConfig | str | None):
    keras_file = training_output_model(directory)
    if keras_file is not None:
        return _load_keras(keras_file)
    checkpoint = latest_training_checkpoint(directory)
    config = resolve_config(config) if config is not None else _recorded_config(directory)
    model = AlbertPretrainer(AlbertBackbone.from_albert_config(config))
    with _reading(checkpoint, "TensorFlow checkpoint (its .index and .data files)"):
        tf = require_tensorflow(TRAINING_CHECKPOINTS)
        status = tf.train.Checkpoint(model=model).restore(checkpoint)
    status.expect_partial()  # the optimizer's slots and step are not wanted here
    status.assert_existing_objects_matched()  # but every weight of the model is
    print(f"keras_albert: loaded {checkpoint} (no pretrainer.keras in {directory}).")
    return model


# --- Foreign checkpoints ---------------------------------------------------------------------


def _load_hf(path: str, kind: str | None, num_classes: int | None):
    # safetensors' SafetensorError (a cut file) is none of the types `_reading` knows.
    try:
        with _reading(path, "Hugging Face directory"):
            hf_config, tensors = read_hf_directory(path)
    except Exception as error:
        if type(error).__name__ != "SafetensorError":
            raise
        raise CorruptCheckpointError(
            f"`source` must be a complete Hugging Face directory: {path}/model.safetensors is "
            f"truncated or corrupt ({error}). Received: source={path!r}"
        ) from None
    architecture = (hf_config.get("architectures") or ["AlbertModel"])[0]
    require_one_of("architectures[0]", architecture, tuple(HF_ARCHITECTURES))
    own = HF_ARCHITECTURES[architecture]
    if kind == "backbone":
        own = "backbone"  # the heads are skipped, not loaded and dropped
    head = {}
    if own not in BASE_MODEL_KINDS:
        task_type = get_task_type(own)
        names = task_type.checkpoint_names
        if task_type.count is not None:
            num_classes = names.hf_head.count(tensors)  # classifier.weight: (num_labels, hidden)
        head = dict(names.hf_head.options)
        if names.hf_head_options is not None:
            head.update(names.hf_head_options(hf_config))  # a token classifier's tag names
    model = _build(own, AlbertConfig.from_hf_config(hf_config), num_classes, **head)
    # MaskedLM has neither the pooler nor the SOP head: they keep their initialization.
    allow_uninitialized = [r"^pooler/", r"^sentence_order_head/"]
    try:
        fresh = load_hf_weights(
            model,
            tensors,
            allow_uninitialized=allow_uninitialized if architecture == "AlbertForMaskedLM" else [],
            ignore_heads=own == "backbone",
        )
    except ValueError as error:
        raise ValueError(f"{path}: {error}") from None  # which directory lacks the tensors
    if fresh:
        print(
            f"keras_albert: {len(fresh)} weights are not in {path} and keep their fresh "
            f"initialization: {', '.join(sorted(fresh))}"
        )
    return model


def _load_tf1(path: str, kind: str | None, config, num_classes: int | None):
    if os.path.isdir(path) and config is None:
        config = os.path.join(path, "albert_config.json")
    if config is None:
        raise ValueError(
            f"A TF1 checkpoint prefix needs `config` (its albert_config.json): `config` must "
            f"be given. Received: source={path!r}, config=None"
        )
    with _reading(path, "TensorFlow checkpoint (its .index and .data files)"):
        tensors = read_tf1_checkpoint(path)
    # run_race's head has run_classifier's names: the kind asked for tells them apart.
    own, original_head = tf1_head(tensors, kind)
    if kind == "backbone":
        own = "backbone"  # the heads are skipped, not loaded and dropped
    head = {}
    if own not in BASE_MODEL_KINDS:
        if get_task_type(own).count is not None:
            num_classes = original_head.count(tensors)  # output_weights: (num_classes, hidden)
        head = dict(original_head.options)
    model = _build(own, resolve_config(config), num_classes, **head)
    load_tf1_weights(model, tensors)
    return model
