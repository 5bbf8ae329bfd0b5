"""Every benchmark starts from `benchmarks/prelude.py`: it imports the prelude before any
framework, writes its JSON through the prelude's one writer, and none changes `sys.path` (they
run as `python -m benchmarks.<name>` from the repository's root). The header and the JSON name
the machine: the CPU model from /proc/cpuinfo, its flags, the cores, the load, the versions."""

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import prelude
from keras_albert.cpu import onednn_enabled

REPO_ROOT = Path(__file__).resolve().parents[1]
# Modules the scripts import; the rest of benchmarks/*.py are scripts.
HELPERS = (
    "__init__", "prelude", "batches", "checklist", "checklist_fit", "checklist_loop", "interleaved",
    "model_garden", "peer_models", "roofs",
)  # fmt: skip
SCRIPTS = sorted(
    path for path in (REPO_ROOT / "benchmarks").glob("*.py") if path.stem not in HELPERS
)
# What must not load before the prelude has set the environment.
FRAMEWORKS = (
    "tensorflow", "tensorflow_text", "keras", "keras_hub", "torch", "transformers", "official",
    "tf_keras", "keras_albert", "tools", "examples",
)  # fmt: skip


def prelude_use(source: str) -> dict:
    """Where `source` imports the prelude and the frameworks (module level), whether it calls
    `prelude.write_results` and whether it changes `sys.path`."""
    tree = ast.parse(source)
    prelude_line, framework_lines = None, []
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module == "benchmarks":
            if any(alias.name == "prelude" for alias in node.names):
                prelude_line = node.lineno
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module]
        if any(name.split(".")[0] in FRAMEWORKS for name in names):
            framework_lines.append(node.lineno)
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call)]
    return {
        "prelude_line": prelude_line,
        "first_framework_line": min(framework_lines, default=None),
        "writes": any(ast.unparse(call.func) == "prelude.write_results" for call in calls),
        "changes_sys_path": any(ast.unparse(call.func).startswith("sys.path.") for call in calls),
        "sets_environment": "os.environ.setdefault(" in source,
    }


def test_the_checker_reads_imports_writes_and_path_changes():
    good = (
        "import os\nfrom benchmarks import prelude\nimport tensorflow as tf\n"
        "def main():\n    prelude.write_results('x.json', {})\n"
    )
    use = prelude_use(good)
    assert use["prelude_line"] == 2 and use["first_framework_line"] == 3 and use["writes"]
    assert not use["changes_sys_path"] and not use["sets_environment"]
    bad = (
        "import sys, os\nos.environ.setdefault('KERAS_BACKEND', 'tensorflow')\n"
        "sys.path.insert(0, 'x')\nimport keras\nfrom results import write_results\n"
        "write_results('x.json', {})\n"
    )
    use = prelude_use(bad)
    assert use["prelude_line"] is None and not use["writes"]
    assert use["changes_sys_path"] and use["sets_environment"]


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda path: path.stem)
def test_every_script_uses_the_prelude_and_its_writer(script):
    use = prelude_use(script.read_text(encoding="utf-8"))
    assert use["prelude_line"] is not None, "imports no `from benchmarks import prelude`"
    if use["first_framework_line"] is not None:
        assert use["prelude_line"] < use["first_framework_line"], "a framework before the prelude"
    assert use["writes"], "writes no JSON through prelude.write_results"
    assert not use["sets_environment"], "the environment is the prelude's"


def test_no_benchmark_module_changes_sys_path():
    found = [
        path.name
        for path in sorted((REPO_ROOT / "benchmarks").glob("*.py"))
        if prelude_use(path.read_text(encoding="utf-8"))["changes_sys_path"]
    ]
    assert found == []


def cpuinfo_model_name() -> str:
    """The first `model name` of /proc/cpuinfo, read here independently of the prelude."""
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8")
    except OSError:
        pytest.skip("no /proc/cpuinfo (not Linux)")
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "model name":
            return value.strip()
    pytest.skip("/proc/cpuinfo names no model (e.g. some ARM kernels)")


@pytest.mark.allowed_skip(reason="the CPU model is read from /proc/cpuinfo on Linux only")
def test_header_and_json_name_the_cpu_model_flags_cores_and_versions(tmp_path, capsys):
    model_name = cpuinfo_model_name()
    onednn = onednn_enabled()  # imports TensorFlow, as a benchmark script has before its header
    facts = prelude.header()
    printed = capsys.readouterr().out
    assert model_name in printed and "avx512_bf16" in printed and "load" in printed
    assert f"{os.cpu_count()} cores" in printed and "python" in printed
    path = prelude.write_results(str(tmp_path / "out" / "x.json"), {"figure": 1.5})
    record = json.loads(Path(path).read_text(encoding="utf-8"))
    assert record["results"] == {"figure": 1.5}
    machine = record["machine"]
    assert machine["cpu"]["model_name"] == model_name == facts["cpu"]["model_name"]
    assert set(prelude.HEADER_FLAGS) <= set(machine["cpu"]["flags"])
    assert machine["cpus"] == os.cpu_count() and len(machine["load_average"]) == 3
    assert machine["versions"]["python"] and machine["processor"]
    # the CPU's family and model numbers, oneDNN's state as TensorFlow decided it here (this
    # test process has imported TensorFlow), and the commit measured
    assert isinstance(machine["cpu"]["family"], int) and isinstance(machine["cpu"]["model"], int)
    assert machine["onednn"] == onednn and f"oneDNN {onednn}" in printed
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True
    )
    expected = head.stdout.strip() if head.returncode == 0 else "unknown"  # a copy without .git
    assert machine["commit"].rstrip("+") == expected


def run_module(arguments: list[str], tmp_path) -> subprocess.CompletedProcess:
    """`python <arguments>` from `tmp_path` with the checkout on PYTHONPATH."""
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    return subprocess.run(
        [sys.executable, *arguments], cwd=tmp_path, env=env, capture_output=True, text=True,
        timeout=60,
    )  # fmt: skip


def test_the_prelude_imports_no_framework_and_sets_the_environment(tmp_path):
    code = (
        "import os, sys\nfrom benchmarks import prelude\nprelude.header()\n"
        "print(sorted(set(sys.modules) & {'tensorflow', 'keras', 'torch', 'keras_albert'}))\n"
        "print(os.environ['KERAS_BACKEND'], os.environ['TF_CPP_MIN_LOG_LEVEL'])\n"
    )
    result = run_module(["-c", code], tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-2:] == ["[]", "tensorflow 2"]


def test_a_script_runs_as_a_module_with_the_common_flags(tmp_path):
    """`--help` of the one script cheap to start (it imports no framework at the top)."""
    result = run_module(["-m", "benchmarks.precision_convergence", "--help"], tmp_path)
    assert result.returncode == 0, result.stderr
    assert "--results-json" in result.stdout
    assert os.path.join("runs", "benchmarks", "precision_convergence.json") in result.stdout
