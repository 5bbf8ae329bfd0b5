"""TF Serving layout: automatic versions, no overwrite, atomic writes, configuration files."""

import hashlib
import os
import shutil
import signal
import subprocess
import sys

import pytest
import tensorflow as tf
from google.protobuf import (
    descriptor_pb2,
    descriptor_pool,
    message_factory,
    text_format,
    wrappers_pb2,  # noqa: F401  (registers the wrapper types)
)
from tensorflow.core.protobuf import saved_model_pb2

from keras_albert.export import serving_layout
from keras_albert.export.serving_layout import (
    BatchingParameters,
    existing_versions,
    next_version,
    write_batching_parameters,
    write_version,
)


def _write_marker(text):
    def write(directory):
        with open(os.path.join(directory, "marker.txt"), "w") as file:
            file.write(text)

    return write


def _tree_digest(path) -> dict:
    digests = {}
    for directory, _, files in os.walk(path):
        for name in files:
            full = os.path.join(directory, name)
            with open(full, "rb") as file:
                digests[os.path.relpath(full, path)] = hashlib.sha256(file.read()).hexdigest()
    return digests


def test_versions_are_automatic_and_never_overwritten(tmp_path):
    model_dir = tmp_path / "model"
    assert next_version(model_dir) == 1
    assert write_version(model_dir, _write_marker("one")) == str(model_dir / "1")
    assert write_version(model_dir, _write_marker("two")) == str(model_dir / "2")
    assert write_version(model_dir, _write_marker("ten"), version=10) == str(model_dir / "10")
    assert next_version(model_dir) == 11
    with pytest.raises(FileExistsError, match="Version 2 already exists"):
        write_version(model_dir, _write_marker("again"), version=2)
    assert (model_dir / "2" / "marker.txt").read_text() == "two"
    with pytest.raises(ValueError, match="`version` must be an integer"):
        write_version(model_dir, _write_marker("bad"), version="3")
    assert sorted(os.listdir(model_dir)) == ["1", "10", "2"]


@pytest.mark.parametrize("version", [None, 5])
def test_two_exporters_racing_for_one_version(tmp_path, version):
    """Both choose their version before either renames (the barrier): without `version` the
    loser takes the next number; with one, it is refused with one line."""
    import threading

    model_dir = tmp_path / "model"
    both_chosen = threading.Barrier(2)
    results = {}

    def export(text):
        def write(directory):
            _write_marker(text)(directory)
            both_chosen.wait(timeout=30)

        try:
            results[text] = write_version(model_dir, write, version)
        except FileExistsError as error:
            results[text] = error

    threads = [threading.Thread(target=export, args=(text,)) for text in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    if version is None:
        assert sorted(results.values()) == [str(model_dir / "1"), str(model_dir / "2")]
        for text, path in results.items():
            assert open(os.path.join(path, "marker.txt")).read() == text
        assert sorted(os.listdir(model_dir)) == ["1", "2"]
    else:
        errors = [r for r in results.values() if isinstance(r, FileExistsError)]
        assert len(errors) == 1 and "Version 5 already exists" in str(errors[0])
        assert sorted(os.listdir(model_dir)) == ["5"]  # the loser's hidden directory removed


@pytest.mark.parametrize("mask, directory_mode, file_mode", [(0o022, 0o755, 0o644),
                                                             (0o027, 0o750, 0o640)])  # fmt: skip
def test_a_version_directory_has_the_umasks_permissions(tmp_path, mask, directory_mode, file_mode):
    previous = os.umask(mask)
    try:
        path = write_version(tmp_path / "model", _write_marker("x"))
    finally:
        os.umask(previous)
    assert os.stat(path).st_mode & 0o777 == directory_mode  # not mkdtemp's 0o700
    assert os.stat(os.path.join(path, "marker.txt")).st_mode & 0o777 == file_mode


def test_a_failure_midway_leaves_no_version_and_the_previous_one_untouched(
    served, monkeypatch, tmp_path
):
    # A copy of a real served base directory, with version 1 of the backbone.
    base_dir = tmp_path / "saved_models"
    shutil.copytree(served["base_dir"], base_dir)
    model_dir = base_dir / "embeddings"
    before = _tree_digest(base_dir)
    export = served["exports"]["embeddings"]

    def fail_after_the_saved_model(directory, records):
        assert os.path.isfile(os.path.join(directory, "saved_model.pb"))  # really midway
        raise OSError("disk full (injected)")

    monkeypatch.setattr(serving_layout, "write_warmup_requests", fail_after_the_saved_model)
    with pytest.raises(OSError, match="injected"):
        serving_layout.export_for_serving(
            export.model,
            _tokenizer(),
            base_dir=base_dir,
            name="embeddings",
            max_sequence_length=export.max_sequence_length,
        )
    assert sorted(os.listdir(model_dir)) == ["1"]
    assert _tree_digest(base_dir) == before


def _tokenizer():
    from keras_albert.text.tokenizer import AlbertTokenizer
    from tests.text.text_data import ALBERT_MODEL

    return AlbertTokenizer(ALBERT_MODEL)


KILLED_WRITER = """
import os, sys, time
from keras_albert.export.serving_layout import write_version

def write(directory):
    with open(os.path.join(directory, "saved_model.pb"), "wb") as file:
        file.write(b"half")
    print("WRITING", flush=True)
    time.sleep(60)

write_version(sys.argv[1], write)
"""


def test_a_killed_export_leaves_only_a_hidden_directory(tmp_path):
    model_dir = tmp_path / "model"
    write_version(model_dir, _write_marker("one"))
    process = subprocess.Popen(
        [sys.executable, "-c", KILLED_WRITER, str(model_dir)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=os.path.dirname(os.path.dirname(os.path.dirname(__file__))),
    )
    try:
        assert process.stdout.readline().strip() == "WRITING"
        os.kill(process.pid, signal.SIGKILL)
    finally:
        process.wait(timeout=30)
    partial, version = sorted(os.listdir(model_dir))
    assert version == "1"
    assert partial.startswith(".partial-2-")  # skipped by the server's version scan
    assert existing_versions(model_dir) == [1]
    assert (model_dir / "1" / "marker.txt").read_text() == "one"
    assert write_version(model_dir, _write_marker("two")) == str(model_dir / "2")


def _batching_parameters_class():
    # tensorflow-serving-api does not ship session_bundle_config.proto; this is its
    # BatchingParameters message (field names and types), to parse the text file strictly.
    file = descriptor_pb2.FileDescriptorProto(
        name="batching_parameters_test.proto",
        package="test",
        dependency=["google/protobuf/wrappers.proto"],
        syntax="proto3",
    )
    message = file.message_type.add(name="BatchingParameters")
    wrapped = [
        ("max_batch_size", ".google.protobuf.Int64Value"),
        ("batch_timeout_micros", ".google.protobuf.Int64Value"),
        ("max_enqueued_batches", ".google.protobuf.Int64Value"),
        ("num_batch_threads", ".google.protobuf.Int64Value"),
        ("thread_pool_name", ".google.protobuf.StringValue"),
    ]
    for number, (name, type_name) in enumerate(wrapped, start=1):
        message.field.add(
            name=name,
            number=number,
            type=descriptor_pb2.FieldDescriptorProto.TYPE_MESSAGE,
            type_name=type_name,
            label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL,
        )
    message.field.add(
        name="allowed_batch_sizes",
        number=6,
        type=descriptor_pb2.FieldDescriptorProto.TYPE_INT64,
        label=descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED,
    )
    message.field.add(
        name="pad_variable_length_inputs",
        number=7,
        type=descriptor_pb2.FieldDescriptorProto.TYPE_BOOL,
        label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL,
    )
    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(
        descriptor_pb2.FileDescriptorProto.FromString(
            wrappers_pb2.DESCRIPTOR.serialized_pb
        ).SerializeToString()
    )
    pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("test.BatchingParameters"))


def test_batching_parameters_file(tmp_path, served):
    parameters = BatchingParameters(
        max_batch_size=32, batch_timeout_micros=500, allowed_batch_sizes=(8, 16, 32)
    )
    path = write_batching_parameters(tmp_path, parameters)
    with open(path) as file:
        parsed = text_format.Parse(file.read(), _batching_parameters_class()())
    assert parsed.max_batch_size.value == 32
    assert parsed.batch_timeout_micros.value == 500
    assert parsed.num_batch_threads.value == 4
    assert list(parsed.allowed_batch_sizes) == [8, 16, 32]
    assert parsed.pad_variable_length_inputs is False
    # The exporter wrote the default file beside models.config.
    with open(os.path.join(served["base_dir"], "batching_parameters.txt")) as file:
        default = text_format.Parse(file.read(), _batching_parameters_class()())
    assert default.max_batch_size.value == BatchingParameters().max_batch_size


def test_batching_parameters_validation():
    with pytest.raises(ValueError, match="allowed_batch_sizes"):
        BatchingParameters(max_batch_size=32, allowed_batch_sizes=(8, 16))
    with pytest.raises(ValueError, match="num_batch_threads"):
        BatchingParameters(num_batch_threads=0)
    with pytest.raises(ValueError, match="max_batch_size"):
        BatchingParameters(max_batch_size=-1)


def test_no_partial_directories_left_in_the_served_base(served):
    for name in ("sst2_pair", "stsb", "embeddings", "pretrainer"):
        assert os.listdir(os.path.join(served["base_dir"], name)) == ["1"]
    assert sorted(os.listdir(served["base_dir"])) == [
        "batching_parameters.txt",
        "embeddings",
        "models.config",
        "pretrainer",
        "sst2_pair",
        "stsb",
    ]


def test_export_cli_from_a_keras_file(served, tmp_path):
    export = served["exports"]["stsb"]
    checkpoint = tmp_path / "stsb.keras"
    export.model.save(checkpoint)
    warmup = tmp_path / "warmup.txt"
    warmup.write_text("a fine film\n\nanother one\n", encoding="utf-8")
    repository = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
    base_dir = tmp_path / "saved_models"
    shutil.copytree(served["base_dir"], base_dir)
    result = subprocess.run(
        [
            sys.executable,
            os.path.join(repository, "tools", "export_saved_model.py"),
            str(checkpoint),
            "--vocabulary",
            os.path.join(repository, "tests", "data", "30k-clean.model"),
            "--name",
            "stsb",
            "--output-dir",
            str(base_dir),
            "--max-sequence-length",
            "48",
            "--warmup-texts",
            str(warmup),
            "--base-path-prefix",
            "/models",
        ],
        capture_output=True,
        text=True,
        cwd=repository,
        env={**os.environ, "PYTHONPATH": repository},
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().endswith(f"wrote {base_dir / 'stsb' / '2'}")
    assert existing_versions(base_dir / "stsb") == [1, 2]
    config = (base_dir / "models.config").read_text()
    assert 'base_path: "/models/stsb"' in config and 'base_path: "/models/sst2_pair"' in config
    # Same weights: the served model's weights are graph constants (ModelCall); every one of
    # the new version equals version 1's, and neither writes them again as variables.
    weights = [_weight_constants(base_dir / "stsb" / str(v)) for v in (1, 2)]
    assert len(weights[0]) == len(export.model.weights)
    assert weights[0] == weights[1]
    for version in (1, 2):
        prefix = base_dir / "stsb" / str(version) / "variables" / "variables"
        reader = tf.train.load_checkpoint(str(prefix))
        names = reader.get_variable_to_shape_map()
        assert [name for name in names if "OBJECT_GRAPH" not in name] == []


def _weight_constants(export_dir) -> list:
    """The (shape, bytes) of every constant of the function that holds the model weights."""
    saved_model = saved_model_pb2.SavedModel()
    saved_model.ParseFromString((export_dir / "saved_model.pb").read_bytes())
    library = saved_model.meta_graphs[0].graph_def.library
    functions = [f for f in library.function if "_with_constant_weights" in f.signature.name]
    assert len(functions) == 1  # one function, called by every signature
    # The weights are its top-level constants (Keras's own are named inside the model's scope).
    tensors = [
        node.attr["value"].tensor
        for node in functions[0].node_def
        if node.op == "Const" and "/" not in node.name
    ]
    return sorted(
        (tuple(dim.size for dim in tensor.tensor_shape.dim), tensor.SerializeToString())
        for tensor in tensors
    )
