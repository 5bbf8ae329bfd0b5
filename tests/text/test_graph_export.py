"""The in-graph tokenizer and packer in a SavedModel: same outputs, only TF Serving-safe ops."""

import keras
import numpy as np
import tensorflow as tf
from tensorflow.core.protobuf import saved_model_pb2

from tests.export.serving_harness import integer_transposes
from tests.text.text_data import load_sst2_dev

# Missing from stock TF Serving before 2.20 (tests/export/test_serving_export.py forbids them too).
UNSERVABLE_OPS = {"RoundRobinTrim", "RoundRobinGenerateMasks", "Utf8Binarize"}
PYTHON_OPS = {"PyFunc", "PyFuncStateless", "EagerPyFunc"}


def _graph_def(saved_model_dir):
    proto = saved_model_pb2.SavedModel()
    with open(f"{saved_model_dir}/saved_model.pb", "rb") as file:
        proto.ParseFromString(file.read())
    return proto.meta_graphs[0].graph_def


def _op_types(graph) -> set[str]:
    ops = {node.op for node in graph.node}
    for function in graph.library.function:
        ops |= {node.op for node in function.node_def}
    return ops


def test_saved_model_round_trip(tmp_path, albert_tokenizer):
    sentences = load_sst2_dev()[:40]
    first = tf.constant(sentences[:20])
    second = tf.constant(sentences[20:39] + ["92000, Café ``x''"])
    # As the export code will do it: Keras's ExportArchive, tracking tokenizer and packer.
    packer = albert_tokenizer.packer(32)
    archive = keras.export.ExportArchive()
    archive.track(albert_tokenizer)
    archive.track(packer)
    archive.add_endpoint(
        "preprocess",
        lambda first, second: packer((albert_tokenizer(first), albert_tokenizer(second))),
        input_signature=[tf.TensorSpec([None], tf.string), tf.TensorSpec([None], tf.string)],
    )
    archive.write_out(str(tmp_path), verbose=False)

    graph = _graph_def(tmp_path)
    ops = _op_types(graph)
    assert "SentencepieceOp" in ops and "SentencepieceTokenizeOp" in ops
    assert ops.isdisjoint(UNSERVABLE_OPS | PYTHON_OPS), ops & (UNSERVABLE_OPS | PYTHON_OPS)
    assert integer_transposes(graph) == []

    outputs = tf.saved_model.load(str(tmp_path)).preprocess(first, second)
    # The Python path's ids, packed, are what the SavedModel computes.
    python_ids = [
        tf.ragged.constant(
            [albert_tokenizer.encode(text) for text in texts.numpy()], dtype=tf.int32
        )
        for texts in (first, second)
    ]
    expected = packer(tuple(python_ids))
    for key in ("token_ids", "segment_ids", "padding_mask"):
        np.testing.assert_array_equal(outputs[key].numpy(), expected[key].numpy())
