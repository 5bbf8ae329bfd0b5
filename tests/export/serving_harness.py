"""Runs exported SavedModels as tensorflow_model_server does, in a process without keras_albert.

Usage: python serving_harness.py JOB.json

Imports only TensorFlow, TensorFlow Text (which registers the TF Text ops the server links in)
and the tensorflow-serving-api protos. Each export is loaded with the TF1 session loader and
every request runs by the signature's tensor names, as the server's Predict, Classify and
Regress do. The job names, per export, a TFRecord of `PredictionLog` requests and a JSON list of
REST bodies; the answers go to TFRecords of `PredictionLog`s with the responses filled in, and a
JSON report (signatures, op types, XLA attributes, integer Transposes, assets, warmup replay,
models.config).
"""

import base64
import json
import os
import sys
import time

import numpy as np
import tensorflow as tf

# The ops of stock TensorFlow, before TF Text registers its own.
CORE_OPS = sorted(set(dir(tf.raw_ops)))

import tensorflow_text  # noqa: E402, F401
from google.protobuf import text_format  # noqa: E402
from tensorflow_serving.apis import (  # noqa: E402
    classification_pb2,
    predict_pb2,
    prediction_log_pb2,
    regression_pb2,
)
from tensorflow_serving.config import model_server_config_pb2  # noqa: E402

WARMUP_FILE = os.path.join("assets.extra", "tf_serving_warmup_requests")


class Servable:
    def __init__(self, path):
        self.graph = tf.Graph()
        self.session = tf.compat.v1.Session(graph=self.graph)
        self.meta_graph = tf.compat.v1.saved_model.loader.load(self.session, ["serve"], path)
        # TF2's "__saved_model_init_op" entry is not a servable signature; the server skips it.
        self.signatures = {
            name: signature
            for name, signature in self.meta_graph.signature_def.items()
            if not name.startswith("__")
        }

    def run(self, signature_name, inputs):
        signature = self.signatures[signature_name]
        if set(inputs) != set(signature.inputs):
            raise ValueError(
                f"inputs {sorted(inputs)} do not match signature {sorted(signature.inputs)}"
            )
        feed = {signature.inputs[name].name: value for name, value in inputs.items()}
        fetch = {name: info.name for name, info in signature.outputs.items()}
        return self.session.run(fetch, feed_dict=feed)

    def answer(self, log):
        """The PredictionLog `log` with its response filled in, as the server would answer."""
        kind = log.WhichOneof("log_type")
        answered = prediction_log_pb2.PredictionLog()
        answered.CopyFrom(log)
        if kind == "predict_log":
            request = log.predict_log.request
            inputs = {name: tf.make_ndarray(proto) for name, proto in request.inputs.items()}
            signature = request.model_spec.signature_name or "serving_default"
            outputs = self.run(signature, inputs)
            for name, value in outputs.items():
                answered.predict_log.response.outputs[name].CopyFrom(tf.make_tensor_proto(value))
            return answered
        if kind in ("classify_log", "regress_log"):
            request = getattr(log, kind).request
            signature = self.signatures[request.model_spec.signature_name]
            expected = "classify" if kind == "classify_log" else "regress"
            if signature.method_name != f"tensorflow/serving/{expected}":
                raise ValueError(f"method_name {signature.method_name!r} is not {expected}")
            serialized = np.array(
                [example.SerializeToString() for example in request.input.example_list.examples],
                dtype=object,
            )
            outputs = self.run(request.model_spec.signature_name, {"inputs": serialized})
            if kind == "classify_log":
                response = classification_pb2.ClassificationResponse()
                for classes, scores in zip(outputs["classes"], outputs["scores"], strict=True):
                    classification = response.result.classifications.add()
                    for label, score in zip(classes, scores, strict=True):
                        classification.classes.add(label=label.decode(), score=float(score))
                answered.classify_log.response.CopyFrom(response)
            else:
                response = regression_pb2.RegressionResponse()
                for value in np.reshape(outputs["outputs"], [-1]):
                    response.result.regressions.add(value=float(value))
                answered.regress_log.response.CopyFrom(response)
            return answered
        raise ValueError(f"unsupported log type {kind!r}")

    def rest_inputs(self, signature_name, body):
        """Tensors of a REST `:predict` body, converted as TF Serving's json_tensor does."""
        signature = self.signatures[signature_name]
        names = list(signature.inputs)
        if "instances" in body:
            rows = body["instances"]
            if rows and all(isinstance(row, dict) for row in rows):
                columns = {name: [row[name] for row in rows] for name in rows[0]}
            else:
                (name,) = names
                columns = {name: rows}
        else:
            values = body["inputs"]
            if isinstance(values, dict):
                columns = values
            else:
                (name,) = names
                columns = {name: values}
        inputs = {}
        for name, values in columns.items():
            dtype = tf.dtypes.as_dtype(signature.inputs[name].dtype)
            if dtype == tf.string:
                inputs[name] = np.array(_decode_strings(values), dtype=object)
            else:
                inputs[name] = np.array(values, dtype=dtype.as_numpy_dtype)
        return inputs

    def graph_report(self):
        graph_def = self.meta_graph.graph_def
        op_types = {node.op for node in graph_def.node}
        must_compile = []
        for node in graph_def.node:
            if _must_compile(node.attr):
                must_compile.append(node.name)
        for function in graph_def.library.function:
            op_types.update(node.op for node in function.node_def)
            if _must_compile(function.attr):
                must_compile.append(function.signature.name)
            for node in function.node_def:
                if _must_compile(node.attr):
                    must_compile.append(f"{function.signature.name}/{node.name}")
        return sorted(op_types), must_compile


def integer_transposes(graph_def) -> list[str]:
    """Names of the `Transpose` nodes of integers in `graph_def` (its functions included).

    TensorFlow's oneDNN graph pass (on by default on AVX-512 VNNI/BF16 CPUs) logs `E0000 …
    oneDNN supports DT_INT64 only on platforms with AVX-512` once per process that runs one:
    noise in a server's stderr and a user's training log.
    """
    nodes = list(graph_def.node) + [n for f in graph_def.library.function for n in f.node_def]
    return [
        node.name
        for node in nodes
        if node.op == "Transpose" and tf.dtypes.as_dtype(node.attr["T"].type).is_integer
    ]


def variable_reads(graph_def) -> list[str]:
    """Names of the nodes of `graph_def`'s functions (what the signatures run; the top-level
    graph holds only the loader's own nodes) that read a variable.

    Served models hold their weights as graph constants (keras_albert's `ModelCall`): oneDNN
    then fuses each Dense layer's multiply and bias and keeps the weights in its own layout
    between calls. A variable read means some weight escaped that.
    """
    return [
        f"{function.signature.name}/{node.name}"
        for function in graph_def.library.function
        for node in function.node_def
        if node.op in ("ReadVariableOp", "ResourceGather")
    ]


def _must_compile(attributes):
    value = attributes.get("_XlaMustCompile")
    return value is not None and value.b


def _decode_strings(values):
    decoded = []
    for value in values:
        if isinstance(value, dict):
            decoded.append(base64.b64decode(value["b64"]))
        elif isinstance(value, list):
            decoded.append(_decode_strings(value))
        else:
            decoded.append(value.encode("utf-8"))
    return decoded


def _signature_report(signature):
    def tensors(mapping):
        return {
            name: {
                "dtype": tf.dtypes.as_dtype(info.dtype).name,
                "shape": [dim.size for dim in info.tensor_shape.dim],
                "tensor": info.name,
            }
            for name, info in mapping.items()
        }

    return {
        "method_name": signature.method_name,
        "inputs": tensors(signature.inputs),
        "outputs": tensors(signature.outputs),
    }


def _answer_all(servable, logs):
    answered, errors = [], []
    for log in logs:
        try:
            answered.append(servable.answer(log))
            errors.append(None)
        except Exception as error:  # noqa: BLE001 - reported to the test, which fails on it
            answered.append(prediction_log_pb2.PredictionLog())
            errors.append(f"{type(error).__name__}: {error}")
    return answered, errors


def _read_logs(path):
    return [
        prediction_log_pb2.PredictionLog.FromString(record.numpy())
        for record in tf.data.TFRecordDataset(path)
    ]


def _write_logs(path, logs):
    with tf.io.TFRecordWriter(path) as writer:
        for log in logs:
            writer.write(log.SerializeToString())


def run_export(job):
    started = time.perf_counter()
    servable = Servable(job["path"])
    report = {
        "signatures": {
            name: _signature_report(signature) for name, signature in servable.signatures.items()
        },
        "assets": sorted(os.listdir(os.path.join(job["path"], "assets"))),
        "asset_file_defs": [asset.filename for asset in servable.meta_graph.asset_file_def],
    }
    report["op_types"], report["must_compile"] = servable.graph_report()
    report["integer_transposes"] = integer_transposes(servable.meta_graph.graph_def)
    report["variable_reads"] = variable_reads(servable.meta_graph.graph_def)

    answered, report["request_errors"] = _answer_all(servable, _read_logs(job["requests"]))
    _write_logs(job["responses"], answered)

    warmup = _read_logs(os.path.join(job["path"], WARMUP_FILE))
    answered, errors = _answer_all(servable, warmup)
    report["warmup"] = {
        "count": len(warmup),
        "kinds": [log.WhichOneof("log_type") for log in warmup],
        "signatures": [
            getattr(log, log.WhichOneof("log_type")).request.model_spec.signature_name
            for log in warmup
        ],
        "errors": errors,
    }
    _write_logs(job["warmup_responses"], answered)

    rest_logs, rest_errors = [], []
    with open(job["rest"], encoding="utf-8") as file:
        bodies = json.load(file)
    for body in bodies:
        signature = body.get("signature_name", "serving_default")
        try:
            inputs = servable.rest_inputs(signature, body)
            outputs = servable.run(signature, inputs)
            response = predict_pb2.PredictResponse()
            for name, value in outputs.items():
                response.outputs[name].CopyFrom(tf.make_tensor_proto(value))
            rest_logs.append(
                prediction_log_pb2.PredictionLog(
                    predict_log=prediction_log_pb2.PredictLog(response=response)
                )
            )
            rest_errors.append(None)
        except Exception as error:  # noqa: BLE001 - reported to the test, which fails on it
            rest_logs.append(prediction_log_pb2.PredictionLog())
            rest_errors.append(f"{type(error).__name__}: {error}")
    report["rest_errors"] = rest_errors
    _write_logs(job["rest_responses"], rest_logs)
    servable.session.close()
    report["seconds"] = time.perf_counter() - started
    return report


def main(job_path):
    with open(job_path, encoding="utf-8") as file:
        job = json.load(file)
    report = {"exports": [run_export(export) for export in job["exports"]]}
    with open(job["models_config"], encoding="utf-8") as file:
        config = text_format.Parse(file.read(), model_server_config_pb2.ModelServerConfig())
    report["models_config"] = [
        {
            "name": model.name,
            "base_path": model.base_path,
            "platform": model.model_platform,
            "latest_versions": model.model_version_policy.latest.num_versions,
        }
        for model in config.model_config_list.config
    ]
    report["core_ops"] = CORE_OPS
    report["modules"] = sorted(
        name for name in sys.modules if name.split(".")[0] in ("keras_albert", "keras")
    )
    with open(job["report"], "w", encoding="utf-8") as file:
        json.dump(report, file)


if __name__ == "__main__":
    main(sys.argv[1])
