"""Reading inputs and forming documents: files, directories and globs → documents → sentences.

`iter_documents` streams input files and groups their lines into documents by a
`document_split` rule, one document in memory at a time. Bad inputs (missing paths, empty or
binary files, invalid UTF-8 lines, over-long lines, directories without files) are skipped and
counted, never fatal.

A directory is walked for text files only (`is_text_file_name`): names ending in `.txt`, `.text`
or `.raw` (WikiText) and names without an extension (WikiExtractor's `wiki_00`), but not hidden
files (or files in hidden directories) nor the notices that sit beside a corpus (`README`,
`NOTICE`, `LICENSE`, `COPYING`, `AUTHORS`, `CHANGELOG`, whatever their extension). Every other
file of a directory is skipped and listed in the summary. A file named by path or glob is
always read: the caller chose it.

`document_sentences` splits a document's paragraphs into sentences with `sentencex`
(Wikimedia's sentence segmenter: actively maintained, native code at tens of MB/s, abbreviation
aware, no data files to download at run time) and tokenizes them.
"""

from __future__ import annotations

import collections
import dataclasses
import glob
import os
import re
from collections.abc import Iterable, Iterator, Sequence

from keras_albert.pretraining.data.config import PretrainingDataConfig
from keras_albert.pretraining.data.vocabulary import TokenizerLike

_BINARY_PROBE_BYTES = 8192
TEXT_SUFFIXES = (".txt", ".text", ".raw")
# Names (any case, any extension) of the files that describe a corpus rather than hold it.
NOTICE_NAMES = ("readme", "notice", "license", "licence", "copying", "authors", "changelog")


@dataclasses.dataclass
class Document:
    """A document as read: paragraphs (`split_sentences`) or ready sentences (original format)."""

    index: int
    source: str
    texts: list[str]
    split_sentences: bool
    num_bytes: int = 0


@dataclasses.dataclass
class ReadCounts:
    """What reading saw: files, heading lines (document boundaries) and skipped inputs."""

    num_files: int = 0
    num_heading_lines: int = 0
    # (path, reason) -> how many times; lines are counted one by one.
    skipped: collections.Counter = dataclasses.field(default_factory=collections.Counter)


def is_text_file_name(name: str) -> bool:
    """Whether a directory's file `name` is read as text (the rule of the module docstring)."""
    stem, suffix = os.path.splitext(name)
    if name.startswith(".") or stem.split(".")[0].lower() in NOTICE_NAMES:
        return False
    return suffix == "" or suffix.lower() in TEXT_SUFFIXES


def expand_inputs(inputs: Sequence[str], skipped: collections.Counter | None = None) -> list[str]:
    """Files named by `inputs` (paths, directories walked recursively, globs), sorted per input.

    A directory yields its text files only (`is_text_file_name`); each other file is recorded
    in `skipped`, as is a path that matches nothing or a directory without text files.
    """
    skipped = collections.Counter() if skipped is None else skipped
    files: list[str] = []
    for item in inputs:
        if os.path.isdir(item):
            found = []
            for root, directories, names in os.walk(item):
                directories[:] = sorted(d for d in directories if not d.startswith("."))
                for name in names:
                    path = os.path.join(root, name)
                    if is_text_file_name(name):
                        found.append(path)
                    else:
                        skipped[(path, "not a text file name (in a directory)")] += 1
            if not found:
                skipped[(item, "directory contains no text files")] += 1
            files.extend(sorted(found))
        elif os.path.isfile(item):
            files.append(item)
        else:
            matches = sorted(p for p in glob.glob(item, recursive=True) if os.path.isfile(p))
            if not matches:
                skipped[(item, "no such file, directory or matching glob")] += 1
            files.extend(matches)
    return files


def _read_lines(
    path: str, max_line_bytes: int, skipped: collections.Counter
) -> Iterator[tuple[str, int]]:
    """Decoded lines of one file (without line ends), each with the bytes read since the
    previous one (skipped lines included, for progress); bad files and lines are counted."""
    try:
        handle = open(path, "rb")
    except OSError as error:
        skipped[(path, f"cannot open ({error.strerror})")] += 1
        return
    with handle:
        probe = handle.read(_BINARY_PROBE_BYTES)
        if not probe:
            skipped[(path, "empty file")] += 1
            return
        if b"\x00" in probe:
            skipped[(path, "binary file (NUL bytes)")] += 1
            return
        handle.seek(0)
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
    files: Iterable[str],
    config: PretrainingDataConfig,
    summary: ReadCounts | None = None,
) -> Iterator[Document]:
    """Documents of `files` in order, by `config.document_split`; one document in memory.

    Paragraphs (blank-line separated, line-wrapping undone) are kept apart so a sentence never
    spans two of them. Skips and heading lines are counted in `summary`.
    """
    summary = ReadCounts() if summary is None else summary
    heading = re.compile(config.heading_pattern)
    section = re.compile(config.section_pattern)
    split = config.document_split
    index = 0
    texts: list[str] = []
    paragraph: list[str] = []
    num_bytes = 0
    source = ""

    def end_paragraph():
        if paragraph:
            texts.append(" ".join(" ".join(paragraph).split()))
            paragraph.clear()

    def end_document() -> Document | None:
        nonlocal index, num_bytes
        end_paragraph()
        document = None
        if texts:
            document = Document(index, source, list(texts), split != "original", num_bytes)
            index += 1
            num_bytes = 0
        texts.clear()
        return document

    for path in files:
        summary.num_files += 1
        source = path
        for line, line_bytes in _read_lines(path, config.max_line_bytes, summary.skipped):
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
