"""Test configuration shared by the whole suite.

- `--run-slow` (or KERAS_ALBERT_RUN_SLOW=1) runs the tests marked `slow`; without it they are
  skipped, and such a skip is allowed.
- A skip is a failure unless the test is marked `allowed_skip` (or is a gated slow test): a
  missing test dependency or a broken fixture must not turn parity evidence into a quiet "s".
  The session ends with exit status 1 and lists the skips that were not allowed.
- The tokenizer fixtures (`albert_tokenizer`, `albert_tokenizer_hf_quotes`, `hf_reference`)
  are module-scoped, not session-scoped: a test that seeds TensorFlow
  (`keras.utils.set_random_seed`, as the training drivers do) clears TensorFlow's kernel cache,
  which drops a SentencePiece resource made before it; a session-wide tokenizer would then fail
  in whichever module happens to run next (the order differs under pytest-xdist).
- With the `CI` environment variable set, Hypothesis runs derandomized (the "ci" profile), so
  a red CI run replays the same examples.
"""

import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import pytest  # noqa: E402
from hypothesis import settings  # noqa: E402

from tests.text.text_data import ALBERT_MODEL, HuggingFaceReference  # noqa: E402

settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

ALLOWED_SKIP = "allowed_skip"
_unallowed_skips = []


@pytest.fixture(scope="module")
def albert_tokenizer():
    from keras_albert.text.tokenizer import AlbertTokenizer

    return AlbertTokenizer(ALBERT_MODEL)


@pytest.fixture(scope="module")
def albert_tokenizer_hf_quotes():
    """The tokenizer with Hugging Face's extra quote normalization, for parity with it."""
    from keras_albert.text.tokenizer import AlbertTokenizer

    return AlbertTokenizer(ALBERT_MODEL, normalize_quotes=True)


@pytest.fixture(scope="session")
def hf_reference():
    return HuggingFaceReference(ALBERT_MODEL)


def pytest_addoption(parser):
    parser.addoption(
        "--run-slow", action="store_true", default=False, help="also run tests marked slow"
    )


# The test files that take longest (`--durations`), longest first, then those that are long
# only with `--run-slow` (CI). pytest-xdist gives whole files to its workers in collection
# order (`--dist loadfile`); started last, one of these would keep a worker busy minutes after
# the other ran out of files.
LONGEST_FILES_FIRST = (
    "tests/test_guides.py",
    "tests/test_every_cpu.py",
    "tests/finetuning/test_resume.py",
    "tests/pretraining/test_driver.py",
    "tests/finetuning/test_driver.py",
    "tests/finetuning/test_precision.py",
    "tests/test_tool_errors.py",
    "tests/export/test_task_exports.py",
    "tests/finetuning/test_tasks.py",
    "tests/export/test_serving_export.py",
    "tests/export/test_client.py",
    "tests/export/test_tfhub_export.py",
    "tests/tasks/classification/test_reader.py",
    "tests/backends/test_tf1_checkpoints.py",
    "tests/test_main_job.py",
    "tests/backends/test_parity.py",
    "tests/export/test_wordpiece_task_exports.py",
)


# Files that share a costly session fixture, given to one worker together (as if one file) so
# that it is built once, not once per worker: the exports of tests/export/conftest.py `served`
# (four SavedModels and a serving process, ≈ 20 s).
ONE_WORKER = {
    path: "tests/export (served)"
    for path in (
        "tests/export/test_client.py",
        "tests/export/test_serving_export.py",
        "tests/export/test_serving_layout.py",
    )
}


@pytest.hookimpl(tryfirst=True)
def pytest_xdist_make_scheduler(config, log):
    """`--dist loadfile`, with the files of `ONE_WORKER` as one unit; other modes as xdist."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class SharedFixtureScheduling(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = super()._split_scope(nodeid)
            return ONE_WORKER.get(path, path)

    return SharedFixtureScheduling(config, log)


def _file_rank(item) -> int:
    path = item.nodeid.split("::")[0]
    return (
        LONGEST_FILES_FIRST.index(path) if path in LONGEST_FILES_FIRST else len(LONGEST_FILES_FIRST)
    )


def pytest_collection_modifyitems(config, items):
    items.sort(key=_file_rank)  # stable: every other file keeps its place
    if config.getoption("--run-slow") or os.environ.get("KERAS_ALBERT_RUN_SLOW") == "1":
        return
    reason = "slow: run with --run-slow or KERAS_ALBERT_RUN_SLOW=1"
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(pytest.mark.skip(reason=reason))
            item.add_marker(pytest.mark.allowed_skip(reason))


LONG_COMPARISON = 10_000


def pytest_assertrepr_compare(op, left, right):
    """Two long strings, byte strings or lists that differ: their lengths and the first offset
    where they differ, instead of pytest's difflib diff (quadratic: two 760 KB files would keep
    a worker busy for hours, and the run would never end)."""
    sequences = (str, bytes, list, tuple)
    if op != "==" or not isinstance(left, sequences) or type(left) is not type(right):
        return None
    if max(len(left), len(right)) <= LONG_COMPARISON:
        return None
    pairs = enumerate(zip(left, right, strict=False))
    first = next((i for i, (a, b) in pairs if a != b), min(len(left), len(right)))
    return [
        f"two {type(left).__name__} of lengths {len(left)} and {len(right)} differ",
        f"first difference at offset {first}:",
        f"  left:  {left[first : first + 40]!r}",
        f"  right: {right[first : first + 40]!r}",
    ]


def _skip_reason(report) -> str:
    if isinstance(report.longrepr, tuple):  # (path, line, "Skipped: reason")
        return str(report.longrepr[2])
    return str(report.longrepr)


def pytest_collectreport(report):
    # A whole module skipped at import (e.g. pytest.importorskip at module level).
    if report.skipped:
        _unallowed_skips.append(f"{report.nodeid}: {_skip_reason(report)}")


def pytest_runtest_logreport(report):
    if not report.skipped or hasattr(report, "wasxfail"):
        return
    if ALLOWED_SKIP not in report.keywords:
        _unallowed_skips.append(f"{report.nodeid}: {_skip_reason(report)}")


def pytest_terminal_summary(terminalreporter):
    if _unallowed_skips:
        terminalreporter.section("skips not marked allowed_skip (these fail the run)", red=True)
        for line in _unallowed_skips:
            terminalreporter.line(line)


def pytest_sessionfinish(session, exitstatus):
    if _unallowed_skips and exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
