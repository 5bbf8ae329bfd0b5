"""build_strategy / choose_precision_policy, and Lamb training under real strategies.

The multi-device runs happen in subprocesses (distributed_run.py): logical CPU
devices and TF_CONFIG must be set before TensorFlow initializes.
"""

import contextlib
import json
import os
import platform
import re
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from keras_albert.cpu import ONEDNN_DEFAULT_FEATURES, cpu_features, cpu_has_bfloat16, onednn_enabled
from keras_albert.training import strategy as strategy_module
from keras_albert.training.strategy import build_strategy, choose_precision_policy

REPO_ROOT = Path(__file__).resolve().parents[2]
HELPER = Path(__file__).with_name("distributed_run.py")
SUBPROCESS_TIMEOUT_S = 240


# What a TF gRPC server prints when its port was taken between free_port() and its bind.
PORT_CLASH = re.compile(
    r"Could not start gRPC server|Failed to add port|address already in use", re.IGNORECASE
)
MAX_PORT_ATTEMPTS = 3


def tf_config(workers: list[str], index: int) -> str:
    """TF_CONFIG of worker `index` in a cluster of the `workers` addresses ("host:port")."""
    return json.dumps({"cluster": {"worker": workers}, "task": {"type": "worker", "index": index}})


def free_port() -> int:
    """A port free now. Another process may take it before our subprocess binds it: the
    callers that hand it to a subprocess retry on PORT_CLASH."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def dead_address():
    """A grpc:// address where nothing listens, held for the test: the socket stays bound
    (not listening, so a connection is refused), and no other process can take the port."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield f"grpc://127.0.0.1:{sock.getsockname()[1]}"


def run_helpers(runs, timeout_s=SUBPROCESS_TIMEOUT_S, helper=HELPER):
    """Starts every (args, extra_env) run of the script `helper` at once and waits for all;
    returns their (returncode, output). When one fails the others are stopped: a
    multi-worker peer would wait for it until the deadline."""
    processes, logs = [], []
    for args, extra_env in runs:
        # A TF_CONFIG inherited from the caller would make a 'cpu' run join a cluster.
        env = {key: value for key, value in os.environ.items() if key != "TF_CONFIG"}
        env.update(PYTHONPATH=str(REPO_ROOT), **extra_env)
        log = tempfile.TemporaryFile(mode="w+")
        logs.append(log)
        processes.append(
            subprocess.Popen(
                [sys.executable, str(helper), *map(str, args)],
                env=env,
                cwd=REPO_ROOT,
                stdout=log,
                stderr=subprocess.STDOUT,
                text=True,
            )
        )
    deadline = time.monotonic() + timeout_s
    try:
        while any(process.poll() is None for process in processes):
            if any(process.returncode not in (None, 0) for process in processes):
                break
            if time.monotonic() > deadline:
                pytest.fail(f"{helper.name} did not finish within {timeout_s} s")
            time.sleep(0.2)
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait()
    results = []
    for process, log in zip(processes, logs, strict=True):
        log.seek(0)
        results.append((process.returncode, log.read()))
        log.close()
    return results


def assert_succeeded(results):
    for returncode, output in results:
        assert returncode == 0, output[-4000:]


def max_differences(a, b, floatx):
    keys = [k for k in a.files if k.startswith(f"{floatx}/")]
    assert keys and sorted(keys) == sorted(k for k in b.files if k.startswith(f"{floatx}/"))
    return {k: float(np.abs(a[k] - b[k]).max()) for k in keys}


# float64 shows the rules are the same (observed differences ~1e-14). In
# float32 the replicas' partial sums round differently and LAMB, which
# normalizes every element by sqrt(v) and every tensor by its norm, does not
# damp that: ~6e-5 after 8 steps here. Clipping the per-replica gradients
# instead of their sum (what Keras does by default) moves weights by ~0.5.
TOLERANCE = {"float64": 1e-10, "float32": 3e-4}


@pytest.mark.slow  # two logical CPUs in a process of its own (CI runs it)
def test_mirrored_on_two_cpus_equals_one_device_with_the_same_global_batch(tmp_path):
    both_precisions = ["--floatx", "float32", "float64"]
    results = run_helpers(
        [
            (["mirrored", tmp_path / "mirrored.npz", "--logical-cpus", 2, *both_precisions], {}),
            (["cpu", tmp_path / "one.npz", *both_precisions], {}),
        ]
    )
    assert_succeeded(results)
    mirrored = np.load(tmp_path / "mirrored.npz")
    one = np.load(tmp_path / "one.npz")
    assert int(mirrored["num_replicas"]) == 2
    assert int(one["num_replicas"]) == 1
    for floatx, tolerance in TOLERANCE.items():
        differences = max_differences(mirrored, one, floatx)
        assert max(differences.values()) <= tolerance, (floatx, differences)
        losses = one[f"{floatx}/losses"]
        assert len(losses) == 8 and losses[-1] < 0.5 * losses[0]  # it trained


def run_workers(worker_args, other_runs=(), helper=HELPER):
    """`run_helpers`, one run per entry of `worker_args` as the workers of one local cluster
    (TF_CONFIG with worker i's index), beside `other_runs`; fresh ports when one was taken
    meanwhile. Returns the workers' results, then the others'."""
    for _ in range(MAX_PORT_ATTEMPTS):
        workers = [f"localhost:{free_port()}" for _ in worker_args]
        runs = [
            (args, {"TF_CONFIG": tf_config(workers, index)})
            for index, args in enumerate(worker_args)
        ]
        results = run_helpers([*runs, *other_runs], helper=helper)
        if not any(code != 0 and PORT_CLASH.search(output) for code, output in results):
            break
    return results


@pytest.mark.slow  # two worker processes (CI runs it)
def test_multi_worker_on_two_local_processes(tmp_path):
    common = ["--loop", "custom", "--floatx", "float32", "float64"]
    results = run_workers(
        [["multi_worker", tmp_path / f"worker{i}.npz", *common] for i in range(2)],
        [(["cpu", tmp_path / "one.npz", *common], {})],
    )
    assert_succeeded(results)
    worker0 = np.load(tmp_path / "worker0.npz")
    worker1 = np.load(tmp_path / "worker1.npz")
    one = np.load(tmp_path / "one.npz")
    assert int(worker0["num_replicas"]) == int(worker1["num_replicas"]) == 2
    for floatx, tolerance in TOLERANCE.items():
        # Both workers apply the same all-reduced gradient: bit-identical.
        assert max(max_differences(worker0, worker1, floatx).values()) == 0.0
        differences = max_differences(worker0, one, floatx)
        assert max(differences.values()) <= tolerance, (floatx, differences)


@pytest.mark.allowed_skip("checks the CPU fallback; skips on a machine with a GPU")
@pytest.mark.parametrize("name", ["auto", "cpu", "one_device"])
def test_single_device_strategies_on_a_cpu_machine(name):
    if tf.config.list_logical_devices("GPU"):
        pytest.skip("checks the CPU fallback")
    strategy = build_strategy(name)
    assert isinstance(strategy, tf.distribute.OneDeviceStrategy)
    assert strategy.num_replicas_in_sync == 1
    assert "CPU" in strategy.extended.worker_devices[0]


@pytest.mark.allowed_skip("checks the CPU fallback; skips on a machine with a GPU")
def test_mirrored_without_gpus_uses_every_logical_cpu():
    if tf.config.list_logical_devices("GPU"):
        pytest.skip("checks the CPU fallback")
    strategy = build_strategy("mirrored")
    assert isinstance(strategy, tf.distribute.MirroredStrategy)
    assert strategy.num_replicas_in_sync == len(tf.config.list_logical_devices("CPU"))


def test_explicit_devices():
    strategy = build_strategy("one_device", devices=["/cpu:0"])
    assert strategy.extended.worker_devices == ("/job:localhost/replica:0/task:0/device:CPU:0",)
    strategy = build_strategy("mirrored", devices=["/cpu:0"])
    assert strategy.num_replicas_in_sync == 1


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"name": "gpu"}, "Unknown strategy name 'gpu'"),
        ({"name": "Mirrored"}, "Unknown strategy name 'Mirrored'"),
        ({"name": "cpu", "tpu_address": "my-tpu"}, "tpu_address='my-tpu'"),
        ({"name": "tpu", "devices": ["/cpu:0"]}, "devices=\\['/cpu:0'\\]"),
        ({"name": "one_device", "devices": ["/cpu:0", "/cpu:1"]}, "exactly one device"),
    ],
)
def test_bad_arguments_are_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        build_strategy(**kwargs)


@pytest.mark.parametrize(
    "tf_config, message",
    [
        (None, "TF_CONFIG environment variable, which is not set"),
        ("{not json", "not valid JSON.*'{not json'"),
        ('{"task": {"type": "worker", "index": 0}}', "needs a 'cluster'"),
    ],
)
def test_multi_worker_needs_a_usable_tf_config(monkeypatch, tf_config, message):
    if tf_config is None:
        monkeypatch.delenv("TF_CONFIG", raising=False)
    else:
        monkeypatch.setenv("TF_CONFIG", tf_config)
    with pytest.raises(ValueError, match=message):
        build_strategy("multi_worker")


def test_tpu_without_address_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("TPU_NAME", raising=False)
    with pytest.raises(RuntimeError, match="tpu_address=None and TPU_NAME unset"):
        build_strategy("tpu")


def count_connection_attempts(monkeypatch):
    """Records every TCP connection `build_strategy` opens, and fails if it goes on to
    TensorFlow's cluster connection or TPU initialization (which retry for minutes)."""
    attempts = []
    create_connection = socket.create_connection

    def recording_create_connection(address, timeout=None, *args, **kwargs):
        attempts.append((address, timeout))
        return create_connection(address, timeout, *args, **kwargs)

    def must_not_be_reached(*args, **kwargs):
        raise AssertionError("went on to connect to / initialize the TPU")

    monkeypatch.setattr(strategy_module.socket, "create_connection", recording_create_connection)
    monkeypatch.setattr(tf.config, "experimental_connect_to_cluster", must_not_be_reached)
    monkeypatch.setattr(tf.tpu.experimental, "initialize_tpu_system", must_not_be_reached)
    return attempts


def test_unreachable_tpu_fails_fast_and_names_the_address(monkeypatch):
    monkeypatch.delenv("TPU_NAME", raising=False)
    attempts = count_connection_attempts(monkeypatch)
    with dead_address() as address:
        with pytest.raises(RuntimeError, match=f"'{address}'.*did not accept a connection"):
            build_strategy("tpu", tpu_address=address, connect_timeout_s=2.0)
    # Fast = one probe bounded by the timeout, and no retrying TPU connection after it.
    port = int(address.rsplit(":", 1)[1])
    assert attempts == [(("127.0.0.1", port), 2.0)]


def test_auto_follows_tpu_name(monkeypatch):
    attempts = count_connection_attempts(monkeypatch)
    with dead_address() as address:
        monkeypatch.setenv("TPU_NAME", address)
        with pytest.raises(RuntimeError, match=address):
            build_strategy("auto", connect_timeout_s=2.0)
    assert len(attempts) == 1


@pytest.mark.allowed_skip("skips on a machine with a TPU")
def test_local_tpu_on_a_machine_without_one(monkeypatch):
    monkeypatch.delenv("TPU_NAME", raising=False)
    if tf.config.list_logical_devices("TPU"):
        pytest.skip("this machine has a TPU")
    with pytest.raises(RuntimeError, match="Could not initialize the TPU 'local'"):
        build_strategy("tpu", tpu_address="local")


def test_precision_policy_per_device_kind():
    assert choose_precision_policy("tpu") == "mixed_bfloat16"
    assert choose_precision_policy("GPU") == "mixed_float16"
    assert choose_precision_policy("cpu") == "float32"
    assert choose_precision_policy(build_strategy("cpu")) == "float32"
    # Strategies are read from their devices; building one does not need the device.
    assert choose_precision_policy(tf.distribute.OneDeviceStrategy("/gpu:0")) == "mixed_float16"


def test_precision_policy_choices():
    assert choose_precision_policy("gpu", "float32") == "float32"
    assert choose_precision_policy("cpu", "mixed_bfloat16") == "mixed_bfloat16"
    assert choose_precision_policy("cpu", "mixed_float16") == "mixed_float16"
    assert choose_precision_policy("tpu", "auto") == "mixed_bfloat16"
    assert choose_precision_policy("gpu", "auto") == "mixed_float16"
    with pytest.raises(ValueError, match="precision='float17'"):
        choose_precision_policy("cpu", "float17")
    with pytest.raises(ValueError, match="precision='bfloat16'"):  # not a training policy
        choose_precision_policy("cpu", "bfloat16")


def test_auto_precision_on_a_cpu_follows_its_bfloat16_instructions(tmp_path, monkeypatch):
    with_bf16 = tmp_path / "bf16"
    with_bf16.write_text("model name\t: X\nflags\t\t: fpu avx512f avx512_bf16\n")
    with_amx = tmp_path / "amx"
    with_amx.write_text("flags\t\t: fpu amx_tile amx_bf16\n")
    without = tmp_path / "none"
    without.write_text("flags\t\t: fpu avx2 avx512f\n")
    assert strategy_module.cpu_has_bfloat16(str(with_bf16))
    assert strategy_module.cpu_has_bfloat16(str(with_amx))
    assert not strategy_module.cpu_has_bfloat16(str(without))
    assert not strategy_module.cpu_has_bfloat16(str(tmp_path / "missing"))
    real = strategy_module.cpu_has_bfloat16
    cases = [(with_bf16, True, "mixed_bfloat16"), (without, True, "float32")]
    # bfloat16 instructions but oneDNN off (TF_ENABLE_ONEDNN_OPTS=0): Eigen's slow bfloat16.
    cases.append((with_bf16, False, "float32"))
    for path, onednn, expected in cases:
        monkeypatch.setattr(strategy_module, "cpu_has_bfloat16", lambda p=str(path): real(p))
        monkeypatch.setattr(strategy_module, "onednn_enabled", lambda onednn=onednn: onednn)
        assert choose_precision_policy("cpu", "auto") == expected
        assert choose_precision_policy("cpu") == "float32"  # the default stays float32


def test_auto_precision_follows_tensorflow_s_own_onednn_state():
    # The real answer of this process (no monkeypatch): on this CPU, with the environment as set.
    expected = "mixed_bfloat16" if cpu_has_bfloat16() and onednn_enabled() else "float32"
    assert choose_precision_policy("cpu", "auto") == expected


@pytest.mark.slow
def test_onednn_state_is_tensorflow_s_decision_in_a_fresh_process():
    # TensorFlow decides once per process: a subprocess per setting. Forced on and off it
    # follows the variable on every x86-64 CPU; unset, it follows the CPU's features
    # (AVX512-VNNI, AVX512-BF16, AVX-VNNI or AMX: on; AVX2-only: off).
    flags = cpu_features()["flags"]
    default = platform.machine() == "x86_64" and any(
        flags.get(name) for name in ONEDNN_DEFAULT_FEATURES
    )
    for value, expected in (("0", False), ("1", platform.machine() == "x86_64"), (None, default)):
        environment = {k: v for k, v in os.environ.items() if k != "TF_ENABLE_ONEDNN_OPTS"}
        if value is not None:
            environment["TF_ENABLE_ONEDNN_OPTS"] = value
        result = subprocess.run(
            [
                sys.executable,
                "-c",
                "from keras_albert.cpu import onednn_enabled; print(onednn_enabled())",
            ],
            env=environment,
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        assert result.stdout.strip().splitlines()[-1] == str(expected), (value, result.stdout)


@pytest.mark.parametrize("value, error", [("npu", ValueError), (3, TypeError)])
def test_precision_policy_rejects_unknown_devices(value, error):
    with pytest.raises(error, match=repr(value)):
        choose_precision_policy(value)


def test_worker_output_on_one_process_keeps_the_directory_and_says_the_next_step(tmp_path):
    strategy = tf.distribute.get_strategy()
    calls = []

    def next_step():
        calls.append(1)
        return "last checkpoint ckpt-3 — rerun the same command to resume"

    with strategy_module.worker_output(strategy, str(tmp_path), next_step) as directory:
        assert directory == str(tmp_path)  # one process is the chief: it writes the directory
    assert tmp_path.exists() and calls == []  # next_step is called only when needed
    with pytest.raises(KeyboardInterrupt) as interrupted:
        with strategy_module.worker_output(strategy, str(tmp_path), next_step):
            raise KeyboardInterrupt
    assert str(interrupted.value) == "last checkpoint ckpt-3 — rerun the same command to resume"
    assert interrupted.value.__cause__ is None and interrupted.value.__suppress_context__
    # A collective error of a single worker is no peer failure: it passes unchanged.
    error = tf.errors.UnavailableError(None, None, "socket closed")
    with pytest.raises(tf.errors.UnavailableError, match="socket closed"):
        with strategy_module.worker_output(strategy, str(tmp_path), next_step):
            raise error
    assert tmp_path.exists()


def test_worker_output_of_a_worker_is_temporary_and_a_peer_failure_is_one_line(
    tmp_path, monkeypatch
):
    # A non-chief worker of a two-worker cluster, without starting one.
    monkeypatch.setattr(strategy_module, "is_chief", lambda strategy: False)
    monkeypatch.setattr(strategy_module, "worker_name", lambda strategy: "worker-1")
    monkeypatch.setattr(strategy_module, "num_workers", lambda strategy: 2)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    strategy = tf.distribute.get_strategy()
    with strategy_module.worker_output(strategy, "gs://bucket/run", lambda: "resume") as directory:
        assert directory != "gs://bucket/run" and os.path.isdir(directory)
        assert os.path.basename(directory).startswith("keras_albert-worker-1-")
        Path(directory, "ckpt-1.index").write_text("x")
    assert not os.path.exists(directory)  # removed, content and all
    error = tf.errors.UnavailableError(None, None, "Task /job:worker/task:0 heartbeat timeout")
    with pytest.raises(strategy_module.ToolError) as failed:
        with strategy_module.worker_output(strategy, "out", lambda: "rerun to resume") as left:
            raise error
    assert "task:0 heartbeat timeout" in str(failed.value)
    assert str(failed.value).endswith("rerun to resume on every worker")
    assert failed.value.__cause__ is error and not os.path.exists(left)
