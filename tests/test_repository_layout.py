"""The library stands alone: it refers to no file of the repository checkout, and the
benchmarks call public functions only (the import direction itself is in setup.cfg)."""

import ast
import pathlib

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
# Top-level folders of the checkout that an installed copy does not have.
CHECKOUT_FOLDERS = ("data", "tests", "tools", "benchmarks", "docs", "runs")


def repository_path_references(source: str) -> list[str]:
    """Code in `source` that finds files through the checkout: `__file__`, a parent climb
    (`../`, `os.pardir`), or a string naming one of the checkout's own folders."""
    tree = ast.parse(source)
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
        and isinstance(node.body[0].value.value, str)
    }
    # A bare folder name is a path only where it is joined into one ("data" is also a key of
    # SQuAD JSON files): os.path.join(...) arguments.
    joined = {
        id(argument)
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "join"
        for argument in node.args
    }
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id == "__file__":
            found.append((node.lineno, "__file__"))
        elif isinstance(node, ast.Attribute) and node.attr == "pardir":
            found.append((node.lineno, "os.pardir"))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value.replace("\\", "/")
            first = text.split("/")[0]
            if id(node) not in docstrings and (
                "../" in text
                or text == ".."
                or (first in CHECKOUT_FOLDERS and ("/" in text or id(node) in joined))
            ):
                found.append((node.lineno, repr(node.value)))
    return [f"line {line}: {what}" for line, what in sorted(found)]


def test_the_checker_finds_what_the_old_pipeline_did():
    old = (
        "import os\n"
        "REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))\n"
        'CORPUS = os.path.join(REPO_ROOT, "data", "corpus", "janeaustenr")\n'
        'DEV = "data/glue/SST-2/dev.tsv"\n'
        'UP = os.path.join("..", "x")\n'
        'UP2 = "../shared/data"\n'
        "UP3 = os.pardir\n"
    )
    found = repository_path_references(old)
    assert [line.split(":")[0] for line in found] == [f"line {n}" for n in (2, 3, 4, 5, 6, 7)]
    clean = '"""Docs may say data/corpus or ../shared/data."""\nOUT = "runs_dir"\nX = "metadata"\n'
    assert repository_path_references(clean) == []


def test_the_library_refers_to_no_repository_path():
    found = {
        str(path.relative_to(REPO_ROOT)): hits
        for path in sorted((REPO_ROOT / "keras_albert").rglob("*.py"))
        if (hits := repository_path_references(path.read_text(encoding="utf-8")))
    }
    assert found == {}, "the library must take paths as options, not from the checkout"


def private_imports(source: str) -> list[str]:
    """`from keras_albert… / main_job… import _name` and `module._name` of those modules."""
    tree = ast.parse(source)
    ours = ("keras_albert", "main_job")
    found, modules = [], set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in ours:
            for alias in node.names:
                if alias.name.startswith("_"):
                    found.append(f"{node.module}.{alias.name}")
                modules.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in ours:
                    modules.add((alias.asname or alias.name).split(".")[0])
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
            and isinstance(node.value, ast.Name)
            and node.value.id in modules
        ):
            found.append(f"{node.value.id}.{node.attr}")
    return found


def test_the_checker_finds_private_imports():
    source = (
        "from keras_albert.pipeline import _corpus, run_steps\n"
        "from main_job import steps\n"
        "steps._serve(1)\n"
        "from other import _fine\n"
    )
    assert private_imports(source) == ["keras_albert.pipeline._corpus", "steps._serve"]


def test_benchmarks_call_public_functions_only():
    found = {
        path.name: hits
        for path in sorted((REPO_ROOT / "benchmarks").glob("*.py"))
        if (hits := private_imports(path.read_text(encoding="utf-8")))
    }
    assert found == {}


def importorskip_calls(source: str) -> list[str]:
    """`pytest.importorskip(...)` (or a bare `importorskip(...)`) calls in `source`."""
    return [
        f"line {node.lineno}"
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call)
        and getattr(node.func, "attr", getattr(node.func, "id", None)) == "importorskip"
    ]


def test_no_test_skips_on_a_missing_dependency():
    # Every test dependency is declared (setup.cfg's install_requires and `test` extra) and
    # imported: a missing one must fail the run, never turn parity evidence into a skip.
    assert importorskip_calls('torch = pytest.importorskip("torch")\n') == ["line 1"]
    found = {
        str(path.relative_to(REPO_ROOT)): hits
        for path in sorted((REPO_ROOT / "tests").rglob("*.py"))
        if (hits := importorskip_calls(path.read_text(encoding="utf-8")))
    }
    assert found == {}
