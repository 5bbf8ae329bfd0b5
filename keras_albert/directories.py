"""Output directories a failed (or empty) run does not leave behind."""

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
