"""Imports TensorFlow without its start-up lines; imported first by `keras_albert/__init__.py`.

Only where TensorFlow is the Keras backend: with `KERAS_BACKEND=jax` or `torch` nothing here
imports it (the exports, the tokenizer graph and the `tf.data` pipelines import it when used);
without TensorFlow installed and no backend asked for, JAX (else PyTorch) where installed
(`choose_backend`). Nor in an Apache
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
import json
import os
import sys

VERBOSE_ENVIRONMENT_VARIABLE = "KERAS_ALBERT_VERBOSE"


def verbose() -> bool:
    return os.environ.get(VERBOSE_ENVIRONMENT_VARIABLE, "") not in ("", "0")


def installed(module: str) -> bool:
    """Whether `import module` can succeed (a `None` in `sys.modules` blocks it)."""
    if module in sys.modules:
        return sys.modules[module] is not None
    return importlib.util.find_spec(module) is not None


def tensorflow_installed() -> bool:
    return installed("tensorflow")


# Keras's backends other than TensorFlow, in the order `choose_backend` takes them.
OTHER_BACKENDS = ("jax", "torch")


def _keras_json_backend() -> str | None:
    """The backend Keras's own config file names (`$KERAS_HOME/keras.json`, default
    `~/.keras/keras.json`), read as Keras reads it; None where there is none."""
    home = os.environ.get("KERAS_HOME") or os.path.join(os.path.expanduser("~"), ".keras")
    try:
        with open(os.path.join(home, "keras.json"), encoding="utf-8") as file:
            backend = json.load(file).get("backend")
    except (OSError, ValueError, AttributeError):
        return None
    return backend if isinstance(backend, str) else None


def choose_backend() -> None:
    """TensorFlow where it is installed and no other backend is asked for. Without it, Keras's
    default (TensorFlow) would end `import keras` in `No module named 'tensorflow'`: unless
    `KERAS_BACKEND` (or keras.json) names another backend, JAX, else PyTorch, where installed;
    else one line says what to install or set."""
    if tensorflow_installed():
        os.environ.setdefault("KERAS_BACKEND", "tensorflow")
        return
    if "KERAS_BACKEND" in os.environ or "keras" in sys.modules:
        return  # the user's choice, or one Keras has already made
    if _keras_json_backend() not in (None, "tensorflow"):
        return  # Keras writes "tensorflow" there itself on its first import: not a choice
    for backend in OTHER_BACKENDS:
        if installed(backend):
            os.environ["KERAS_BACKEND"] = backend
            return
    message = (
        "keras_albert needs a Keras backend: TensorFlow (Keras's default) is not installed, "
        'nor JAX or PyTorch. Install one (pip install "keras-albert[tensorflow]", or '
        "pip install jax) or set KERAS_BACKEND to the one that is installed."
    )
    if running_the_command():
        # `keras-albert --help` still lists the commands: the package imports without its
        # models, and a command that needs Keras says this in one line (`missing_backend`).
        global MISSING_BACKEND
        MISSING_BACKEND = message
        return
    raise ImportError(message)


# Where the `keras-albert` command runs with no Keras backend installed: what to install (the
# package then imports without its models, as in a Beam worker). None where there is one.
MISSING_BACKEND: str | None = None


def models_deferred() -> bool:
    """Whether `import keras_albert` leaves its models' part to the first use of one of its
    names: in a Beam worker, and in the command with no Keras backend installed."""
    return is_beam_worker() or MISSING_BACKEND is not None


def require_backend() -> None:
    """ImportError with what to install, where no Keras backend is installed."""
    if MISSING_BACKEND is not None:
        raise ImportError(MISSING_BACKEND)


def running_the_command() -> bool:
    """Whether this process is the `keras-albert` command: its installed script, or
    `python -m keras_albert`."""
    argv = getattr(sys, "argv", None) or [""]
    if os.path.basename(argv[0]) == "keras-albert":
        return True
    parent, name = os.path.split(argv[0])
    return name == "__main__.py" and os.path.basename(parent) == "keras_albert"


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
    choose_backend()
    require_backend()
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
    choose_backend()
    if MISSING_BACKEND is None:  # else the command runs without its models (`models_deferred`)
        quiet_tensorflow_import()
