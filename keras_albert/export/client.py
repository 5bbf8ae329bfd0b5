"""A client for an exported ALBERT model behind tensorflow_model_server: REST and gRPC.

`send_texts(texts, ...)` sends raw texts to `serving_default` and answers the outputs as NumPy
arrays, over REST (`instances` or `inputs` JSON) or gRPC (`tensorflow-serving-api`);
`send_inputs({"question": [...], "context": [...]}, ...)` sends any task's named inputs.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Mapping, Sequence

import numpy as np
import tensorflow as tf

from keras_albert.serving.requests import (
    REST_FORMATS,
    predict_request,
    rest_body,
    string_inputs,
    text_inputs,
)
from keras_albert.serving.saved_model import SERVING_DEFAULT
from keras_albert.validation import require_one_of

PROTOCOLS = ("rest", "grpc")


def predict_rest(url: str, body: dict, timeout: float = 30.0) -> dict[str, np.ndarray]:
    """POSTs `body` to `url` (`http://host:8501/v1/models/<name>:predict`); outputs by name."""
    data = json.dumps(body).encode("utf-8")
    request = urllib.request.Request(
        url, data=data, headers={"Content-Type": "application/json"}, method="POST"
    )
    with urllib.request.urlopen(request, timeout=timeout) as response:
        answer = json.loads(response.read().decode("utf-8"))
    if "error" in answer:
        raise RuntimeError(f"TF Serving answered an error: {answer['error']}")
    if "outputs" in answer:  # columnar request → columnar answer
        outputs = answer["outputs"]
        return (
            {name: np.asarray(value) for name, value in outputs.items()}
            if isinstance(outputs, dict)
            else {"output": np.asarray(outputs)}
        )
    predictions = answer["predictions"]  # row request → one object per example
    if predictions and isinstance(predictions[0], dict):
        return {name: np.asarray([row[name] for row in predictions]) for name in predictions[0]}
    return {"output": np.asarray(predictions)}


def predict_grpc(target: str, request, timeout: float = 30.0) -> dict[str, np.ndarray]:
    """Sends a `PredictRequest` to `target` ("host:8500"); outputs by name."""
    import grpc
    from tensorflow_serving.apis import prediction_service_pb2_grpc

    with grpc.insecure_channel(target) as channel:
        stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
        response = stub.Predict(request, timeout)
    return {name: tf.make_ndarray(proto) for name, proto in response.outputs.items()}


def send_texts(
    texts: Sequence[str | bytes],
    text_pairs: Sequence[str | bytes] | None = None,
    model_name: str = "albert",
    host: str = "localhost",
    protocol: str = "rest",
    rest_format: str = "instances",
    rest_port: int = 8501,
    grpc_port: int = 8500,
    version: int | None = None,
    timeout: float = 30.0,
) -> dict[str, np.ndarray]:
    """Outputs of `serving_default` for `texts` (and `text_pairs`) from a running server."""
    return _send(
        text_inputs(texts, text_pairs),
        model_name,
        host,
        protocol,
        rest_format,
        rest_port,
        grpc_port,
        version,
        timeout,
    )


def send_inputs(
    columns: Mapping[str, Sequence],
    model_name: str = "albert",
    host: str = "localhost",
    protocol: str = "rest",
    rest_format: str = "instances",
    rest_port: int = 8501,
    grpc_port: int = 8500,
    version: int | None = None,
    timeout: float = 30.0,
) -> dict[str, np.ndarray]:
    """Outputs of `serving_default` for named inputs, one entry per example in each column
    (e.g. `{"question": [...], "context": [...]}`, or RACE's `options` as lists of texts)."""
    return _send(
        string_inputs(columns),
        model_name,
        host,
        protocol,
        rest_format,
        rest_port,
        grpc_port,
        version,
        timeout,
    )


def _send(inputs, model_name, host, protocol, rest_format, rest_port, grpc_port, version, timeout):
    require_one_of("protocol", protocol, PROTOCOLS)
    require_one_of("rest_format", rest_format, REST_FORMATS)
    if protocol == "grpc":
        request = predict_request(model_name, inputs, SERVING_DEFAULT, version)
        return predict_grpc(f"{host}:{grpc_port}", request, timeout)
    path = f"/v1/models/{model_name}" + (f"/versions/{version}" if version is not None else "")
    url = f"http://{host}:{rest_port}{path}:predict"
    return predict_rest(url, rest_body(inputs, rest_format), timeout)
