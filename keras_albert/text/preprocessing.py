"""What every task preprocessor shares: a Keras layer that holds the tokenizer (saved with the
model as an asset) and runs in `tf.data`, and the mapping of `fit`/`predict`/`evaluate`'s
inputs through it, as keras-hub's `Task` does.

A task model that carries a preprocessor (`model.preprocessor`, `keras_albert.models.task`)
takes raw inputs (strings, pairs of strings) in `fit`, `predict` and `evaluate`: they become a
`tf.data.Dataset` (`preprocessed_dataset`): a dataset of raw batches mapped through the
preprocessor, arrays and lists preprocessed once before the first pass; its graph is the
tokenizer's and the packer's, the same ops the string-in SavedModel runs. Where TensorFlow is
not installed (JAX, PyTorch), a preprocessor with a Python path (`PYTHON_PATH`) holds the
tokenizer's Python half (`PythonTokenizer`) and is called on the raw inputs themselves.
"""

from __future__ import annotations

import os

import keras

from keras_albert._startup import tensorflow_installed
from keras_albert.lazy import require_tensorflow
from keras_albert.text.python_tokenizer import PythonTokenizer
from keras_albert.validation import require_int

# The file, in the layer's assets directory of a `.keras` file, that holds the tokenizer's
# SentencePiece model or WordPiece vocabulary (its bytes, as given).
VOCABULARY_ASSET = "vocabulary"
# Rows per batch where `fit`/`predict`/`evaluate` get arrays and no `batch_size` (Keras's own).
DEFAULT_BATCH_SIZE = 32


class TokenizerPreprocessor(keras.layers.Layer):
    """Base of the task preprocessors: a layer holding an `AlbertTokenizer` and a packing
    length, called in `tf.data` (on string tensors) as `preprocessor(x, y, sample_weight)` and
    returning `keras.utils.pack_x_y_sample_weight(inputs, y, sample_weight)`, where `x` is a
    `(batch,)` string tensor or, up to `MAX_SEGMENTS`, a tuple of them packed into one sequence.

    Saved in a `.keras` file with its model: the config holds the tokenizer's normalization
    options, the assets the vocabulary's bytes (`VOCABULARY_ASSET`).

    Args:
        tokenizer: an `AlbertTokenizer`.
        sequence_length: the packed length (every batch is padded to it).
    """

    # Segments a row of `x` may hold: 1 (`x` a string tensor), or 2 (a tuple of two: sentence
    # pairs packed into one sequence, as a classifier takes them).
    MAX_SEGMENTS = 1
    # Whether the preprocessor also runs in Python on raw inputs (lists of texts), where
    # TensorFlow is not installed: then it holds a `PythonTokenizer`.
    PYTHON_PATH = False

    def __init__(self, tokenizer: PythonTokenizer | None = None, sequence_length=512, **kwargs):
        tokenizer_config = kwargs.pop("tokenizer_config", None)
        super().__init__(**kwargs)
        # Strings in, ragged tensors inside: no conversion of the inputs, no autocasting.
        self._convert_input_args = False
        self._allow_non_tensor_positional_args = True
        require_int("sequence_length", sequence_length, minimum=3)
        if tokenizer is not None and not isinstance(tokenizer, PythonTokenizer):
            raise ValueError(
                f"`tokenizer` must be an AlbertTokenizer. Received: tokenizer={tokenizer!r}"
            )
        self.sequence_length = sequence_length
        # From a config, the tokenizer comes with the assets (`load_assets`).
        self._tokenizer_config = tokenizer_config
        self._set_tokenizer(tokenizer)
        self.built = True

    def _set_tokenizer(self, tokenizer: PythonTokenizer | None) -> None:
        self._tokenizer = tokenizer
        # The packer is TensorFlow's: an `AlbertTokenizer` has one.
        packer = getattr(tokenizer, "packer", None)
        self._packer = None if packer is None else packer(self.sequence_length)

    @property
    def tokenizer(self) -> PythonTokenizer:
        if self._tokenizer is None:
            raise ValueError(
                "The preprocessor has no tokenizer yet: one made from a config gets it from "
                "its saved assets (`keras.saving.load_model`)."
            )
        return self._tokenizer

    def call(self, x, y=None, sample_weight=None):
        segments = list(x) if isinstance(x, (tuple, list)) else [x]
        if not 1 <= len(segments) <= self.MAX_SEGMENTS:
            expected = (
                "one string tensor, a text per row (embed the texts of a pair one column at a time)"
                if self.MAX_SEGMENTS == 1
                else f"a string tensor or a tuple of up to {self.MAX_SEGMENTS} (sentence pairs)"
            )
            raise ValueError(f"`x` must be {expected}. Received: {len(segments)} segments")
        return keras.utils.pack_x_y_sample_weight(self.pack(segments), y, sample_weight)

    def pack(self, segments: list) -> dict:
        """Model inputs of one or two `(batch,)` string tensors: token ids of each segment,
        packed to `sequence_length` (int32 `token_ids`, `segment_ids`, `padding_mask`)."""
        tf = require_tensorflow(type(self).__name__)
        ids = tuple(self.tokenizer(tf.convert_to_tensor(segment)) for segment in segments)
        packed = self._packer(ids)
        return {
            "token_ids": packed["token_ids"],
            "segment_ids": packed["segment_ids"],
            "padding_mask": tf.cast(packed["padding_mask"], tf.int32),
        }

    def serving_options(self) -> dict:
        """Arguments of the task's string-in serving module that make its features this
        preprocessor's, where an export leaves them unset; none by default."""
        return {}

    def _tokenizer_options(self) -> dict:
        if self._tokenizer is None:
            return dict(self._tokenizer_config or {})
        return {
            "lowercase": self._tokenizer.lowercase,
            "strip_accents": self._tokenizer.strip_accents,
            "normalize_quotes": self._tokenizer.normalize_quotes,
            "wordpiece": self._tokenizer.wordpiece,
        }

    def get_config(self):
        config = super().get_config()
        config.update(
            {"sequence_length": self.sequence_length, "tokenizer_config": self._tokenizer_options()}
        )
        return config

    def save_assets(self, dir_path):
        with open(os.path.join(dir_path, VOCABULARY_ASSET), "wb") as file:
            file.write(self.tokenizer.serialized_model)

    def load_assets(self, dir_path):
        with open(os.path.join(dir_path, VOCABULARY_ASSET), "rb") as file:
            proto = file.read()
        self._set_tokenizer(tokenizer_class()(proto, **self._tokenizer_options()))


def tokenizer_class() -> type:
    """`AlbertTokenizer` (TensorFlow's), or `PythonTokenizer` where TensorFlow is not installed."""
    if not tensorflow_installed():
        return PythonTokenizer
    from keras_albert.text.tokenizer import AlbertTokenizer

    return AlbertTokenizer


def named_columns(name: str, value, keys: tuple, pair: bool = True) -> tuple:
    """The columns `keys` of `value` (the argument `name` of a preprocessor's call): a dict
    keyed by them, or (`pair`) a tuple or list of them in that order."""
    if isinstance(value, dict) and set(value) == set(keys):
        return tuple(value[key] for key in keys)
    if pair and isinstance(value, (tuple, list)) and len(value) == len(keys):
        return tuple(value)
    expected = f"a dict keyed {', '.join(keys)}"
    if pair:
        expected = f"a tuple ({', '.join(keys)}) or {expected}"
    shown = sorted(value) if isinstance(value, dict) else value
    raise ValueError(f"`{name}` must be {expected}. Received: {name}={shown!r}")


def preprocessed_dataset(
    preprocessor, x, y=None, sample_weight=None, batch_size=None, shuffle=False
):
    """`x` (and `y`, `sample_weight`) as a `tf.data.Dataset` of batches through
    `preprocessor`: a dataset of raw batches mapped through it, as keras-hub's `Task` does;
    arrays or lists preprocessed once (`_preprocessed_rows`), in batches of `batch_size`
    (default `DEFAULT_BATCH_SIZE`); `shuffle`: their rows in another order every epoch, as
    Keras's `fit` shuffles arrays."""
    tf = require_tensorflow(f"{type(preprocessor).__name__} in `fit`, `predict` or `evaluate`")
    if isinstance(x, tf.data.Dataset):
        if y is not None or sample_weight is not None:
            raise ValueError(
                "`y` and `sample_weight` must be None when `x` is a tf.data.Dataset (it yields "
                f"them). Received: y={y!r}, sample_weight={sample_weight!r}"
            )
        dataset = x
    else:
        batch_size = DEFAULT_BATCH_SIZE if batch_size is None else batch_size
        data = keras.utils.pack_x_y_sample_weight(
            _as_tensors(x), _as_tensors(y), _as_tensors(sample_weight)
        )
        dataset = tf.data.Dataset.from_tensor_slices(_preprocessed_rows(preprocessor, data))
        if shuffle:
            dataset = dataset.shuffle(dataset.cardinality(), reshuffle_each_iteration=True)
        return dataset.batch(batch_size).prefetch(tf.data.AUTOTUNE)
    return dataset.map(preprocessor, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)


# Rows preprocessed per call where the inputs are in memory (`_preprocessed_rows`).
_CHUNK_ROWS = 1024


def _preprocessed_rows(preprocessor, data):
    """`preprocessor`'s output for every row of `data` (in-memory tensors, as `tf.data` would
    hand them to a `map`), in chunks of `_CHUNK_ROWS` rows, joined.

    Rows in memory are preprocessed once, before any pass: a dataset mapped through the
    preprocessor sets its graph up again at every pass (its tokenizer's and normalizer's
    kernels: about half a second on a 2-core CPU, more than a few batches' work), and a
    `tf.function` `preprocessor` (`AlbertTask`'s) is traced once for every call of the model.
    The packed rows take `sequence_length` ids each; a `tf.data.Dataset` of raw rows streams."""
    import tensorflow as tf

    arguments = data if isinstance(data, tuple) else (data,)
    first = tf.nest.flatten(arguments, expand_composites=False)[0]
    num_rows = int(first.nrows() if isinstance(first, tf.RaggedTensor) else tf.shape(first)[0])
    chunks = [
        preprocessor(*tf.nest.map_structure(lambda t, i=start: t[i : i + _CHUNK_ROWS], arguments))
        for start in range(0, max(num_rows, 1), _CHUNK_ROWS)
    ]
    if len(chunks) == 1:
        return chunks[0]
    return tf.nest.map_structure(
        lambda *parts: None if parts[0] is None else tf.concat(parts, 0), *chunks
    )


def _as_tensors(x):
    # A tuple of text columns (pairs) stays a tuple, a dict of named columns a dict; a list of
    # strings is one column.
    if isinstance(x, tuple):
        return tuple(_as_tensor(column) for column in x)
    if isinstance(x, dict):
        return {name: _as_tensor(column) for name, column in x.items()}
    return _as_tensor(x)


def _as_tensor(column):
    import tensorflow as tf

    if column is None or isinstance(column, (tf.Tensor, tf.RaggedTensor)):
        return column
    # Rows of different lengths (words of sentences, their labels, options per question) are a
    # ragged column.
    if isinstance(column, list) and any(isinstance(row, (list, tuple)) for row in column):
        return tf.ragged.constant(column)
    return tf.convert_to_tensor(column)
