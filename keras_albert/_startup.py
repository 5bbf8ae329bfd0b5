"""Imports TensorFlow without its start-up lines; imported first by `keras_albert/__init__.py`.

Only where TensorFlow is the Keras backend: with `KERAS_BACKEND=jax` or `torch` nothing here
imports it (the exports, the tokenizer graph and the `tf.data` pipelines import it when used),
and without TensorFlow installed the backend defaults to Keras's own choice. Nor in an Apache
Beam SDK worker (`is_beam_worker`), which runs the pretraining data's pipeline only: there
`keras_albert/__init__.py` calls `quiet_tensorflow_import` when a name that needs Keras is
first used.

TensorFlow's C++ runtime writes `I0000 … cudart_stub`, `E0000 … failed call to cuInit` (on
machines without a GPU: not an error) and oneDNN notes to file descriptor 2 while it loads,
before Python can filter anything. Unless `KERAS_ALBERT_VERBOSE=1` is set (or TensorFlow is
already imported), stderr points at /dev/null while TensorFlow loads and initializes its
devices, and TF_CPP_MIN_LOG_LEVEL defaults to 3. Python exceptions still propagate.
"""

import importlib.util
import os
import sys

VERBOSE_ENVIRONMENT_VARIABLE = "KERAS_ALBERT_VERBOSE"


def verbose() -> bool:
    return os.environ.get(VERBOSE_ENVIRONMENT_VARIABLE, "") not in ("", "0")


def tensorflow_installed() -> bool:
    """Whether `import tensorflow` can succeed (a `None` in `sys.modules` blocks it)."""
    if "tensorflow" in sys.modules:
        return sys.modules["tensorflow"] is not None
    return importlib.util.find_spec("tensorflow") is not None


# Beam's Python SDK worker, on every runner (the DirectRunner's processes, Dataflow, Flink and
# Spark containers), runs as `python -m apache_beam.runners.worker.sdk_worker_main`.
BEAM_WORKER_MAIN = "apache_beam.runners.worker.sdk_worker_main"


def is_beam_worker() -> bool:
    """Whether this process is an Apache Beam SDK worker: it runs the pretraining data's Beam
    pipeline (`keras_albert.pretraining.data.beam`), which needs neither Keras nor TensorFlow,
    so `import keras_albert` there loads neither until a name that needs them is used."""
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    return getattr(spec, "name", None) == BEAM_WORKER_MAIN


def quiet_tensorflow_import() -> None:
    if tensorflow_installed():
        os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    if verbose() or "tensorflow" in sys.modules:
        return
    if os.environ.get("KERAS_BACKEND", "tensorflow") != "tensorflow" or not tensorflow_installed():
        return
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    sys.stderr.flush()
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    try:
        import tensorflow as tf

        # The device set-up logs its own lines on first use. Not with TF_CONFIG set: a
        # MultiWorkerMirroredStrategy must be made before TensorFlow runs its first op.
        if not os.environ.get("TF_CONFIG"):
            tf.constant(0)
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)
    import absl.logging

    absl.logging.set_verbosity(absl.logging.ERROR)
    tf.get_logger().setLevel("ERROR")


if not is_beam_worker():  # there `keras_albert` imports it when first needed
    quiet_tensorflow_import()
