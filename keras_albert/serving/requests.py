"""TF Serving requests for an exported ALBERT model: gRPC protos and REST JSON bodies.

One place builds requests, for the warmup file (`serving_layout`) and for the client
(`client`): `predict_request` and `classify_request` give `tensorflow-serving-api` protos;
`rest_body` gives the JSON body of `POST /v1/models/<name>:predict` in TF Serving's row
(`instances`) or columnar (`inputs`) format. Strings that are not valid UTF-8 go into JSON as
`{"b64": ...}`, as TF Serving's REST API expects binary values.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence

import numpy as np
import tensorflow as tf
from tensorflow_serving.apis import (
    classification_pb2,
    input_pb2,
    model_pb2,
    predict_pb2,
)

from keras_albert.serving.saved_model import SERVE_EXAMPLES, SERVING_DEFAULT
from keras_albert.validation import require_one_of

REST_FORMATS = ("instances", "inputs")
Text = str | bytes


def _as_bytes(text: Text) -> bytes:
    if isinstance(text, bytes):
        return text
    if isinstance(text, str):
        # surrogatepass keeps lone surrogates as the bytes a client would send; the model
        # replaces them by U+FFFD like any other invalid UTF-8.
        return text.encode("utf-8", errors="surrogatepass")
    raise TypeError(f"`texts` must hold str or bytes. Received: text={text!r}")


def text_inputs(texts: Sequence[Text], text_pairs: Sequence[Text] | None = None) -> dict:
    """`serving_default` inputs as NumPy object arrays of bytes, shape `[batch]`."""
    if isinstance(texts, (str, bytes)):
        raise TypeError(
            f"`texts` must be a sequence of texts, not a single text. Received: texts={texts!r}"
        )
    inputs = {"text": np.array([_as_bytes(text) for text in texts], dtype=object)}
    if text_pairs is not None:
        if isinstance(text_pairs, (str, bytes)) or len(text_pairs) != len(texts):
            raise ValueError(
                f"`text_pairs` must be a sequence as long as `texts` ({len(texts)}). "
                f"Received: text_pairs={text_pairs!r}"
            )
        inputs["text_pair"] = np.array([_as_bytes(text) for text in text_pairs], dtype=object)
    return inputs


def string_inputs(columns: Mapping[str, Sequence]) -> dict:
    """Named `serving_default` inputs of any task as NumPy object arrays of bytes.

    Each column holds one entry per example: a text, or a list of texts (e.g. RACE's
    `options`, `[batch, num_choices]`). All columns must have the same number of examples.
    """
    inputs, sizes = {}, set()
    for name, values in columns.items():
        if isinstance(values, (str, bytes)):
            raise TypeError(
                f"`{name}` must be a sequence with one entry per example, not a single text. "
                f"Received: {name}={values!r}"
            )
        rows = [
            [_as_bytes(item) for item in value]
            if isinstance(value, (list, tuple))
            else _as_bytes(value)
            for value in values
        ]
        if rows and isinstance(rows[0], list):
            widths = {len(row) for row in rows if isinstance(row, list)}
            if len(widths) != 1 or not all(isinstance(row, list) for row in rows):
                raise ValueError(
                    f"`{name}` must have the same number of texts in every example. "
                    f"Received: {name}={values!r}"
                )
            array = np.empty((len(rows), widths.pop()), dtype=object)
            for index, row in enumerate(rows):
                array[index, :] = row
        else:
            array = np.array(rows, dtype=object)
        inputs[name] = array
        sizes.add(len(rows))
    if len(sizes) > 1:
        raise ValueError(
            "Every input must have one entry per example. Received: "
            + ", ".join(f"{name}: {len(value)}" for name, value in inputs.items())
        )
    return inputs


def _model_spec(model_name: str, signature_name: str, version: int | None):
    spec = model_pb2.ModelSpec(name=model_name, signature_name=signature_name)
    if version is not None:
        spec.version.value = version
    return spec


def predict_request(
    model_name: str,
    inputs: Mapping[str, np.ndarray],
    signature_name: str = SERVING_DEFAULT,
    version: int | None = None,
) -> predict_pb2.PredictRequest:
    """A gRPC `PredictRequest` for named input arrays (see `text_inputs`)."""
    request = predict_pb2.PredictRequest(
        model_spec=_model_spec(model_name, signature_name, version)
    )
    for name, value in inputs.items():
        array = np.asarray(value)
        if array.dtype == object:
            request.inputs[name].CopyFrom(tf.make_tensor_proto(array, dtype=tf.string))
        else:
            request.inputs[name].CopyFrom(tf.make_tensor_proto(array))
    return request


def classify_request(
    model_name: str,
    texts: Sequence[Text],
    text_pairs: Sequence[Text] | None = None,
    version: int | None = None,
) -> classification_pb2.ClassificationRequest:
    """A gRPC `ClassificationRequest` of `tf.Example`s with features `text` (and `text_pair`)."""
    inputs = text_inputs(texts, text_pairs)
    examples = []
    for index in range(len(inputs["text"])):
        feature = {
            name: tf.train.Feature(bytes_list=tf.train.BytesList(value=[values[index]]))
            for name, values in inputs.items()
        }
        examples.append(tf.train.Example(features=tf.train.Features(feature=feature)))
    return classification_pb2.ClassificationRequest(
        model_spec=_model_spec(model_name, SERVE_EXAMPLES, version),
        input=input_pb2.Input(example_list=input_pb2.ExampleList(examples=examples)),
    )


def _json_value(value):
    if isinstance(value, list):
        return [_json_value(item) for item in value]
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            return {"b64": base64.b64encode(value).decode("ascii")}
    return value


def rest_body(
    inputs: Mapping[str, np.ndarray],
    format: str = "instances",
    signature_name: str = SERVING_DEFAULT,
) -> dict:
    """The JSON body of a REST `:predict` call for named input arrays.

    `format="instances"` is TF Serving's row format (one object per example, or bare values
    when there is a single input); `"inputs"` is the columnar format (one list per input).
    """
    require_one_of("format", format, REST_FORMATS)
    columns = {name: _json_value(np.asarray(value).tolist()) for name, value in inputs.items()}
    body = {"signature_name": signature_name}
    if format == "inputs":
        body["inputs"] = next(iter(columns.values())) if len(columns) == 1 else columns
        return body
    if len(columns) == 1:
        body["instances"] = next(iter(columns.values()))
    else:
        batch_size = len(next(iter(columns.values())))
        body["instances"] = [
            {name: values[index] for name, values in columns.items()} for index in range(batch_size)
        ]
    return body
