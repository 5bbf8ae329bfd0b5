"""Task-adaptive pretraining text: a task's unlabeled sentences + WikiText + books, with a held-out
slice that never reaches pretraining.

`build_task_corpus` writes two plain-text files for `create_pretraining_data` with
`document_split="blank_line"` (`DOCUMENT_SPLIT`): one paragraph per line, a blank line after
each, every paragraph one document:

- books (Gutenberg-style novels): their paragraphs, chapter headings dropped. A paragraph is the
  longest run of text whose sentences certainly follow each other, so SOP keeps real order.
- WikiText (` = Title = ` articles, ` = = Section = = ` headings): the paragraphs of its
  articles, headings dropped; the last `held_out_articles` articles are held out.
- the task's training file (a GLUE TSV): the text column(s) only, read with `labeled=False`, so
  labels never reach the corpus. Each sentence is its own document: GLUE's SST-2 rows are
  shuffled phrases of different reviews, so gluing them together would make "consecutive"
  segments that are not, and SOP would learn noise; a one-sentence document still gives SOP
  (and NSP) pairs, cut inside the sentence at a word start (`pairs.py`). Exact repeats are kept
  once (counted).

Documents are shuffled (seeded) across sources in each file, so an NSP negative (a segment of a
recent document, `nsp_partner_window`) comes from a random other document, as in the paper.
Held-out text is whole books (`held_out_books`) and WikiText's last articles; a held-out
paragraph that also occurs in the training text (a short line of dialogue, say) is dropped from
the held-out file (counted), so held-out text never appears in pretraining data.
"""

from __future__ import annotations

import dataclasses
import os
import random
import re
from collections.abc import Sequence

from keras_albert import validation
from keras_albert.pretraining.data.config import (
    DEFAULT_HEADING_PATTERN,
    DEFAULT_SECTION_PATTERN,
)

DOCUMENT_SPLIT = "blank_line"

_WIKITEXT_ARTICLE = re.compile(r"^ = [^=].*[^=] = $")


@dataclasses.dataclass(frozen=True)
class TaskCorpus:
    """What `build_task_corpus` wrote and what it counted.

    Attributes:
        train_file: the pretraining text (documents separated by blank lines).
        held_out_file: the held-out text, disjoint from `train_file` paragraph by paragraph.
        documents: documents written per source, e.g. `{"train/task": 60000, ...}`.
        dropped: what was left out and why, e.g. `{"task: repeated sentence": 800}`.
    """

    train_file: str
    held_out_file: str
    documents: dict
    dropped: dict


def book_paragraphs(path: str, dropped: dict | None = None) -> list[str]:
    """The paragraphs of a Gutenberg-style book, line wrapping undone, headings dropped."""
    heading = re.compile(DEFAULT_HEADING_PATTERN)
    section = re.compile(DEFAULT_SECTION_PATTERN)
    dropped = {} if dropped is None else dropped
    paragraphs, lines = [], []
    with open(path, encoding="utf-8-sig") as file:
        for line in [*file, ""]:
            if line.strip() and (heading.match(line) or section.match(line)):
                dropped["book: heading line"] = dropped.get("book: heading line", 0) + 1
                continue
            if line.strip():
                lines.append(line.strip())
            elif lines:
                paragraphs.append(" ".join(" ".join(lines).split()))
                lines = []
    return paragraphs


def wikitext_articles(path: str, dropped: dict | None = None) -> list[list[str]]:
    """WikiText's articles in file order, each its paragraphs (one per line); headings dropped."""
    section = re.compile(DEFAULT_SECTION_PATTERN)
    dropped = {} if dropped is None else dropped
    articles: list[list[str]] = []
    with open(path, encoding="utf-8") as file:
        for line in file:
            if _WIKITEXT_ARTICLE.match(line.rstrip("\n")):
                articles.append([])
            elif section.match(line):
                dropped["wikitext: section heading"] = (
                    dropped.get("wikitext: section heading", 0) + 1
                )
            elif line.strip():
                if not articles:
                    raise ValueError(
                        f"`wikitext` must start with an article heading ` = Title = `. "
                        f"Received: wikitext={path!r} with text before the first heading"
                    )
                articles[-1].append(" ".join(line.split()))
    return articles


def task_sentences(path: str, dataset: str, dropped: dict | None = None) -> list[str]:
    """The distinct sentences of a GLUE task file's text column(s), in file order; the label
    column is never read (`read_examples(..., labeled=False)`)."""
    from keras_albert.tasks.classification.reader import read_examples

    examples = read_examples(path, dataset, labeled=False, progress=False)
    dropped = {} if dropped is None else dropped
    seen, sentences = set(), []
    for row in zip(*examples.texts, strict=True):
        for text in row:
            text = " ".join(text.split())
            if not text:
                dropped["task: empty sentence"] = dropped.get("task: empty sentence", 0) + 1
            elif text in seen:
                dropped["task: repeated sentence"] = dropped.get("task: repeated sentence", 0) + 1
            else:
                seen.add(text)
                sentences.append(text)
    return sentences


def build_task_corpus(
    output_dir: str,
    *,
    books: Sequence[str] = (),
    held_out_books: Sequence[str] = (),
    wikitext: str | None = None,
    held_out_articles: int = 0,
    task_train_data: str | None = None,
    dataset: str = "SST-2",
    seed: int = 0,
) -> TaskCorpus:
    """Writes `output_dir/train.txt` and `output_dir/held_out.txt` (see the module docstring).

    Args:
        output_dir: where the two files go (created).
        books: Gutenberg-style books for pretraining.
        held_out_books: books for the held-out file only.
        wikitext: a WikiText `*.raw` file (` = Title = ` articles).
        held_out_articles: WikiText's last this many articles go to the held-out file.
        task_train_data: the task's training file; only its text columns are read.
        dataset: the GLUE task name of `task_train_data` (says its text columns).
        seed: the seed of the document shuffle.
    """
    validation.require_int("held_out_articles", held_out_articles, 0)
    validation.require_int("seed", seed)
    for name, paths in (("books", books), ("held_out_books", held_out_books)):
        for path in paths:
            validation.require_file(name, path)
    if wikitext is not None:
        validation.require_file("wikitext", wikitext)
    if task_train_data is not None:
        validation.require_file("task_train_data", task_train_data)
    dropped: dict = {}
    train: dict[str, list[str]] = {"books": [], "wikitext": [], "task": []}
    held_out: dict[str, list[str]] = {"books": [], "wikitext": []}
    for path in books:
        train["books"].extend(book_paragraphs(path, dropped))
    for path in held_out_books:
        held_out["books"].extend(book_paragraphs(path, dropped))
    if wikitext is not None:
        articles = wikitext_articles(wikitext, dropped)
        if held_out_articles >= len(articles):
            raise ValueError(
                f"`held_out_articles` must be below the {len(articles)} articles of "
                f"wikitext={wikitext!r}. Received: held_out_articles={held_out_articles}"
            )
        split = len(articles) - held_out_articles
        train["wikitext"] = [p for article in articles[:split] for p in article]
        held_out["wikitext"] = [p for article in articles[split:] for p in article]
    if task_train_data is not None:
        train["task"] = task_sentences(task_train_data, dataset, dropped)

    train_text = {p for paragraphs in train.values() for p in paragraphs}
    for source, paragraphs in held_out.items():
        kept = [p for p in paragraphs if p not in train_text]
        if len(kept) < len(paragraphs):
            dropped[f"held-out {source}: paragraph also in the training text"] = len(
                paragraphs
            ) - len(kept)
        held_out[source] = kept

    os.makedirs(output_dir, exist_ok=True)
    files = {}
    for split_name, sources in (("train", train), ("held_out", held_out)):
        documents = [p for paragraphs in sources.values() for p in paragraphs]
        random.Random(f"{seed}/{split_name}").shuffle(documents)
        files[split_name] = _write_documents(
            os.path.join(output_dir, f"{split_name}.txt"), documents
        )
    counts = {f"train/{k}": len(v) for k, v in train.items()}
    counts.update({f"held_out/{k}": len(v) for k, v in held_out.items()})
    return TaskCorpus(files["train"], files["held_out"], counts, dropped)


def _write_documents(path: str, documents: list[str]) -> str:
    """One document per line, a blank line after each; written under a temporary name first."""
    partial = f"{path}.incomplete"
    with open(partial, "w", encoding="utf-8") as file:
        for document in documents:
            file.write(f"{document}\n\n")
    os.replace(partial, path)
    return path
