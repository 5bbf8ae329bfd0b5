"""The original ALBERT text normalization, in Python and with TensorFlow ops.

google-research/albert `tokenization.preprocess_text`, the part before SentencePiece:

1. collapse whitespace: `" ".join(text.strip().split())` (Python's notion of whitespace);
2. Unicode NFKD, then drop every character whose canonical combining class is not 0
   (`unicodedata.combining`; note: this is not the same set as the `Mn` category);
3. lowercase (the released English models are uncased).

`normalize_text` runs it in Python, `normalize_text_graph` elementwise over a `tf.string`
tensor (TensorFlow and TensorFlow Text ops only, so it runs in `tf.data` and in an exported
SavedModel). Invalid UTF-8 becomes U+FFFD in both. `AlbertTokenizer` (tokenizer.py) applies
them before SentencePiece; the SentencePiece trainer applies `normalize_text` to its corpus.
"""

from __future__ import annotations

import functools
import sys
import unicodedata
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import tensorflow as tf

# The tokenizer's normalization options and their defaults (the original recipe's). A run
# records those it changed (`changed_normalization`) so that its export normalizes the same.
NORMALIZATION_DEFAULTS = {"lowercase": True, "strip_accents": True}


def changed_normalization(source) -> dict[str, bool]:
    """The `NORMALIZATION_DEFAULTS` options of `source` (an `AlbertTokenizer`, or options with
    those fields) that differ from the defaults, by name; `None` (not given) is no change."""
    values = {name: getattr(source, name, None) for name in NORMALIZATION_DEFAULTS}
    return {
        name: value
        for name, value in values.items()
        if value is not None and value != NORMALIZATION_DEFAULTS[name]
    }


def character_class(predicate) -> str:
    """An RE2 character class of every code point for which `predicate(chr(cp))` holds."""
    ranges = []
    for code_point in range(sys.maxunicode + 1):
        if 0xD800 <= code_point <= 0xDFFF or not predicate(chr(code_point)):
            continue
        if ranges and ranges[-1][1] == code_point - 1:
            ranges[-1][1] = code_point
        else:
            ranges.append([code_point, code_point])
    parts = [
        f"\\x{{{start:X}}}" if start == end else f"\\x{{{start:X}}}-\\x{{{end:X}}}"
        for start, end in ranges
    ]
    return "[" + "".join(parts) + "]"


@functools.cache
def whitespace_class() -> str:
    """Characters `str.split()` splits on, as an RE2 class (RE2's `\\s` is ASCII only)."""
    return character_class(str.isspace)


@functools.cache
def combining_class() -> str:
    """Characters with a non-zero canonical combining class, as in the original recipe."""
    return character_class(unicodedata.combining)


@functools.cache
def digit_class() -> str:
    """Characters for which `str.isdigit()` holds (the test of the digit-comma re-split)."""
    return character_class(str.isdigit)


def to_text(text: str | bytes) -> str:
    """`text` as a `str` that encodes to valid UTF-8 (invalid parts become U+FFFD)."""
    if isinstance(text, bytes):
        return text.decode("utf-8", errors="replace")
    if isinstance(text, str):
        # Lone surrogates cannot be encoded to UTF-8; treat them as the graph path treats the
        # same bytes (each of the three bytes of a surrogate becomes one U+FFFD).
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return text.encode("utf-8", errors="surrogatepass").decode("utf-8", errors="replace")
        return text
    raise TypeError(
        f"`text` must be a str or bytes. Received: text={text!r} ({type(text).__name__})"
    )


def normalize_text(
    text: str | bytes,
    lowercase: bool = True,
    strip_accents: bool = True,
    normalize_quotes: bool = False,
) -> str:
    """The original ALBERT text normalization (`AlbertTokenizer.normalize` without a model)."""
    text = " ".join(to_text(text).strip().split())
    if normalize_quotes:
        text = text.replace("``", '"').replace("''", '"')
    if strip_accents:
        text = unicodedata.normalize("NFKD", text)
        text = "".join(char for char in text if not unicodedata.combining(char))
    if lowercase:
        text = text.lower()
    return text


def normalize_text_graph(
    text: tf.Tensor,
    lowercase: bool = True,
    strip_accents: bool = True,
    normalize_quotes: bool = False,
) -> tf.Tensor:
    """`normalize_text` with TensorFlow ops, elementwise over a `tf.string` tensor."""
    import tensorflow as tf  # the graph form only: `normalize_text` needs no TensorFlow
    import tensorflow_text as tf_text

    text = tf.strings.unicode_transcode(
        text, "UTF-8", "UTF-8", errors="replace", replacement_char=0xFFFD
    )
    text = tf.strings.regex_replace(text, whitespace_class() + "+", " ")
    # After the collapse the only whitespace left is " ", which tf.strings.strip removes.
    text = tf.strings.strip(text)
    if normalize_quotes:
        text = tf.strings.regex_replace(text, "``|''", '"')
    if strip_accents:
        text = tf_text.normalize_utf8(text, "NFKD")
        text = tf.strings.regex_replace(text, combining_class() + "+", "")
    if lowercase:
        text = lower_keeping_nul(text)
    return text


def lower_keeping_nul(text: tf.Tensor) -> tf.Tensor:
    import tensorflow as tf

    # tf.strings.lower stops at the first NUL character and drops the rest of the string, so
    # the NUL-free parts are lowercased separately and joined again.
    # (Join's `separator` attribute cannot hold a NUL either, hence the append-and-trim.)
    parts = tf.strings.split(text, sep="\x00")  # (num_texts, None)
    joined = tf.strings.reduce_join(tf.strings.lower(parts, encoding="utf-8") + "\x00", axis=-1)
    length = tf.strings.length(joined)
    return tf.strings.substr(joined, tf.zeros_like(length), length - 1)
