"""The task-adaptive corpus builder: labels never reach the text, held-out text never reaches
pretraining, and each source keeps its documents."""

import pytest

from examples.main_job.corpus import build_task_corpus


def _documents(path):
    """The written documents: the non-empty lines (one document per line, blank after each)."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    assert text.endswith("\n\n") or not text
    return [line for line in text.split("\n") if line]


def _write(path, text):
    path.write_text(text, encoding="utf-8")
    return str(path)


SST2_ROWS = [
    ("a gorgeous , witty movie .", "LABEL_POSITIVE_7f3a"),
    ("a sour little movie at its core .", "LABEL_NEGATIVE_c21b"),
    ("it 's a charming journey .", "LABEL_POSITIVE_7f3a"),
    ("a sour little movie at its core .", "LABEL_NEGATIVE_c21b"),  # a repeat: kept once
]

BOOK = """CHAPTER I

Emma Woodhouse, handsome, clever, and rich,
seemed to unite some of the best blessings of existence.

"Yes."

She was the youngest of the two daughters. Her mother had died long ago.
"""

HELD_OUT_BOOK = """Chapter 1

Sir Walter Elliot never took up any book but the Baronetage.

"Yes."

Anne had been a very pretty girl. Her bloom had vanished early.
"""

# WikiText's own layout: every line starts and ends with a space.
WIKITEXT = "".join(
    f"{line}\n"
    for line in [
        " = First Article = ",
        "",
        " The first article 's first paragraph . It has two sentences . ",
        "",
        " = = A Section = = ",
        "",
        " The first article 's second paragraph . ",
        "",
        " = Second Article = ",
        "",
        " The second article , held out . ",
        "",
        " = = Another Section = = ",
        "",
        " Its last paragraph . ",
    ]
)


@pytest.fixture
def corpus(tmp_path):
    header = "sentence\tlabel\n"
    rows = "".join(f"{sentence}\t{label}\n" for sentence, label in SST2_ROWS)
    task = _write(tmp_path / "train.tsv", header + rows)
    book = _write(tmp_path / "emma.txt", BOOK)
    held_out_book = _write(tmp_path / "persuasion.txt", HELD_OUT_BOOK)
    wikitext = _write(tmp_path / "wiki.raw", WIKITEXT)
    return build_task_corpus(
        str(tmp_path / "corpus"),
        books=[book],
        held_out_books=[held_out_book],
        wikitext=wikitext,
        held_out_articles=1,
        task_train_data=task,
        dataset="SST-2",
        seed=3,
    )


def test_labels_never_reach_the_text(corpus):
    text = open(corpus.train_file, encoding="utf-8").read()
    text += open(corpus.held_out_file, encoding="utf-8").read()
    assert "LABEL_" not in text
    assert "label" not in text


def test_train_documents_are_each_sources_paragraphs_and_sentences(corpus):
    expected = {
        # the task: each distinct sentence one document
        "a gorgeous , witty movie .",
        "a sour little movie at its core .",
        "it 's a charming journey .",
        # the book: paragraphs, line wrapping undone, the chapter heading dropped
        "Emma Woodhouse, handsome, clever, and rich, seemed to unite some of the best "
        "blessings of existence.",
        '"Yes."',
        "She was the youngest of the two daughters. Her mother had died long ago.",
        # WikiText: the first article's paragraphs, headings dropped
        "The first article 's first paragraph . It has two sentences .",
        "The first article 's second paragraph .",
    }
    documents = _documents(corpus.train_file)
    assert sorted(documents) == sorted(expected)
    assert corpus.dropped["task: repeated sentence"] == 1
    assert corpus.documents["train/task"] == 3


def test_held_out_text_never_appears_in_pretraining_data(corpus):
    train = _documents(corpus.train_file)
    held_out = _documents(corpus.held_out_file)
    assert sorted(held_out) == sorted(
        [
            "Sir Walter Elliot never took up any book but the Baronetage.",
            "Anne had been a very pretty girl. Her bloom had vanished early.",
            "The second article , held out .",
            "Its last paragraph .",
        ]
    )
    # '"Yes."' is in both books: it stays in training and leaves the held-out file, counted.
    assert corpus.dropped["held-out books: paragraph also in the training text"] == 1
    train_text = "\n".join(train)
    for paragraph in held_out:
        assert paragraph not in train_text


def test_pair_task_files_read_both_text_columns(tmp_path):
    header = "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
    rows = "LABEL_ONE_9e\t1\t2\tThe cat sat .\tA cat was sitting .\n"
    task = _write(tmp_path / "mrpc.tsv", header + rows)
    corpus = build_task_corpus(str(tmp_path / "out"), task_train_data=task, dataset="MRPC")
    assert sorted(_documents(corpus.train_file)) == ["A cat was sitting .", "The cat sat ."]
    assert "LABEL" not in open(corpus.train_file, encoding="utf-8").read()


def test_too_many_held_out_articles_is_refused(tmp_path):
    wikitext = _write(tmp_path / "wiki.raw", WIKITEXT)
    with pytest.raises(ValueError, match="`held_out_articles` must be below the 2 articles"):
        build_task_corpus(str(tmp_path / "out"), wikitext=wikitext, held_out_articles=2)


def test_missing_book_is_named(tmp_path):
    with pytest.raises(ValueError, match="books"):
        build_task_corpus(str(tmp_path / "out"), books=[str(tmp_path / "nope.txt")])
