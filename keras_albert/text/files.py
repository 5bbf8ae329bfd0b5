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
