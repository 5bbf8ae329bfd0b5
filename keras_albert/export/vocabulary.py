"""The tokenizer file an app runs beside a token-id export (TFLite, ONNX):
`standalone_vocabulary(tokenizer)` → its file name and bytes; `write_vocabulary(directory,
tokenizer)` writes it there.

A WordPiece tokenizer's vocabulary is written as it is (`vocab.txt`). A SentencePiece model gets
the tokenizer's lowercasing and accent stripping in its own normalizer
(`text.sentencepiece_model.with_albert_normalization`), so that SentencePiece alone, as an app
runs it, gives the tokenizer's pieces, but for what a character map cannot say: the original's
re-split of a piece ending in a digit and a comma ("1999," is one piece there, two here).
"""

import functools
import os

from keras_albert.serving.saved_model import SENTENCEPIECE_ASSET, VOCABULARY_ASSET
from keras_albert.text.sentencepiece_model import with_albert_normalization
from keras_albert.text.tokenizer import AlbertTokenizer

# The tokenizer files, named as in the SavedModels' assets.
SENTENCEPIECE_FILE = SENTENCEPIECE_ASSET
WORDPIECE_FILE = VOCABULARY_ASSET
# The new normalizer takes seconds (it normalizes every Unicode character): once per model in
# a process that exports several times (formats, tasks, tests).
_normalized = functools.lru_cache(maxsize=4)(with_albert_normalization)


def standalone_vocabulary(tokenizer: AlbertTokenizer) -> tuple[str, bytes]:
    """The file name and contents of the vocabulary an app tokenizes with (see the module
    docstring)."""
    vocabulary = tokenizer.serialized_model  # the file the tokenizer was built from
    if tokenizer.wordpiece:
        return WORDPIECE_FILE, vocabulary
    return SENTENCEPIECE_FILE, _normalized(vocabulary, tokenizer.lowercase, tokenizer.strip_accents)


def write_vocabulary(directory: str | os.PathLike, tokenizer: AlbertTokenizer) -> str:
    """Writes `standalone_vocabulary(tokenizer)` to `directory`; returns its path."""
    name, contents = standalone_vocabulary(tokenizer)
    path = os.path.join(directory, name)
    with open(path, "wb") as file:
        file.write(contents)
    return path
