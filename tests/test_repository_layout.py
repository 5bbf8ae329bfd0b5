"""The library stands alone: it refers to no file of the repository checkout, and the
benchmarks call public functions only (the import direction itself is in setup.cfg). The
repository's text speaks of the project (its versions, dates and machines), never of internal
work periods or tickets by number."""

import ast
import configparser
import os
import pathlib
import re
import subprocess

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
# Top-level folders of the checkout that an installed copy does not have.
CHECKOUT_FOLDERS = ("data", "tests", "tools", "examples", "benchmarks", "docs", "runs")


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
    """`from keras_albert… / examples… import _name` and `module._name` of those modules."""
    tree = ast.parse(source)
    ours = ("keras_albert", "examples")
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
        "from examples.main_job import steps\n"
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


def _requirement_names(lines: str) -> set[str]:
    names = set()
    for line in lines.strip().splitlines():
        line = line.split("#")[0].strip()
        if line:
            names.add(re.split(r"[<>=!~\[; ]", line, maxsplit=1)[0].lower())
    return names


def _imported_top_level_modules(source: str) -> set[str]:
    """The top-level modules `source` imports, but for optional imports (inside a `try` that
    catches ImportError: e.g. torch, only to read a `pytorch_model.bin`, with a clear error)."""
    tree = ast.parse(source)
    optional = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.Try)
        and any(
            getattr(handler.type, "id", None) in ("ImportError", "ModuleNotFoundError")
            for handler in node.handlers
        )
        for statement in node.body
        for inner in ast.walk(statement)
    }
    modules = set()
    for node in ast.walk(tree):
        if id(node) in optional:
            continue
        if isinstance(node, ast.Import):
            modules.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules.add(node.module.split(".")[0])
    return modules


def test_the_library_and_the_tools_need_no_test_extra():
    # `bash tools/run.sh main` installs the library's requirements and its tensorflow extra
    # only: nothing the library, the main job (examples/) or a tool imports may come from the
    # `test` extra
    # alone (the library's own extras, `tensorflow`, `beam`, `onnx` and `hub`, are the user's
    # to install; import-linter confines beam, onnx and hub to their modules).
    config = configparser.ConfigParser()
    config.read(REPO_ROOT / "setup.cfg")
    extras = config["options.extras_require"]
    required = _requirement_names(config["options"]["install_requires"])
    for extra in ("tensorflow", "beam", "onnx", "hub"):
        required |= _requirement_names(extras[extra])
    test_only = _requirement_names(extras["test"]) - required
    import_names = {
        "keras-hub": "keras_hub",
        "pytest-xdist": "xdist",
        "import-linter": "importlinter",
    }
    test_modules = {import_names.get(name, name.replace("-", "_")) for name in test_only}
    test_modules.add("official")  # tf-models-official, which tools/run.sh installs beside it
    assert {"torch", "transformers", "keras_hub", "pytest"} <= test_modules
    found = {
        str(path.relative_to(REPO_ROOT)): sorted(used)
        for root in ("keras_albert", "tools", "examples")
        for path in sorted((REPO_ROOT / root).rglob("*.py"))
        if (used := _imported_top_level_modules(path.read_text(encoding="utf-8")) & test_modules)
    }
    assert found == {}
    run_sh = (REPO_ROOT / "tools" / "run.sh").read_text(encoding="utf-8")
    main_case = run_sh.split("  main)")[1].split(";;")[0]
    assert 'install ".[tensorflow]" library' in main_case and "test]" not in main_case


# Text that numbers an internal work period or ticket: "session N", "sessions N–M", "session_N"
# in a file name, "issue N", "(issue #N)", "(#N)", "stop N", "period N", a branch "sN-topic" or a
# scratch directory "/tmp/sN/". A measurement is named by its date and machine instead, and an
# upstream issue as owner/repo#N (google-research/albert#188). Matched on lowercased text; each
# pattern starts with a literal so that the whole tree is scanned in well under a second, and
# the character before a match is checked by `numbered_periods` (the kind of each pattern).
_SPACE = r"(?:[ \u00a0]|\n[ \t]*(?:#+|//|\*|>)?[ \t]*)+"  # spaces, or a wrap onto a comment line
PERIOD_PATTERNS = (
    (
        re.compile(r"sessions?(?:[_-]|" + _SPACE + r")?(?:[≤≥<>]=?[ \u00a0]*)?\d+"),
        "not after a letter",
    ),
    (re.compile(r"issues?" + _SPACE + r"#?\d+"), "a word, not after owner/repo"),
    (re.compile(r"(?:stop|period)s?" + _SPACE + r"\d+"), "a word"),
    # (not a Markdown link to a numbered heading: "[measured](#4-measured)")
    (re.compile(r"\(#\d+(?!-[a-z])"), "anywhere"),
    (re.compile(r"[sit]\d\d+(?:-[a-z]|/)"), "a path part"),
)
_OWNER_REPO_BEFORE = re.compile(r"[\w.-]+/[\w.-]+[ \u00a0]+$")
# Not walked when the checkout is not a git repository (no `git ls-files`).
SKIPPED_FOLDERS = {".git", ".venv", "venv", "__pycache__", ".pytest_cache", ".ruff_cache", "runs"}


def numbered_periods(text: str) -> list[str]:
    """`line N: match` for each place of `text` that numbers a work period or ticket."""
    lowered = text.lower()
    found = []
    for pattern, kind in PERIOD_PATTERNS:
        for match in pattern.finditer(lowered):
            before = lowered[match.start() - 1] if match.start() else " "
            if kind == "not after a letter" and before.isalpha():
                continue
            if kind.startswith("a word") and (before.isalnum() or before == "_"):
                continue
            if kind == "a word, not after owner/repo" and _OWNER_REPO_BEFORE.search(
                lowered, max(0, match.start() - 200), match.start()
            ):
                continue
            if kind == "a path part" and (before.isalnum() or before in "_.-"):
                continue
            line = lowered.count("\n", 0, match.start()) + 1
            found.append((line, match.group().replace("\n", " ")))
    return [f"line {line}: {what!r}" for line, what in sorted(found)]


def repository_text_files(root: pathlib.Path) -> dict[str, str]:
    """Every text file of the checkout at `root`, by path relative to it: the files git tracks,
    or, where `root` is not a git checkout (or git is missing), the tree without
    `SKIPPED_FOLDERS`. A file with a NUL byte in its first 8 KiB is binary and left out."""
    try:
        if not (root / ".git").exists():  # a directory, or a worktree's file
            raise FileNotFoundError(root / ".git")
        listed = subprocess.run(
            ["git", "ls-files", "-z"], cwd=root, capture_output=True, check=True
        ).stdout
        paths = [root / name for name in os.fsdecode(listed).split("\0") if name]
    except (OSError, subprocess.CalledProcessError):
        paths = []
        for folder, folders, files in os.walk(root):
            folders[:] = [
                name
                for name in folders
                if name not in SKIPPED_FOLDERS and not name.endswith(".egg-info")
            ]
            paths.extend(pathlib.Path(folder, name) for name in files)
    texts = {}
    for path in sorted(paths):
        if not path.is_file() or path.is_symlink():
            continue
        data = path.read_bytes()
        if b"\0" not in data[:8192]:
            texts[path.relative_to(root).as_posix()] = data.decode("utf-8", errors="replace")
    return texts


def test_the_checker_finds_numbered_work_periods(tmp_path):
    # "§" keeps this file's own text clean; it is taken out of what gets planted.
    planted = [
        "Measured in sess§ion 42 on the AVX-512 host.",
        "the 5 × 5 sweep of Sess§ions 39–42",
        "Sess§ion 41's convergence run",
        "all the runs of sess§ions ≤ 22",
        "raw: benchmarks/results/inference_precision_sess§ion40.json",
        "see precision_convergence_sess§ion-41.png",
        "No id column chosen (iss§ue 19).",
        "Iss§ue 37's floor, and iss§ue #16",
        "as CI's host was in st§op 49",
        "measured in work peri§od 3",
        "ticket (§#16)",
        "merged from branch s4§2-precision",
        "--output-dir /tmp/s4§1/conv",
        "runs/t2§7/e",
        "a paragraph wrapped after sess§ion\n  40 still counts",
    ]
    clean = [
        "google-research/albert#188, onnx/onnx#3295 and keras-team/keras#20585",
        "onnx/onnx iss§ue 3295 is upstream's",
        "the TF1 session loader; a session-wide tokenizer; tf.compat.v1.Session(graph)",
        "quarter sessions at Taunton; the issue of all depended on one question",
        "measured on 2026-11-26 on an AMD EPYC family 26 (avx512_bf16); s32[8,16]; p99",
        "float32/bfloat16 and bfloat16-s0 keys; wnut17/dev.conll; a full stop. 1,000 labels",
        "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String",
        "the recording sessions \t1",
        "([measured](#4-measured), [the projection](#5-projection-for-bookcorpus))",
    ]
    (tmp_path / "docs").mkdir()
    for path, lines in (("docs/planted.md", planted), ("clean.py", clean)):
        text = "\n".join(lines).replace("§", "") + "\n"
        (tmp_path / path).write_text(text, encoding="utf-8")
    (tmp_path / "plot.png").write_bytes(b"\x89PNG\0" + "sess§ion 42".replace("§", "").encode())
    for skipped in (".venv", "runs", "__pycache__"):
        (tmp_path / skipped).mkdir()
        (tmp_path / skipped / "notes.md").write_text("sess§ion 42\n".replace("§", ""), "utf-8")
    # Not a git checkout: the tree is walked.
    texts = repository_text_files(tmp_path)
    assert sorted(texts) == ["clean.py", "docs/planted.md"]
    hits = numbered_periods(texts["docs/planted.md"])
    lines = [int(hit.split(":")[0].removeprefix("line ")) for hit in hits]
    assert sorted(set(lines)) == list(range(1, len(planted) + 1)), hits
    assert numbered_periods(texts["clean.py"]) == []


def test_no_text_numbers_a_work_period_or_ticket():
    texts = repository_text_files(REPO_ROOT)
    assert "README.md" in texts and "tests/test_repository_layout.py" in texts
    found = {path: hits for path, text in texts.items() if (hits := numbered_periods(text))}
    assert found == {}, (
        "name a measurement by its date and machine, an upstream issue as owner/repo#N"
    )
