"""Output directories a failed (or empty) run does not leave behind, and the checks that a
path can be one (named errors instead of `os.makedirs`'s "Not a directory")."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator


@contextlib.contextmanager
def output_directory(path: str) -> Iterator[str]:
    """Makes `path` (and its missing parents); on leaving, removes again those of them that are
    empty, whether the body finished or raised: a run that wrote nothing leaves no folder.

    An existing file at `path` is a `FileExistsError` naming it.
    """
    if os.path.exists(path) and not os.path.isdir(path):
        raise FileExistsError(
            f"`output_dir` must be a directory, not an existing file. Received: output_dir={path!r}"
        )
    created = []
    directory = os.path.abspath(path)
    while directory and not os.path.exists(directory):
        created.append(directory)
        directory = os.path.dirname(directory)
    os.makedirs(path, exist_ok=True)
    try:
        yield path
    finally:
        for directory in created:  # deepest first
            try:
                os.rmdir(directory)
            except OSError:  # not empty: the run wrote into it
                break


def require_directory(name: str, path: str | os.PathLike) -> None:
    """Fails when a file stands at `path`, or where a directory above it should be (what
    `os.makedirs` reports only as "Not a directory" or "File exists"), naming both."""
    path = os.fspath(path)
    existing = first_existing(path)
    if not os.path.isdir(existing):
        raise NotADirectoryError(
            f"`{name}` must be a directory (or a path where one can be made), but {existing!r} "
            f"is a file. Received: {name}={path!r}"
        )


def require_new_directory(name: str, path: str | os.PathLike) -> None:
    """Fails unless `path` can become a directory that a rename fills: it does not exist or is
    an empty directory (and no file stands at or above it)."""
    path = os.fspath(path)
    require_directory(name, path)
    if os.path.isdir(path) and os.listdir(path):
        entries = sorted(os.listdir(path))
        shown = ", ".join(entries[:5]) + (", ..." if len(entries) > 5 else "")
        raise FileExistsError(
            f"`{name}` must be a new or empty directory (it is written whole, then renamed "
            f"into place). Received: {name}={path!r}, which holds {shown}"
        )


def first_existing(path: str) -> str:
    """`path`, or the nearest path above it that exists."""
    existing = os.path.abspath(path)
    while not os.path.lexists(existing):
        existing = os.path.dirname(existing)
    return existing
