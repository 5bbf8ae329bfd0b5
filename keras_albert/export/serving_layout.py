"""TF Serving's directory layout, written so the server never sees half a version.

```
saved_models/                       base directory
  models.config                     model_config_list over every model below
  batching_parameters.txt           for --enable_batching --batching_parameters_file
  <name>/<version>/                 one SavedModel per integer version
    saved_model.pb, variables/, assets/sentencepiece.model
    assets.extra/tf_serving_warmup_requests
```

`tensorflow_model_server` polls `<name>/` and loads any new integer-named directory. A version
is therefore written under a hidden, non-integer name inside `<name>/` (same filesystem) and
renamed to its number only when complete; a failure removes it. The next number is chosen
automatically, and an existing version is never overwritten.
"""

from __future__ import annotations

import errno
import itertools
import os
from collections.abc import Callable, Sequence

import keras
import tensorflow as tf
from google.protobuf import text_format
from tensorflow_serving.apis import prediction_log_pb2, regression_pb2
from tensorflow_serving.config import model_server_config_pb2

from keras_albert.directories import require_directory
from keras_albert.export.modules import serving_module
from keras_albert.export.spec import (
    DEFAULT_WARMUP_TEXTS,
    BatchingParameters,
    ExportSpec,
    resolve_spec,
)
from keras_albert.serving.requests import (
    classify_request,
    predict_request,
    text_inputs,
)
from keras_albert.serving.saved_model import (
    SERVE_EXAMPLES,
    SERVE_TOKEN_IDS,
    SERVING_DEFAULT,
    AlbertServingModule,
)
from keras_albert.text.files import apply_umask, temporary_sibling, write_text_atomically
from keras_albert.text.tokenizer import AlbertTokenizer
from keras_albert.validation import require_int, require_positive_int

WARMUP_FILE = os.path.join("assets.extra", "tf_serving_warmup_requests")
MAX_WARMUP_RECORDS = 1000  # TF Serving reads at most this many warmup records
MODELS_CONFIG = "models.config"
BATCHING_PARAMETERS = "batching_parameters.txt"
DEFAULT_WARMUP_BATCH_SIZES = (1, 2, 4, 8, 16, 32)


# ------------------------------------------------------------------------------------------
# Versions.


def existing_versions(model_dir: str | os.PathLike) -> list[int]:
    """The integer versions under `model_dir`, ascending (what the server would load)."""
    model_dir = os.fspath(model_dir)
    if not os.path.isdir(model_dir):
        return []
    return sorted(
        int(entry)
        for entry in os.listdir(model_dir)
        if entry.isdigit() and os.path.isdir(os.path.join(model_dir, entry))
    )


def next_version(model_dir: str | os.PathLike) -> int:
    """One more than the highest existing version, or 1."""
    versions = existing_versions(model_dir)
    return versions[-1] + 1 if versions else 1


def write_version(
    model_dir: str | os.PathLike,
    write: Callable[[str], None],
    version: int | None = None,
) -> str:
    """Calls `write(directory)` on a hidden directory, then renames it to `<model_dir>/<version>`.

    Returns the version's path. If `write` fails (or the process dies) no integer-named
    directory appears; the hidden one is removed on an exception. Without `version`, an
    exporter that another one (of the same `model_dir`) beats to the number it chose takes the
    next free one. The version directory gets the process umask's permissions.
    """
    model_dir = os.fspath(model_dir)
    require_directory("model_dir", model_dir)
    os.makedirs(model_dir, exist_ok=True)
    chosen = version is None
    if chosen:
        version = next_version(model_dir)
    require_int("version", version, 0)
    _require_free(model_dir, version)
    # A leading dot and a non-integer name: the server's version scan skips it.
    with temporary_sibling(
        os.path.join(model_dir, str(version)), directory=True, prefix=f".partial-{version}-"
    ) as temporary:
        write(temporary)
        apply_umask(temporary)  # mkdtemp's 0o700 would hide the version from the server's user
        while True:
            final = os.path.join(model_dir, str(version))
            try:
                os.rename(temporary, final)
                return final
            except OSError as error:
                # Another exporter renamed its version to this number since it was chosen
                # (a directory renamed onto a non-empty one: ENOTEMPTY, or EEXIST).
                if error.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                    raise
                if not chosen:
                    _require_free(model_dir, version)
                    raise
                version = next_version(model_dir)


def _require_free(model_dir: str, version: int) -> None:
    final = os.path.join(model_dir, str(version))
    if os.path.exists(final):
        raise FileExistsError(
            f"Version {version} already exists at {final!r}; versions are never overwritten "
            f"(next free version: {next_version(model_dir)})"
        )


# ------------------------------------------------------------------------------------------
# Warmup.


def warmup_records(
    module: AlbertServingModule,
    model_name: str,
    texts: Sequence[str | bytes] = DEFAULT_WARMUP_TEXTS,
    text_pairs: Sequence[str | bytes] | None = None,
    batch_sizes: Sequence[int] = DEFAULT_WARMUP_BATCH_SIZES,
) -> list[prediction_log_pb2.PredictionLog]:
    """Warmup requests for every signature of `module`, one per batch size each.

    `texts` (and `text_pairs` for a pair model) are cycled to fill each batch; one text of
    `max_sequence_length` words is added so the longest shape is warmed too.
    """
    if hasattr(module, "warmup_inputs"):  # a task module: its own requests
        return [
            _predict_log(model_name, inputs, signature)
            for signature, inputs in module.warmup_inputs()
        ]
    texts = list(texts) + [" ".join(["word"] * module.max_sequence_length)]
    if module.text_pair:
        text_pairs = list(text_pairs if text_pairs is not None else texts[: len(texts) - 1])
        text_pairs.append(texts[-1])
        if len(text_pairs) != len(texts):
            raise ValueError(
                f"`text_pairs` must be as long as `texts` ({len(texts) - 1}). "
                f"Received: {len(text_pairs) - 1} text_pairs"
            )
    elif text_pairs is not None:
        raise ValueError(
            "`text_pairs` must be None: the model takes one text (text_pair=False). "
            f"Received: text_pairs={text_pairs!r}"
        )
    if not batch_sizes:
        raise ValueError(f"`batch_sizes` must not be empty. Received: batch_sizes={batch_sizes!r}")
    for size in batch_sizes:
        require_positive_int("batch_sizes", size)

    records = []
    for batch_size in batch_sizes:
        batch = list(itertools.islice(itertools.cycle(texts), batch_size))
        pairs = (
            list(itertools.islice(itertools.cycle(text_pairs), batch_size))
            if module.text_pair
            else None
        )
        inputs = text_inputs(batch, pairs)
        records.append(_predict_log(model_name, inputs, SERVING_DEFAULT))

        packed = module.pack(*(tf.constant(values) for values in inputs.values()))
        token_inputs = {name: value.numpy() for name, value in packed.items()}
        records.append(_predict_log(model_name, token_inputs, SERVE_TOKEN_IDS))

        if SERVE_EXAMPLES in module.endpoints:
            request = classify_request(model_name, batch, pairs)
            if module.task == "regression":
                records.append(
                    prediction_log_pb2.PredictionLog(
                        regress_log=prediction_log_pb2.RegressLog(
                            request=regression_pb2.RegressionRequest(
                                model_spec=request.model_spec, input=request.input
                            )
                        )
                    )
                )
            else:
                records.append(
                    prediction_log_pb2.PredictionLog(
                        classify_log=prediction_log_pb2.ClassifyLog(request=request)
                    )
                )
    if len(records) > MAX_WARMUP_RECORDS:
        raise ValueError(
            f"{len(records)} warmup records; TF Serving reads at most {MAX_WARMUP_RECORDS}"
        )
    return records


def _predict_log(model_name: str, inputs: dict, signature_name: str):
    return prediction_log_pb2.PredictionLog(
        predict_log=prediction_log_pb2.PredictLog(
            request=predict_request(model_name, inputs, signature_name)
        )
    )


def write_warmup_requests(
    export_dir: str | os.PathLike, records: Sequence[prediction_log_pb2.PredictionLog]
) -> str:
    """Writes `records` to `<export_dir>/assets.extra/tf_serving_warmup_requests` (TFRecord)."""
    if len(records) > MAX_WARMUP_RECORDS:
        raise ValueError(
            f"{len(records)} warmup records; TF Serving reads at most {MAX_WARMUP_RECORDS}"
        )
    path = os.path.join(os.fspath(export_dir), WARMUP_FILE)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with tf.io.TFRecordWriter(path) as writer:
        for record in records:
            writer.write(record.SerializeToString())
    return path


# ------------------------------------------------------------------------------------------
# Server configuration files.


def write_models_config(base_dir: str | os.PathLike, base_path_prefix: str | None = None) -> str:
    """Writes `<base_dir>/models.config` listing every model directory with a version.

    `base_path_prefix` replaces `base_dir` in the paths the server reads (e.g. "/models" when
    `base_dir` is mounted there in the docker image); by default the absolute `base_dir`.
    """
    base_dir = os.fspath(base_dir)
    prefix = base_path_prefix if base_path_prefix is not None else os.path.abspath(base_dir)
    config = model_server_config_pb2.ModelServerConfig()
    for name in sorted(os.listdir(base_dir)):
        if name.startswith(".") or not existing_versions(os.path.join(base_dir, name)):
            continue
        model = config.model_config_list.config.add()
        model.name = name
        model.base_path = f"{prefix.rstrip('/')}/{name}"
        model.model_platform = "tensorflow"
        model.model_version_policy.latest.num_versions = 1
    path = os.path.join(base_dir, MODELS_CONFIG)
    write_text_atomically(path, text_format.MessageToString(config))
    return path


def write_batching_parameters(
    base_dir: str | os.PathLike, parameters: BatchingParameters | None = None
) -> str:
    """Writes `<base_dir>/batching_parameters.txt`."""
    parameters = parameters if parameters is not None else BatchingParameters()
    path = os.path.join(os.fspath(base_dir), BATCHING_PARAMETERS)
    write_text_atomically(path, parameters.to_text())
    return path


# ------------------------------------------------------------------------------------------
# One call.


def require_model_name(name) -> None:
    """A served model's name is its directory under the base directory: a plain name."""
    if not isinstance(name, str) or not name or name.startswith(".") or os.sep in name:
        raise ValueError(f"`name` must be a plain directory name. Received: name={name!r}")


def model_directory(base_dir: str | os.PathLike, name: str) -> str:
    """`<base_dir>/<name>`, where every export writes, once both are checked (before a
    checkpoint is read or a module built)."""
    require_model_name(name)
    require_directory("base_dir", base_dir)
    return os.path.join(os.fspath(base_dir), name)


def export_for_serving(
    model: keras.Model,
    tokenizer: AlbertTokenizer | None = None,
    base_dir: str | os.PathLike = "saved_models",
    name: str = "albert",
    spec: ExportSpec | None = None,
    **fields,
) -> str:
    """Exports `model` as version `spec.version` (default: the next) of `<base_dir>/<name>/`.

    Writes the SavedModel that `spec` describes (`serving_module`; `fields`: the spec's fields,
    `resolve_spec`) and its warmup requests atomically, then `models.config` and
    `batching_parameters.txt` in `base_dir`. Returns the version's path. A task model's warmup
    requests are its module's own (`warmup_texts` are for text classifiers). Without
    `tokenizer`, the tokenizer of the preprocessor `model` carries (`from_preset`).
    """
    spec = resolve_spec(spec, fields, "savedmodel")
    model_dir = model_directory(base_dir, name)  # before the module is built
    module = serving_module(model, tokenizer, spec)
    records = warmup_records(module, name, spec.warmup_texts, spec.warmup_text_pairs)

    def write(directory: str) -> None:
        module.save(directory)
        write_warmup_requests(directory, records)

    path = write_version(model_dir, write, spec.version)
    write_models_config(base_dir, spec.base_path_prefix)
    write_batching_parameters(base_dir, spec.batching)
    return path


def read_warmup_texts(path: str | os.PathLike) -> tuple[list[str], list[str]]:
    """Texts and pairs from a UTF-8 file, one example a line, `text<TAB>text_pair`.

    A line without a TAB has an empty pair; blank lines are skipped.
    """
    texts, pairs = [], []
    with open(path, encoding="utf-8") as file:
        for line in file:
            if not line.strip():
                continue
            text, _, pair = line.rstrip("\n").partition("\t")
            texts.append(text)
            pairs.append(pair)
    if not texts:
        raise ValueError(
            f"`warmup_file` must hold at least one text. Received: warmup_file={os.fspath(path)!r}"
        )
    return texts, pairs
