"""Writing finished artifacts atomically (a reader never sees half of one): text on a local
disk or any file system `tf.io.gfile` knows (`gs://` and the others TensorFlow registers; only
those need TensorFlow), and whole files or directories (a converted checkpoint, an export)
written beside their path and renamed into place (`write_atomically`)."""

from __future__ import annotations

import contextlib
import os
import posixpath
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterator

from keras_albert.directories import first_existing, require_new_directory
from keras_albert.lazy import require_tensorflow


def write_text_atomically(path: str | os.PathLike, text: str) -> None:
    """Writes `text` (UTF-8) to a temporary file beside `path`, then renames it over `path`
    (on a local disk an atomic rename; on object stores such as `gs://` a copy that readers
    see whole or not at all)."""
    path = os.fspath(path)
    directory = directory_of(path)
    temporary = _join(directory, f".tmp-{uuid.uuid4().hex}")
    if not is_remote(path):
        os.makedirs(directory, exist_ok=True)
        try:
            with open(temporary, "wb") as file:
                file.write(text.encode("utf-8"))
            os.replace(temporary, path)
        except BaseException:
            if os.path.lexists(temporary):
                os.remove(temporary)
            raise
        return
    gfile = require_tensorflow("write_text_atomically").io.gfile  # gs:// and the like
    gfile.makedirs(directory)
    try:
        with gfile.GFile(temporary, "w") as file:
            file.write(text.encode("utf-8"))
        gfile.rename(temporary, path, overwrite=True)
    except BaseException:
        if gfile.exists(temporary):
            gfile.remove(temporary)
        raise


def umask() -> int:
    """The process umask: from /proc on Linux (thread-safe), else by setting it and back."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except OSError:
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def apply_umask(path: str | os.PathLike) -> None:
    """Gives `path` the permissions a plain `open` or `mkdir` would have given it under the
    process umask: `tempfile` (and safetensors, through Rust's tempfile) creates private
    0o700 directories and 0o600 files, which a server running as another user cannot read."""
    os.chmod(path, (0o777 if os.path.isdir(path) else 0o666) & ~umask())


def is_remote(path: str) -> bool:
    """Whether `path` names a file system by scheme (`gs://bucket/...`, `ram://...`)."""
    return "://" in os.fspath(path)


def directory_of(path: str) -> str:
    """The directory of `path` (absolute for local paths)."""
    path = os.fspath(path)
    if is_remote(path):
        scheme, rest = path.split("://", 1)
        return f"{scheme}://{posixpath.dirname(rest)}"
    return os.path.dirname(os.path.abspath(path))


def _join(directory: str, name: str) -> str:
    join = posixpath.join if is_remote(directory) else os.path.join
    return join(directory, name)


@contextlib.contextmanager
def temporary_sibling(
    path: str | os.PathLike, directory: bool, prefix: str | None = None
) -> Iterator[str]:
    """A hidden temporary path beside `path` (the same file system, so that a rename moves it
    into place): an empty directory when `directory`, else a free file name that ends as `path`
    does (for writers that read the suffix: `.keras`, `.weights.h5`). It is removed if the
    block raises; the block renames it."""
    path = os.path.abspath(os.fspath(path))
    parent, base = os.path.split(path)
    os.makedirs(parent, exist_ok=True)
    if directory:
        temporary = tempfile.mkdtemp(prefix=prefix or f".partial-{base}-", dir=parent)
    else:
        temporary = os.path.join(parent, f"{prefix or '.partial-'}{uuid.uuid4().hex}-{base}")
    try:
        yield temporary
    except BaseException:
        if os.path.isdir(temporary) and not os.path.islink(temporary):
            shutil.rmtree(temporary, ignore_errors=True)
        elif os.path.lexists(temporary):
            os.remove(temporary)
        raise


def write_atomically(
    path: str | os.PathLike,
    write: Callable[[str], object],
    directory: bool,
    name: str = "path",
) -> str:
    """Calls `write(temporary)` on a `temporary_sibling` of `path`, then renames it to `path`;
    returns `path`. A failed `write` (or a process that dies) leaves nothing at `path` and, on
    an exception, no temporary beside it.

    A file replaces the one at `path`. A directory (`directory=True`, `write` fills the empty
    temporary directory) goes where nothing is or an empty directory was: the rename cannot
    replace one that holds files, and nothing here deletes what it did not write, so such a
    `path` is refused (`name` in the message) before `write` runs. The result gets the process
    umask's permissions. On a remote file system (`gs://`) there is no rename of a directory:
    `write` writes `path` itself.
    """
    path = os.fspath(path)
    if is_remote(path):
        write(path)
        return path
    if directory:
        require_new_directory(name, path)
    elif os.path.isdir(path):
        raise ValueError(
            f"`{name}` must be a file name, not a directory. Received: {name}={path!r}"
        )
    elif not os.path.isdir(above := first_existing(os.path.dirname(os.path.abspath(path)))):
        raise NotADirectoryError(
            f"`{name}` must be a path below a directory, but {above!r} is a file. "
            f"Received: {name}={path!r}"
        )
    with temporary_sibling(path, directory) as temporary:
        write(temporary)
        apply_umask(temporary)  # mkdtemp makes 0o700
        if not directory:
            os.replace(temporary, path)
            return path
        try:
            os.rename(temporary, path)
        except OSError as error:
            if not os.path.isdir(path):
                raise
            # Something wrote into `path` while this was written.
            raise FileExistsError(
                f"`{name}` must be a new or empty directory, and {path!r} was filled while "
                f"it was written ({error.strerror}); nothing of this write is left."
            ) from None
    return path
