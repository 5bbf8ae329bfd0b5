#!/usr/bin/env bash
# The two commands a new user needs, from a clean clone with nothing but Python 3.10+:
#   bash tools/run.sh main    set up .venv and run the main job
#   bash tools/run.sh test    set up .venv and run the whole test suite (what CI runs)
set -euo pipefail
cd "$(dirname "$0")/.."
what="${1:-}"
shift || true

PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  echo "== creating .venv with $($PYTHON --version)"
  "$PYTHON" -m venv .venv
fi
# install TARGET NAME: pip-installs TARGET (".[tensorflow]": the library on TensorFlow;
# ".[tensorflow,test]": with the test extras) once, and again only when the declared
# dependencies changed.
install() {
  local stamp=".venv/.keras_albert-installed-$2"
  if [ ! -f "$stamp" ] || ! cmp -s setup.cfg "$stamp"; then
    echo "== installing $1 into .venv"
    .venv/bin/python -m pip install -q --upgrade pip
    .venv/bin/python -m pip install -q -e "$1"
    cp setup.cfg "$stamp"
  fi
}
# A second environment without TensorFlow: keras + jax[cpu], safetensors and sentencepiece (with
# its protobuf), at the versions .venv has, where the backend tests import the library from the
# source tree as a user without TensorFlow would (tests/backends/test_without_tensorflow.py).
# Rebuilt when the versions change.
install_without_tensorflow() {
  local venv=.venv-without-tensorflow wanted
  wanted=$(.venv/bin/python -c "from importlib.metadata import version as v
print(' '.join(f'{name}=={v(name)}' for name in ('keras', 'jax', 'jaxlib', 'safetensors', 'sentencepiece', 'protobuf')))")
  if [ ! -f "$venv/.installed" ] || [ "$(cat "$venv/.installed")" != "$wanted" ]; then
    echo "== installing $wanted into $venv (no TensorFlow)"
    rm -rf "$venv"
    "$PYTHON" -m venv "$venv"
    "$venv/bin/python" -m pip install -q --upgrade pip
    # shellcheck disable=SC2086  # one argument per requirement
    "$venv/bin/python" -m pip install -q $wanted
    echo "$wanted" >"$venv/.installed"
  fi
  export KERAS_ALBERT_PYTHON_WITHOUT_TENSORFLOW="$PWD/$venv/bin/python"
}
# Model Garden (tf-models-official), the TensorFlow ALBERT the parity test and the speed
# benchmarks compare with: its 2.20.0 pins tensorflow 2.20, so it goes in without its
# dependencies; what it imports of them (tf-keras, gin-config, tensorflow-text) is in the test
# extra. It uses tf_keras directly: TF_USE_LEGACY_KERAS stays unset.
install_model_garden() {
  local version=2.20.0
  if [ "$(.venv/bin/python -c "from importlib.metadata import version
print(version('tf-models-official'))" 2>/dev/null)" != "$version" ]; then
    echo "== installing tf-models-official==$version into .venv (without its dependencies)"
    .venv/bin/python -m pip install -q --no-deps "tf-models-official==$version"
  fi
}
export KERAS_BACKEND=tensorflow TF_CPP_MIN_LOG_LEVEL=2

case "$what" in
  main)
    # The main job imports the library only (on TensorFlow: its tf.data pipelines, training
    # loop and exports): no test extras (torch, transformers, keras-hub). It runs as a module
    # of the checkout's `examples` package, from the repository's root (cd above).
    install ".[tensorflow]" library
    exec .venv/bin/python -m examples.main "$@"
    ;;
  test)
    install ".[tensorflow,test]" test
    install_model_garden
    install_without_tensorflow
    echo "== ruff"
    .venv/bin/ruff check keras_albert tools tests benchmarks examples
    echo "== import contracts"
    .venv/bin/lint-imports --config setup.cfg
    echo "== pytest"
    # Two worker processes (KERAS_ALBERT_TEST_WORKERS to change; 0 runs in this process), whole
    # test files per worker so that module fixtures are built once.
    workers="${KERAS_ALBERT_TEST_WORKERS:-2}"
    exec .venv/bin/python -m pytest -n "$workers" --dist loadfile "$@"
    ;;
  *)
    echo "usage: bash tools/run.sh main|test [args...]" >&2
    exit 2
    ;;
esac
