"""Reading inputs and forming documents: files, directories and globs → documents → sentences.

`iter_documents` streams input files and groups their lines into documents by a
`document_split` rule, one document in memory at a time. Bad inputs (missing paths, empty or
binary files, invalid UTF-8 lines, over-long lines, directories without files) are skipped and
counted, never fatal.

A directory is walked for text files only (`is_text_file_name`): names ending in `.txt`, `.text`
or `.raw` (WikiText) and names without an extension (WikiExtractor's `wiki_00`), compressed or
not (`.gz`, `.bz2`), but not hidden files (or files in hidden directories) nor the notices that
sit beside a corpus (`README`, `NOTICE`, `LICENSE`, `COPYING`, `AUTHORS`, `CHANGELOG`, whatever
their extension). Every other file of a directory is skipped and listed in the summary. A file
named by path or glob is always read: the caller chose it. Files ending in `.gz` or `.bz2` are
decompressed.

Every file has a key, its path relative to the input that named it (a directory or a glob's
fixed prefix; a file's own name when named by path), and every document the key of its file
plus its ordinal there (`emma.txt:3`). Example creation is seeded by that key alone, so a
document's examples do not depend on which worker reads it, in which order, nor on where the
corpus lives (a local folder or `gs://`).

Paths go through a `FileSystemLike`: `LocalFiles` here, Beam's FileSystems in `beam.py`.

`document_sentences` splits a document's paragraphs into sentences with `sentencex`
(Wikimedia's sentence segmenter: actively maintained, native code at tens of MB/s, abbreviation
aware, no data files to download at run time) and tokenizes them.
"""

from __future__ import annotations

import bz2
import collections
import dataclasses
import glob
import gzip
import os
import re
from collections.abc import Iterable, Iterator, Sequence
from typing import BinaryIO, Protocol

from keras_albert.pretraining.data.config import PretrainingDataConfig
from keras_albert.pretraining.data.vocabulary import TokenizerLike

_BINARY_PROBE_BYTES = 8192
TEXT_SUFFIXES = (".txt", ".text", ".raw")
COMPRESSED_SUFFIXES = (".gz", ".bz2")
# Names (any case, any extension) of the files that describe a corpus rather than hold it.
NOTICE_NAMES = ("readme", "notice", "license", "licence", "copying", "authors", "changelog")


@dataclasses.dataclass
class Document:
    """A document as read: paragraphs (`split_sentences`) or ready sentences (original format).

    `key` is `{file key}:{ordinal in the file}`, the seed of its examples; `index` counts the
    documents of one `iter_documents` call.
    """

    index: int
    source: str
    texts: list[str]
    split_sentences: bool
    num_bytes: int = 0
    key: str = ""


@dataclasses.dataclass(frozen=True)
class InputFile:
    """A file to read and its key: the path relative to the input that named it."""

    path: str
    key: str


class FileSystemLike(Protocol):
    """What reading needs of a file system (`LocalFiles`; Beam's in `beam.py`)."""

    def is_dir(self, path: str) -> bool: ...

    def is_file(self, path: str) -> bool: ...

    def walk(self, path: str) -> list[str]:
        """Files under the directory `path`, recursively, outside hidden directories."""
        ...

    def glob(self, pattern: str) -> list[str]: ...

    def open(self, path: str) -> BinaryIO: ...


class LocalFiles:
    """The local file system."""

    def is_dir(self, path: str) -> bool:
        return os.path.isdir(path)

    def is_file(self, path: str) -> bool:
        return os.path.isfile(path)

    def walk(self, path: str) -> list[str]:
        found = []
        for root, directories, names in os.walk(path):
            directories[:] = sorted(d for d in directories if not d.startswith("."))
            found.extend(os.path.join(root, name) for name in names)
        return found

    def glob(self, pattern: str) -> list[str]:
        return [p for p in glob.glob(pattern, recursive=True) if os.path.isfile(p)]

    def open(self, path: str) -> BinaryIO:
        return open(path, "rb")


LOCAL_FILES = LocalFiles()


@dataclasses.dataclass
class ReadCounts:
    """What reading saw: files, heading lines (document boundaries) and skipped inputs."""

    num_files: int = 0
    num_heading_lines: int = 0
    # (path, reason) -> how many times; lines are counted one by one.
    skipped: collections.Counter = dataclasses.field(default_factory=collections.Counter)


def is_text_file_name(name: str) -> bool:
    """Whether a directory's file `name` is read as text (the rule of the module docstring;
    `.gz` or `.bz2` after the name does not change it)."""
    stem, suffix = os.path.splitext(name)
    if suffix in COMPRESSED_SUFFIXES:
        stem, suffix = os.path.splitext(stem)
    if name.startswith(".") or stem.split(".")[0].lower() in NOTICE_NAMES:
        return False
    return suffix == "" or suffix.lower() in TEXT_SUFFIXES


def _glob_root(pattern: str) -> str:
    """The directory part of a glob before its first wildcard (`data/*/x.txt` → `data`)."""
    parts = pattern.split("/")
    fixed = next(i for i, part in enumerate(parts) if glob.has_magic(part))
    return "/".join(parts[:fixed])


def _relative(path: str, root: str) -> str:
    return path[len(root) :].lstrip("/") if root and path.startswith(root) else path


def expand_input_files(
    inputs: Sequence[str],
    skipped: collections.Counter | None = None,
    files: FileSystemLike = LOCAL_FILES,
) -> list[InputFile]:
    """Files named by `inputs` (paths, directories walked recursively, globs), sorted per
    input, each with its key (the module docstring; a key seen before gets `@2`, `@3`, ...).

    A directory yields its text files only (`is_text_file_name`); each other file is recorded
    in `skipped`, as is a path that matches nothing or a directory without text files.
    """
    skipped = collections.Counter() if skipped is None else skipped
    found: list[InputFile] = []
    for item in inputs:
        if files.is_dir(item):
            root = item.rstrip("/")
            text_files = []
            for path in files.walk(root):
                if is_text_file_name(path.rsplit("/", 1)[-1]):
                    text_files.append(path)
                else:
                    skipped[(path, "not a text file name (in a directory)")] += 1
            if not text_files:
                skipped[(item, "directory contains no text files")] += 1
            found.extend(InputFile(p, _relative(p, root)) for p in sorted(text_files))
        elif files.is_file(item):
            found.append(InputFile(item, item.rsplit("/", 1)[-1]))
        else:
            matches = sorted(files.glob(item)) if glob.has_magic(item) else []
            if not matches:
                skipped[(item, "no such file, directory or matching glob")] += 1
                continue
            root = _glob_root(item)
            found.extend(InputFile(p, _relative(p, root)) for p in matches)
    seen: collections.Counter = collections.Counter()
    unique = []
    for file in found:
        seen[file.key] += 1
        key = file.key if seen[file.key] == 1 else f"{file.key}@{seen[file.key]}"
        unique.append(InputFile(file.path, key))
    return unique


def expand_inputs(inputs: Sequence[str], skipped: collections.Counter | None = None) -> list[str]:
    """The paths of `expand_input_files` (local files)."""
    return [file.path for file in expand_input_files(inputs, skipped)]


def open_decompressed(path: str, files: FileSystemLike = LOCAL_FILES) -> BinaryIO:
    """`path` opened for reading, through gzip or bz2 when its name ends in `.gz` or `.bz2`."""
    handle = files.open(path)
    if path.endswith(COMPRESSED_SUFFIXES[0]):
        return gzip.GzipFile(fileobj=handle, mode="rb")
    if path.endswith(COMPRESSED_SUFFIXES[1]):
        return bz2.BZ2File(handle, mode="rb")
    return handle


def _read_lines(
    path: str, max_line_bytes: int, skipped: collections.Counter, files: FileSystemLike
) -> Iterator[tuple[str, int]]:
    """Decoded lines of one file (without line ends), each with the bytes read since the
    previous one (skipped lines included, for progress); bad files and lines are counted,
    and a file that fails midway (a corrupt archive) keeps the lines read before."""
    try:
        with open_decompressed(path, files) as handle:
            probe = handle.read(_BINARY_PROBE_BYTES)
        if not probe:
            skipped[(path, "empty file")] += 1
            return
        if b"\x00" in probe:
            skipped[(path, "binary file (NUL bytes)")] += 1
            return
        # Opened again rather than rewound: not every stream (a remote one, an archive's) seeks.
        with open_decompressed(path, files) as handle:
            yield from _decoded_lines(handle, path, max_line_bytes, skipped)
    except (OSError, EOFError, ValueError) as error:
        reason = getattr(error, "strerror", None) or str(error).splitlines()[0]
        skipped[(path, f"cannot read ({reason})")] += 1


def _decoded_lines(
    handle: BinaryIO, path: str, max_line_bytes: int, skipped: collections.Counter
) -> Iterator[tuple[str, int]]:
    line_number = 0
    num_bytes = 0
    while True:
        # Bounded read: a 10 MB "line" never sits in memory whole.
        raw = handle.readline(max_line_bytes + 1)
        if not raw:
            return
        line_number += 1
        num_bytes += len(raw)
        if len(raw) > max_line_bytes and not raw.endswith(b"\n"):
            while raw and not raw.endswith(b"\n"):
                raw = handle.readline(max_line_bytes + 1)
                num_bytes += len(raw)
            skipped[(path, f"line longer than {max_line_bytes} bytes")] += 1
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            skipped[(path, "line with invalid UTF-8")] += 1
            continue
        if line_number == 1:
            text = text.removeprefix("\ufeff")
        yield text.rstrip("\r\n"), num_bytes
        num_bytes = 0


def iter_documents(
    files: Iterable[str | InputFile],
    config: PretrainingDataConfig,
    summary: ReadCounts | None = None,
    file_system: FileSystemLike = LOCAL_FILES,
) -> Iterator[Document]:
    """Documents of `files` in order, by `config.document_split`; one document in memory.

    Paragraphs (blank-line separated, line-wrapping undone) are kept apart so a sentence never
    spans two of them. Skips and heading lines are counted in `summary`. A plain path's key is
    its file name.
    """
    summary = ReadCounts() if summary is None else summary
    heading = re.compile(config.heading_pattern)
    section = re.compile(config.section_pattern)
    split = config.document_split
    index = 0
    texts: list[str] = []
    paragraph: list[str] = []
    num_bytes = 0
    source = file_key = ""
    ordinal = 0

    def end_paragraph():
        if paragraph:
            texts.append(" ".join(" ".join(paragraph).split()))
            paragraph.clear()

    def end_document() -> Document | None:
        nonlocal index, num_bytes, ordinal
        end_paragraph()
        document = None
        if texts:
            key = f"{file_key}:{ordinal}"
            document = Document(index, source, list(texts), split != "original", num_bytes, key)
            index += 1
            ordinal += 1
            num_bytes = 0
        texts.clear()
        return document

    for file in files:
        if not isinstance(file, InputFile):
            file = InputFile(file, os.path.basename(file))
        summary.num_files += 1
        source, file_key, ordinal = file.path, file.key, 0
        lines = _read_lines(file.path, config.max_line_bytes, summary.skipped, file_system)
        for line, line_bytes in lines:
            num_bytes += line_bytes
            blank = not line.strip()
            if split == "original":
                if blank:
                    document = end_document()
                    if document:
                        yield document
                else:
                    texts.append(" ".join(line.split()))
                continue
            if split == "heading" and not blank and heading.match(line):
                summary.num_heading_lines += 1
                document = end_document()
                if document:
                    yield document
                continue
            if not blank and section.match(line):
                summary.num_heading_lines += 1
                end_paragraph()
                continue
            if blank:
                end_paragraph()
                if split == "blank_line":
                    document = end_document()
                    if document:
                        yield document
            else:
                paragraph.append(line)
        # A file always ends its last document: documents never span files.
        document = end_document()
        if document:
            yield document


def document_sentences(
    document: Document, tokenizer: TokenizerLike, language: str = "en"
) -> list[list[int]]:
    """Token ids of the document's sentences (paragraphs split by `sentencex`); none empty."""
    if document.split_sentences:
        import sentencex

        texts = [s.strip() for p in document.texts for s in sentencex.segment(language, p)]
    else:
        texts = document.texts
    return [ids for ids in (tokenizer.encode(t) for t in texts if t) if ids]
