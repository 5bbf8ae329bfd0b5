"""The wheel stands alone: built from the package's declared files, installed into a fresh
virtual environment, its `keras-albert` command runs from a directory outside the checkout,
with `keras_albert` imported from that environment, not from the checkout.

Offline: the wheel is built with the test interpreter's own setuptools (`pip wheel
--no-build-isolation`: no build requirements downloaded), installed with `--no-deps
--no-index`, and the new environment sees the test interpreter's site-packages (TensorFlow,
Keras, SentencePiece, ...) through a `.pth` file rather than `--system-site-packages`: where the
test runs in a virtual environment itself, the "system" site-packages would be the base
Python's, without them. A `.pth` line adds a directory to `sys.path` after the environment's own
site-packages and runs none of that directory's own `.pth` files, so an editable install of the
checkout there is not seen.
"""

import os
import shutil
import site
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import keras_albert
from keras_albert.commands import COMMANDS

REPO = Path(__file__).resolve().parents[1]
# What setup.cfg builds the wheel from (the package, its metadata and what they include).
BUILD_FILES = (
    "setup.cfg", "pyproject.toml", "README.md", "CHANGELOG.md", "MANIFEST.in", "LICENSE"
)  # fmt: skip


def run(command: list, cwd: Path, timeout: int = 600) -> str:
    environment = {
        name: value
        for name, value in os.environ.items()
        if name not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV")
    }
    completed = subprocess.run(
        [str(part) for part in command],
        cwd=cwd,
        env={**environment, "TF_CPP_MIN_LOG_LEVEL": "3"},
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert completed.returncode == 0, f"{command}\n{completed.stdout}\n{completed.stderr}"
    return completed.stdout


def build_wheel(work: Path) -> Path:
    source = work / "source"
    shutil.copytree(
        REPO / "keras_albert",
        source / "keras_albert",
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
    )
    for name in BUILD_FILES:
        shutil.copy(REPO / name, source / name)
    run(
        [sys.executable, "-m", "pip", "wheel", source, "--no-deps", "--no-build-isolation",
         "--no-index", "--wheel-dir", work / "dist"],
        cwd=work,
    )  # fmt: skip
    (wheel,) = (work / "dist").glob("keras_albert-*.whl")
    return wheel


@pytest.mark.slow
def test_the_wheel_installs_and_its_command_runs_outside_the_checkout(tmp_path):
    wheel = build_wheel(tmp_path)
    assert wheel.name == f"keras_albert-{keras_albert.__version__}-py3-none-any.whl"
    # The package alone (no tests, tools or data), typed, with its command.
    names = zipfile.ZipFile(wheel).namelist()
    assert {name.split("/")[0] for name in names} == {
        "keras_albert",
        f"keras_albert-{keras_albert.__version__}.dist-info",
    }
    assert "keras_albert/py.typed" in names and "keras_albert/commands/probe.py" in names
    # The Apache 2.0 text setup.cfg declares, in the wheel's metadata.
    licenses = [name for name in names if name.endswith("/LICENSE") and ".dist-info/" in name]
    assert licenses, names
    assert b"Apache License" in zipfile.ZipFile(wheel).read(licenses[0])

    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", "--without-pip", venv], cwd=tmp_path)
    python, command = venv / "bin" / "python", venv / "bin" / "keras-albert"
    # The new environment's site-packages, and the test interpreter's after it.
    venv_site = run(
        [python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], tmp_path
    )
    venv_site = venv_site.strip()
    Path(venv_site, "test_interpreter.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    run(
        [sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--no-index",
         wheel],
        cwd=tmp_path,
    )  # fmt: skip

    elsewhere = tmp_path / "elsewhere"  # outside the checkout: nothing of it on sys.path
    elsewhere.mkdir()
    imported = run([python, "-c", "import keras_albert; print(keras_albert.__file__)"], elsewhere)
    assert Path(imported.strip()).is_relative_to(venv_site), imported

    help_text = run([command, "--help"], elsewhere)
    for name in COMMANDS:
        assert f"\n  {name} " in help_text, name
    assert run([command, "export", "--help"], elsewhere).startswith("usage: keras-albert export")

    # A real command on shipped data: a small SentencePiece model from Austen's paragraphs.
    corpus = shutil.copy(REPO / "tests" / "data" / "austen_paragraphs.txt", elsewhere)
    out = run(
        [command, "train-tokenizer", "--inputs", corpus, "--vocabulary", "spm/austen.model",
         "--vocabulary-size", "200", "--num-threads", "1", "--seed", "3"],
        cwd=elsewhere,
    )  # fmt: skip
    assert "wrote spm/austen.model and spm/austen.vocab" in out
    assert (elsewhere / "spm" / "austen.model").stat().st_size > 1000
