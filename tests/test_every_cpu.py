"""The tests whose kernels and tolerances depend on the CPU, run once more with TensorFlow's
oneDNN rewrite switched the other way, so that a machine of either kind checks both.

TensorFlow turns oneDNN on by default only on x86-64 CPUs with AVX512-VNNI, AVX512-BF16,
AVX-VNNI or AMX (`keras_albert.cpu.ONEDNN_DEFAULT_FEATURES`); an AVX2-only CPU (AMD Zen 3,
most laptops before 2022) runs Eigen's kernels, which fuse less and compute bfloat16 in
bfloat16. The suite runs these modules as this process's TensorFlow decided
(`keras_albert.cpu.onednn_enabled`); here a subprocess runs them with `TF_ENABLE_ONEDNN_OPTS`
set to the other value. Each module asserts the kernels and the tolerances of the kind it runs
on (tests/layers/served_kernels.py); none skips on either kind.
"""

import os
import platform
import subprocess
import sys
from pathlib import Path

from keras_albert.cpu import onednn_enabled

REPOSITORY = Path(__file__).resolve().parents[1]
# The modules that assert oneDNN's or Eigen's kernels, bfloat16 tolerances, or the precision
# `--precision auto` picks.
CPU_DEPENDENT = (
    "tests/layers/test_layer_norm.py",
    "tests/layers/test_layers.py",
    "tests/layers/test_activations.py",
    "tests/export/test_served_kernels.py",
    "tests/export/test_precision.py",
    "tests/training/test_strategy.py::test_auto_precision_follows_tensorflow_s_own_onednn_state",
)
TIMEOUT_S = 900


def test_cpu_dependent_tests_pass_with_onednn_switched_the_other_way():
    this_run = onednn_enabled()
    other = "0" if this_run else "1"
    environment = {**os.environ, "TF_ENABLE_ONEDNN_OPTS": other}
    probe = "from keras_albert.cpu import onednn_enabled; print(onednn_enabled())"
    answer = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=REPOSITORY,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout.split()[-1]
    # TensorFlow follows the variable both ways on x86-64 (oneDNN exists only there).
    if platform.machine() == "x86_64":
        assert answer == str(not this_run), (this_run, answer)
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *CPU_DEPENDENT],
        cwd=REPOSITORY,
        env=environment,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )
    summary = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else ""
    assert result.returncode == 0, f"TF_ENABLE_ONEDNN_OPTS={other}:\n{result.stdout[-8000:]}"
    assert " passed" in summary and "skipped" not in summary, summary
