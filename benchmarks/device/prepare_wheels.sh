#!/usr/bin/env bash
# Run HERE, before a GPU machine is lent: fills benchmarks/device/wheels/ (git-ignored) with
# what the accelerator checklist needs on a JAX or PyTorch image that has no internet: the
# keras wheel of this Python's Keras (pure Python) and the packages Keras imports that such an
# image may lack, at the versions installed here: the pure-Python ones once, optree and h5py
# (compiled) for CPython 3.10-3.13 on x86-64 Linux. About 30 MB; the run carries the folder.
#
#     PYTHON=/path/to/venv/bin/python bash benchmarks/device/prepare_wheels.sh
set -euo pipefail
python=${PYTHON:-python}
wheels="$(cd "$(dirname "$0")" && pwd)/wheels"
pinned() {  # NAME==VERSION for each name, the versions this Python has
  "$python" -c 'import sys, importlib.metadata as m; print(" ".join(f"{n}=={m.version(n)}" for n in sys.argv[1:]))' "$@"
}
mkdir -p "$wheels"
# shellcheck disable=SC2046  # one argument per package
"$python" -m pip download --quiet --no-deps --only-binary=:all: -d "$wheels" \
  $(pinned keras absl-py rich markdown-it-py mdurl pygments namex packaging typing-extensions)
for version in 3.10 3.11 3.12 3.13; do
  # shellcheck disable=SC2046
  "$python" -m pip download --quiet --no-deps --only-binary=:all: -d "$wheels" \
    --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux_2_28_x86_64 --python-version "$version" $(pinned optree h5py)
done
keras_wheel=$(ls "$wheels"/keras-*.whl)
case "$keras_wheel" in
  *-py3-none-any.whl) ;;
  *) echo "prepare_wheels: $keras_wheel is not pure Python" >&2; exit 1 ;;
esac
ls -1 "$wheels"
du -sh "$wheels"
