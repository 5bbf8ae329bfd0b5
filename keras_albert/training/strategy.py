"""One function that builds any tf.distribute strategy, and the matching
mixed-precision policy."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import tempfile
from collections.abc import Callable, Iterator, Sequence
from urllib.parse import urlparse

import tensorflow as tf

from keras_albert.cli import ToolError
from keras_albert.cpu import cpu_has_bfloat16, onednn_enabled
from keras_albert.training.precision import PRECISIONS
from keras_albert.validation import require_one_of

STRATEGY_NAMES = ("auto", "cpu", "one_device", "mirrored", "multi_worker", "tpu")
DEVICE_KINDS = ("tpu", "gpu", "cpu")


def build_strategy(
    name: str = "auto",
    tpu_address: str | None = None,
    *,
    devices: Sequence[str] | None = None,
    connect_timeout_s: float = 10.0,
) -> tf.distribute.Strategy:
    """Builds the `tf.distribute` strategy called `name`.

    Args:
        name: one of
            - `"auto"`: `"tpu"` if a TPU is configured (`tpu_address` given or
              the `TPU_NAME` environment variable set); else `"mirrored"` over
              all GPUs if there are several, one GPU if there is one, else the
              CPU.
            - `"cpu"`: `OneDeviceStrategy` on the CPU.
            - `"one_device"`: `OneDeviceStrategy` on `devices[0]`, else on the
              first GPU, else on the CPU.
            - `"mirrored"`: `MirroredStrategy` over `devices`, else over all
              GPUs, else over all logical CPU devices.
            - `"multi_worker"`: `MultiWorkerMirroredStrategy`; the cluster comes
              from the `TF_CONFIG` environment variable, which must be set.
            - `"tpu"`: `TPUStrategy` on `tpu_address` or `TPU_NAME`.
        tpu_address: a Cloud TPU name, `"local"` on a TPU VM, or
            `"grpc://host:port"`; only for `"tpu"` and `"auto"`.
        devices: device names for `"mirrored"` and `"one_device"`.
        connect_timeout_s: how long to wait for a `grpc://` TPU address to
            accept a connection before giving up.

    Returns:
        The strategy; build the model and optimizer under `strategy.scope()`.

    Raises:
        ValueError: for an unknown `name`, arguments that `name` does not use,
            or a `"multi_worker"` run without a usable `TF_CONFIG`.
        RuntimeError: for `"tpu"` when no TPU can be found or reached.

    Example:

    >>> from keras_albert.training.strategy import build_strategy
    >>> strategy = build_strategy("cpu")
    >>> strategy.num_replicas_in_sync
    1
    """
    if name not in STRATEGY_NAMES:
        raise ValueError(f"Unknown strategy name {name!r}. Expected one of {STRATEGY_NAMES}.")
    if tpu_address is not None and name not in ("tpu", "auto"):
        raise ValueError(
            f"`tpu_address` is only used by the 'tpu' and 'auto' strategies. "
            f"Received: name={name!r}, tpu_address={tpu_address!r}"
        )
    if devices is not None and name not in ("mirrored", "one_device"):
        raise ValueError(
            f"`devices` is only used by the 'mirrored' and 'one_device' strategies. "
            f"Received: name={name!r}, devices={devices!r}"
        )
    if name == "auto":
        if tpu_address or os.environ.get("TPU_NAME"):
            return _tpu_strategy(tpu_address, connect_timeout_s)
        gpus = _logical_devices("GPU")
        if len(gpus) > 1:
            return tf.distribute.MirroredStrategy(gpus)
        return tf.distribute.OneDeviceStrategy(gpus[0] if gpus else "/cpu:0")
    if name == "cpu":
        return tf.distribute.OneDeviceStrategy("/cpu:0")
    if name == "one_device":
        if devices is not None and len(devices) != 1:
            raise ValueError(
                f"'one_device' takes exactly one device. Received: devices={devices!r}"
            )
        gpus = _logical_devices("GPU")
        device = devices[0] if devices else (gpus[0] if gpus else "/cpu:0")
        return tf.distribute.OneDeviceStrategy(device)
    if name == "mirrored":
        devices = list(devices or _logical_devices("GPU") or _logical_devices("CPU"))
        return tf.distribute.MirroredStrategy(devices)
    if name == "multi_worker":
        _check_tf_config()
        return tf.distribute.MultiWorkerMirroredStrategy()
    return _tpu_strategy(tpu_address, connect_timeout_s)


def choose_precision_policy(
    strategy_or_device_kind: tf.distribute.Strategy | str, precision: str | None = None
) -> str:
    """The Keras dtype policy a run trains in: the one definition of `--precision`.

    Args:
        strategy_or_device_kind: a strategy, or one of `"tpu"`, `"gpu"`, `"cpu"`.
        precision: one of `PRECISIONS`:
            - `None`: the device's default: `"mixed_bfloat16"` on TPU, `"mixed_float16"` on
              GPU, `"float32"` on CPU.
            - `"auto"`: the same, but `"mixed_bfloat16"` on a CPU whose instructions multiply
              bfloat16 natively (AVX512-BF16 or AMX, `cpu_has_bfloat16`) where TensorFlow runs
              oneDNN's kernels (`onednn_enabled`; Eigen's bfloat16 multiplies, which run where
              `TF_ENABLE_ONEDNN_OPTS=0`, are slower than float32).
            - `"float32"`, `"mixed_bfloat16"`, `"mixed_float16"`: that policy. Under either
              mixed policy the variables (master weights) stay float32; the drivers wrap the
              optimizer for float16's loss scaling (`keras_albert.training.loss_scale`).

    Returns:
        The policy name, for the models' `dtype` (the drivers pass it; no global policy).

    Example:

    >>> from keras_albert.training.strategy import choose_precision_policy
    >>> choose_precision_policy("gpu")
    'mixed_float16'
    >>> choose_precision_policy("gpu", "auto")
    'mixed_float16'
    """
    require_one_of("precision", precision, (None, *PRECISIONS))
    kind = _device_kind(strategy_or_device_kind)
    if precision not in (None, "auto"):
        return precision
    if kind == "cpu" and precision == "auto" and cpu_has_bfloat16() and onednn_enabled():
        return "mixed_bfloat16"
    return {"tpu": "mixed_bfloat16", "gpu": "mixed_float16", "cpu": "float32"}[kind]


def _device_kind(strategy_or_device_kind) -> str:
    if isinstance(strategy_or_device_kind, str):
        kind = strategy_or_device_kind.lower()
        if kind not in DEVICE_KINDS:
            raise ValueError(
                f"Unknown device kind {strategy_or_device_kind!r}. Expected a "
                f"tf.distribute.Strategy or one of {DEVICE_KINDS}."
            )
        return kind
    if not isinstance(strategy_or_device_kind, tf.distribute.Strategy):
        raise TypeError(
            "Expected a tf.distribute.Strategy or one of "
            f"{DEVICE_KINDS}. Received: {strategy_or_device_kind!r}"
        )
    if isinstance(strategy_or_device_kind, tf.distribute.TPUStrategy):
        return "tpu"
    worker_devices = strategy_or_device_kind.extended.worker_devices
    if any(tf.DeviceSpec.from_string(d).device_type == "GPU" for d in worker_devices):
        return "gpu"
    return "cpu"


def _logical_devices(device_type: str) -> list[str]:
    return [device.name for device in tf.config.list_logical_devices(device_type)]


def _check_tf_config() -> None:
    raw = os.environ.get("TF_CONFIG")
    if not raw:
        raise ValueError(
            "The 'multi_worker' strategy reads the cluster from the TF_CONFIG environment "
            'variable, which is not set. Expected e.g. {"cluster": {"worker": '
            '["host1:port", "host2:port"]}, "task": {"type": "worker", "index": 0}}.'
        )
    try:
        config = json.loads(raw)
    except json.JSONDecodeError as error:
        raise ValueError(f"TF_CONFIG is not valid JSON ({error}). Received: {raw!r}") from None
    if not isinstance(config, dict) or not config.get("cluster") or "task" not in config:
        raise ValueError(f"TF_CONFIG needs a 'cluster' and a 'task' entry. Received: {raw!r}")


def _tpu_strategy(tpu_address: str | None, connect_timeout_s: float) -> tf.distribute.Strategy:
    target = tpu_address or os.environ.get("TPU_NAME")
    if not target:
        raise RuntimeError(
            "The 'tpu' strategy needs a TPU: pass `tpu_address` (a Cloud TPU name, 'local' "
            "on a TPU VM, or 'grpc://host:port') or set TPU_NAME. Received: "
            "tpu_address=None and TPU_NAME unset."
        )
    try:
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=target)
    except Exception as error:  # the resolver raises ValueError, URLError, ...
        raise RuntimeError(
            f"Could not resolve the TPU {target!r}: {type(error).__name__}: {error}"
        ) from error
    master = resolver.master()
    if master.startswith("grpc://"):
        # Connecting to a dead address blocks for minutes; a TCP probe fails
        # within the timeout instead.
        address = urlparse(master)
        try:
            socket.create_connection((address.hostname, address.port), connect_timeout_s).close()
        except OSError as error:
            raise RuntimeError(
                f"The TPU {target!r} at {master} did not accept a connection within "
                f"{connect_timeout_s} s: {error}"
            ) from None
    try:
        if master:
            tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
    except (tf.errors.OpError, ValueError) as error:
        raise RuntimeError(
            f"Could not initialize the TPU {target!r} (master {master!r}): "
            f"{type(error).__name__}: {str(error).splitlines()[0]}"
        ) from error
    return tf.distribute.TPUStrategy(resolver)


def is_chief(strategy: tf.distribute.Strategy) -> bool:
    """Whether this process writes a run's final artifacts: always, except under
    `MultiWorkerMirroredStrategy` on a worker that is not the chief (the "chief" task, else
    worker 0)."""
    resolver = getattr(strategy, "cluster_resolver", None)
    if not isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy) or resolver is None:
        return True
    task_type, task_id = resolver.task_type, resolver.task_id
    if task_type in (None, "chief"):
        return True
    has_chief = "chief" in resolver.cluster_spec().as_dict()
    return task_type == "worker" and task_id == 0 and not has_chief


def worker_name(strategy: tf.distribute.Strategy) -> str:
    """`"worker-1"` under `MultiWorkerMirroredStrategy`, else `"local"`."""
    resolver = getattr(strategy, "cluster_resolver", None)
    if not isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy) or resolver is None:
        return "local"
    return f"{resolver.task_type}-{resolver.task_id}"


def num_workers(strategy: tf.distribute.Strategy) -> int:
    """The workers of a `MultiWorkerMirroredStrategy` cluster; 1 for any other strategy."""
    resolver = getattr(strategy, "cluster_resolver", None)
    if not isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy) or resolver is None:
        return 1
    return max(len(resolver.cluster_spec().as_dict().get("worker", [])), 1)


def resolve_jit_compile(jit_compile: bool | str, strategy: tf.distribute.Strategy) -> bool:
    """`"auto"`: XLA on GPUs and TPUs, not on a CPU (Keras's `"auto"` does the same)."""
    if jit_compile == "auto":
        return _device_kind(strategy) != "cpu"
    return bool(jit_compile)


# What a collective raises when a peer worker died or cannot be reached.
PEER_ERRORS = (
    tf.errors.UnavailableError,
    tf.errors.AbortedError,
    tf.errors.CancelledError,
    tf.errors.DeadlineExceededError,
    tf.errors.InternalError,
    tf.errors.UnknownError,
)


def peer_failure(error: Exception, next_step: str) -> ToolError:
    """The one-line error for a collective that failed because a worker stopped (one of
    `PEER_ERRORS` under a cluster of several workers); `next_step` says how to go on."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    detail = next(
        (
            line
            for line in lines
            if any(word in line.lower() for word in ("task", "worker", "heartbeat", "peer"))
        ),
        lines[0] if lines else "",
    )[:300]
    return ToolError(
        f"a worker of the cluster stopped or cannot be reached ({type(error).__name__}: "
        f"{detail}); {next_step} on every worker"
    )


@contextlib.contextmanager
def worker_output(
    strategy: tf.distribute.Strategy, directory: str, next_step: Callable[[], str]
) -> Iterator[str]:
    """What every driver does around a run's work on each worker of its cluster.

    Yields the directory this process writes: `directory` on the chief; on every other worker a
    temporary directory, removed when the block ends however it ends (TensorFlow's collective
    saves need every worker to write; only the chief's copy is kept). A Ctrl-C becomes one line,
    `KeyboardInterrupt(next_step())`, instead of TensorFlow's traceback; a collective that fails
    because a peer stopped, under a cluster of several workers, becomes `peer_failure`.
    `next_step()` says where the run stands and how to go on; it is called only then.

        with worker_output(strategy, checkpoints_dir, lambda: "rerun to resume") as save_dir:
            ...  # train, saving to save_dir
    """
    chief = is_chief(strategy)
    output = (
        directory if chief else tempfile.mkdtemp(prefix=f"keras_albert-{worker_name(strategy)}-")
    )
    try:
        yield output
    except KeyboardInterrupt as interrupt:
        if hasattr(interrupt, "exit_status"):  # `interruption.Interrupted`: it says how to resume
            raise
        raise KeyboardInterrupt(next_step()) from None
    except PEER_ERRORS as error:
        if num_workers(strategy) == 1:
            raise
        raise peer_failure(error, next_step()) from error
    finally:
        if not chief:
            shutil.rmtree(output, ignore_errors=True)
