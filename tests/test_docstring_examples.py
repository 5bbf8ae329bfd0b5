"""Every `Example:` of the library's docstrings runs as written, alone: it imports what it
uses (nothing comes from the module it documents), and prints what it shows. Run from the
repository's root, where the examples find `tests/data`."""

import doctest
import importlib
import pathlib

import pytest

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGE = REPO_ROOT / "keras_albert"


def _modules_with_examples() -> list[str]:
    names = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if any(line.lstrip().startswith(">>> ") for line in path.read_text("utf-8").splitlines()):
            relative = path.relative_to(REPO_ROOT).with_suffix("")
            names.append(".".join(relative.parts))
    return names


MODULES = _modules_with_examples()


def test_the_library_has_examples():
    assert len(MODULES) > 20


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run_as_written(name, monkeypatch):
    monkeypatch.chdir(REPO_ROOT)
    module = importlib.import_module(name)
    # `globs={}`: an example sees only what it imports itself, as a reader's session would.
    tests = doctest.DocTestFinder(exclude_empty=True).find(module, name, globs={})
    tests = [test for test in tests if test.examples]
    assert tests, f"{name} has `>>>` lines that doctest does not find"
    runner = doctest.DocTestRunner(
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False
    )
    for test in tests:
        runner.run(test)
    results = runner.summarize(verbose=False)
    assert results.failed == 0, f"{results.failed} of {results.attempted} examples failed"
