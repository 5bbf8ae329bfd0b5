#!/usr/bin/env bash
# Run ON a lent GPU machine (PyTorch and JAX, no TensorFlow, no internet), from the
# repository's root, with benchmarks/device/wheels/ carried (prepare_wheels.sh fills it here):
#
#     bash benchmarks/device/run_checklist.sh        # writes under $OUT (default runs/device)
#     bash benchmarks/device/run_checklist.sh --tiny # the same on a CPU, tiny: a rehearsal
#
# Its arguments go to both checklist runs; STEPS, CONVERGENCE_STEPS, JAX_SECONDS and
# TORCH_SECONDS override the defaults below (the device's 10 minutes a command hold both).
# Keras: the machine's own if it is the carried wheel's version, else the carried wheels
# installed (nothing from the internet, `--no-index`) into a virtual environment that sees the
# machine's JAX and PyTorch. Then the accelerator checklist on JAX, and on PyTorch with the
# Hugging Face peer in the same run (`benchmarks/accelerator_checklist.py`), each under its own
# time limit so that one that hangs leaves the other's figures; each writes its JSON after
# every configuration. Logs and JSON go to $OUT; the script's status is the worst of the runs'.
set -uo pipefail
out=${OUT:-runs/device}
python=${PYTHON:-python3}
wheels=benchmarks/device/wheels
steps=${STEPS:-20}
convergence_steps=${CONVERGENCE_STEPS:-15}
mkdir -p "$out"
nvidia-smi > "$out/nvidia_smi.txt" 2>&1 || true

wanted=$(ls "$wheels"/keras-*.whl 2>/dev/null | sed -n 's/.*keras-\([^-]*\)-py3-none-any.whl/\1/p')
if [ -z "$wanted" ]; then
  echo "run_checklist: no keras wheel in $wheels; run prepare_wheels.sh first and carry it" >&2
  exit 2
fi
if [ "$("$python" -c 'import keras; print(keras.__version__)' 2>/dev/null)" != "$wanted" ]; then
  venv=${TMPDIR:-/tmp}/keras_albert_device
  "$python" -m venv --system-site-packages "$venv" &&
    "$venv/bin/python" -m pip install --quiet --no-index --find-links "$wheels" "keras==$wanted" ||
    { echo "run_checklist: could not install keras $wanted from $wheels" >&2; exit 2; }
  python=$venv/bin/python
fi
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} TF_CPP_MIN_LOG_LEVEL=2
"$python" - > "$out/versions.txt" 2>&1 <<'PY'
import importlib, sys
print(sys.version)
for name in ("keras", "jax", "jaxlib", "torch", "transformers", "numpy", "tensorflow"):
    try:
        print(name, importlib.import_module(name).__version__)
    except Exception as error:  # noqa: BLE001  (a missing one is a fact to record)
        print(name, "-", type(error).__name__)
PY
cat "$out/versions.txt"

forwarded=("$@")
status=0
run() {  # BACKEND SECONDS FLAGS...: one checklist run, its log beside its JSON
  local backend=$1 seconds=$2
  shift 2
  echo "== $backend (at most ${seconds}s)"
  timeout "$seconds" "$python" -m benchmarks.accelerator_checklist --backend "$backend" \
    --steps "$steps" --convergence-steps "$convergence_steps" \
    --results-json "$out/checklist_$backend.json" "$@" "${forwarded[@]}" 2>&1 | tee "$out/checklist_$backend.log"
  local code=${PIPESTATUS[0]}
  echo "== $backend: exit $code"
  [ "$code" -gt "$status" ] && status=$code
}
run jax "${JAX_SECONDS:-200}" --no-peer
run torch "${TORCH_SECONDS:-330}"
exit "$status"
