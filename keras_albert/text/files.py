"""Writing finished text artifacts atomically (a reader never sees half a file), on any file
system `tf.io.gfile` knows: local paths, `gs://` and the others TensorFlow registers."""

import os
import posixpath
import uuid

import tensorflow as tf


def write_text_atomically(path: str | os.PathLike, text: str) -> None:
    """Writes `text` (UTF-8) to a temporary file beside `path`, then renames it over `path`
    (on a local disk an atomic rename; on object stores such as `gs://` a copy that readers
    see whole or not at all)."""
    path = os.fspath(path)
    directory = directory_of(path)
    tf.io.gfile.makedirs(directory)
    temporary = _join(directory, f".tmp-{uuid.uuid4().hex}")
    try:
        with tf.io.gfile.GFile(temporary, "w") as file:
            file.write(text.encode("utf-8"))
        tf.io.gfile.rename(temporary, path, overwrite=True)
    except BaseException:
        if tf.io.gfile.exists(temporary):
            tf.io.gfile.remove(temporary)
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
