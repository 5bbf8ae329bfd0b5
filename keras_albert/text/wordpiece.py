"""WordPiece tokenization of the Chinese ALBERT releases, in Python and inside the TF graph.

The original ALBERT code tokenizes with a BERT vocabulary (`vocab_chinese.txt`, one token per
line) when it is given `vocab_file` and no `spm_model_file`: google-research/albert
`tokenization.FullTokenizer(vocab_file, do_lower_case=True, spm_model_file=None)`, that is

1. BERT's `BasicTokenizer`: drop NUL, U+FFFD and control characters (Cc, Cf but tab, newline
   and carriage return), whitespace (Zs, tab, newline, carriage return) becomes " "; every CJK
   ideograph becomes a word of its own; split on whitespace; lowercase, Unicode NFD and drop
   the nonspacing marks (Mn); every punctuation character (category P*, and the ASCII
   non-alphanumerics `!`-`/`, `:`-`@`, `[`-`` ` ``, `{`-`~`) becomes a word of its own;
2. greedy longest-match-first WordPiece over each word, continuations prefixed with "##"; a
   word longer than 200 characters, or one that cannot be spelled with the vocabulary, is
   `[UNK]`.

`PythonWordpiece.tokenize` runs it in Python (no TensorFlow imported);
`wordpiece_graph.Wordpiece.tokenize_graph` with TensorFlow and
TensorFlow Text ops that exist in TF Text 2.12 (what TF Serving embeds): `regex_replace`,
`lower`, `normalize_utf8`, `regex_split`, `WordpieceTokenizer` over a `StaticHashTable`.
`tf_text.BertTokenizer` is not used, because its `BasicTokenizer` departs from the original:
with `lower_case=True` it applies NFKC case folding (so "ＡＢＣ" becomes "abc" and "ß" "ss";
the original keeps full-width letters), it keeps control characters, and it splits on RE2's
ASCII-only `\\s` and on RE2's own (newer) Unicode punctuation tables. Here every
character class is written out from Python's Unicode database, as the original sees it, and
the steps run in the original's order (CJK ideographs are set apart before lowercasing).

Invalid UTF-8 is dropped in both paths (the original decodes with errors="ignore"; here it
becomes U+FFFD, which step 1 drops).

Known differences between the two paths (measured by tests/text/test_wordpiece.py, each of the
1,112,064 Unicode scalar values between two letters):
- ids: none with `vocab_chinese.txt`.
- words before WordPiece: 60 characters, none of them in that vocabulary (so [UNK] either way):
  40 capitals whose lowercase mapping Unicode 14 added (Vithkuqi, Glagolitic, Latin
  Extended-D), which `tf.strings.lower` lacks, as for SentencePiece (see
  keras_albert.text.normalization); and 20 letters of Unicode 16 (Todhri, Tulu-Tigalari,
  Gurung Khema, Kirat Rai), unassigned in Python 3.11's database, which TF's newer ICU
  decomposes under NFD.
By the same measure (taken once while writing this module, not by a test),
`tf_text.BertTokenizer(lower_case=True)` over the same table gives other ids than the original
for 6,915 characters: 2,832 that NFKC changes (full-width forms, ligatures, ...), 73 that case
folding maps otherwise than `str.lower` ("ß"), 88 control characters, NUL and U+FFFD that it
keeps, 3 separators it does not split on (U+2028, U+2029 among them), 2 Hangul fillers, and
3,917 characters unassigned in Python 3.11's database.
"""

from __future__ import annotations

import functools
import unicodedata
from typing import TYPE_CHECKING

from keras_albert.text.normalization import character_class, to_text

if TYPE_CHECKING:
    import tensorflow as tf

# Tokens the ALBERT model needs, by attribute name, as the BERT vocabularies spell them.
SPECIAL_TOKENS = {
    "pad": "[PAD]",
    "unk": "[UNK]",
    "cls": "[CLS]",
    "sep": "[SEP]",
    "mask": "[MASK]",
}
SUFFIX_INDICATOR = "##"
# google-research/albert `WordpieceTokenizer(max_input_chars_per_word=200)`.
MAX_CHARACTERS_PER_WORD = 200

# `BasicTokenizer._is_chinese_char`: the CJK Unified Ideographs blocks and extensions A-E and
# the compatibility ideographs; not Hangul, kana or CJK punctuation.
_CJK_RANGES = (
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B820, 0x2CEAF),
    (0xF900, 0xFAFF),
    (0x2F800, 0x2FA1F),
)


# ---------------------------------------------------------------------------------------------
# The vocabulary file.


def is_vocabulary(data: bytes) -> bool:
    """Whether `data` is a WordPiece vocabulary: UTF-8 text without NUL whose lines include
    `[PAD]`, `[UNK]`, `[CLS]`, `[SEP]` and `[MASK]`. A SentencePiece model is a protobuf,
    whose float scores and length prefixes make it neither valid UTF-8 nor NUL-free."""
    return missing_special_tokens(data) == []


def missing_special_tokens(data: bytes) -> list[str] | None:
    """The `SPECIAL_TOKENS` that no line of `data` holds, in their order; `None` when `data` is
    not text (not UTF-8, or with NUL), so no vocabulary at all."""
    if b"\x00" in data:
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    lines = {line.strip() for line in text.split("\n")}
    return [token for token in SPECIAL_TOKENS.values() if token not in lines]


def parse_vocabulary(data: bytes) -> list[str]:
    """The tokens of a vocabulary file, in id order, as google-research/albert `load_vocab`
    reads them: the first word of each line, " " for a blank line, a repeated token ignored
    (it takes no id)."""
    text = data.decode("utf-8")
    lines = text.split("\n")
    if lines[-1] == "":  # the newline ending the last line starts no line of its own
        lines.pop()
    tokens = {}
    for line in lines:
        token = line.strip().split()[0] if line.strip() else " "
        tokens.setdefault(token, len(tokens))
    return list(tokens)


# ---------------------------------------------------------------------------------------------
# Character classes, from Python's Unicode database as the original sees it.


def _is_control(char: str) -> bool:
    # The original keeps tab, newline and carriage return: they are whitespace.
    return char not in "\t\n\r" and unicodedata.category(char) in ("Cc", "Cf")


def _is_removed(char: str) -> bool:
    return char in "\x00\ufffd" or _is_control(char)


def _is_whitespace(char: str) -> bool:
    # `_is_whitespace` makes these " "; `str.split` then also splits on the characters it
    # calls whitespace that `_clean_text` keeps (U+2028, U+2029), so they count too.
    if _is_removed(char):
        return False
    return char in " \t\n\r" or unicodedata.category(char) == "Zs" or char.isspace()


def _is_punctuation(char: str) -> bool:
    code_point = ord(char)
    if 33 <= code_point <= 47 or 58 <= code_point <= 64:
        return True
    if 91 <= code_point <= 96 or 123 <= code_point <= 126:
        return True
    return unicodedata.category(char).startswith("P")


def _is_cjk(char: str) -> bool:
    code_point = ord(char)
    return any(start <= code_point <= end for start, end in _CJK_RANGES)


@functools.cache
def _removed_class() -> str:
    return character_class(_is_removed)


@functools.cache
def _whitespace_class() -> str:
    return character_class(_is_whitespace)


@functools.cache
def _punctuation_class() -> str:
    return character_class(_is_punctuation)


@functools.cache
def nonspacing_mark_class() -> str:
    return character_class(lambda char: unicodedata.category(char) == "Mn")


def _cjk_class() -> str:
    return "[" + "".join(f"\\x{{{start:X}}}-\\x{{{end:X}}}" for start, end in _CJK_RANGES) + "]"


def prepare_graph(text: tf.Tensor) -> tf.Tensor:
    """`prepare_character` of every character, elementwise over valid UTF-8 `tf.string` text."""
    import tensorflow as tf  # the graph form only: the Python path needs no TensorFlow

    text = tf.strings.regex_replace(text, _removed_class(), "")
    text = tf.strings.regex_replace(text, _whitespace_class(), " ")
    # The original's order: ideographs set apart before lowercasing and NFD (which, in
    # Python 3.11's database, move no character into or out of the CJK ranges).
    return tf.strings.regex_replace(text, _cjk_class(), " \\0 ")


def word_split_patterns() -> tuple[str, str]:
    """`tf_text.regex_split`'s delimiter and kept-delimiter patterns for the normalized text:
    split on spaces, and every punctuation character is a word of its own."""
    punctuation = _punctuation_class()
    return " +|" + punctuation, punctuation


# ---------------------------------------------------------------------------------------------
# The Python path.


def _strip_accents(text: str) -> str:
    text = unicodedata.normalize("NFD", text)
    return "".join(char for char in text if unicodedata.category(char) != "Mn")


def _split_on_punctuation(text: str) -> list[str]:
    words = []
    start_new_word = True
    for char in text:
        if _is_punctuation(char):
            words.append(char)
            start_new_word = True
        else:
            if start_new_word:
                words.append("")
            start_new_word = False
            words[-1] += char
    return words


def prepare_character(char: str) -> str:
    """What the basic tokenization makes of one character before lowercasing: "" (NUL,
    U+FFFD, a control character), " " (whitespace), the character with a space either side
    (a CJK ideograph), else the character."""
    if _is_removed(char):
        return ""
    if _is_whitespace(char):
        return " "
    return f" {char} " if _is_cjk(char) else char


def lower_and_strip(text: str, lowercase: bool = True, strip_accents: bool = True) -> str:
    """Lowercase, then NFD and drop the nonspacing marks (as the options say)."""
    if lowercase:
        text = text.lower()
    return _strip_accents(text) if strip_accents else text


def basic_tokenize(text: str | bytes, lowercase: bool = True, strip_accents: bool = True):
    """BERT's `BasicTokenizer.tokenize`: the words of `text`, before WordPiece."""
    text = "".join(prepare_character(char) for char in to_text(text))
    words = []
    for word in text.split():
        words.extend(_split_on_punctuation(lower_and_strip(word, lowercase, strip_accents)))
    return " ".join(words).split()


class PythonWordpiece:
    """BERT's basic tokenization and WordPiece over a vocabulary, in Python (no TensorFlow:
    `PythonTokenizer` and so the pretraining data workers); `wordpiece_graph.Wordpiece` adds
    the graph path. See the module docstring for the recipe.

    Args:
        tokens: the vocabulary, in id order (`parse_vocabulary`); it must contain `[PAD]`,
            `[UNK]`, `[CLS]`, `[SEP]` and `[MASK]`.
        lowercase: lowercase the text (`do_lower_case=True` of the original).
        strip_accents: Unicode NFD and drop the nonspacing marks (the original does both or
            neither, as `do_lower_case`; Hugging Face's `BertTokenizer(strip_accents=...)`
            can set them apart, as here).
    """

    def __init__(
        self,
        tokens: list[str],
        lowercase: bool = True,
        strip_accents: bool = True,
    ):
        self.tokens = list(tokens)
        self.token_to_id = {token: index for index, token in enumerate(self.tokens)}
        if len(self.token_to_id) != len(self.tokens):
            seen = set()
            repeated = [token for token in self.tokens if token in seen or seen.add(token)]
            raise ValueError(
                f"`tokens` must not repeat a token (`parse_vocabulary` drops repeats). "
                f"Received: tokens repeating {repeated[:5]!r}"
            )
        missing = [token for token in SPECIAL_TOKENS.values() if token not in self.token_to_id]
        if missing:
            raise ValueError(
                f"The vocabulary lacks the special tokens {missing} needed for ALBERT "
                f"(expected {', '.join(SPECIAL_TOKENS.values())})."
            )
        self.lowercase = lowercase
        self.strip_accents = strip_accents
        self.unk_token = SPECIAL_TOKENS["unk"]

    # ----------------------------------------------------------------------------------------
    # Python path.

    def words(self, text: str | bytes) -> list[str]:
        """The words of `text` before WordPiece (BERT's basic tokenization)."""
        return basic_tokenize(text, self.lowercase, self.strip_accents)

    def tokenize(self, text: str | bytes) -> list[str]:
        """The WordPiece tokens of `text`."""
        pieces = []
        for word in self.words(text):
            pieces.extend(self.split_word(word))
        return pieces

    def split_word(self, word: str) -> list[str]:
        """The WordPiece tokens of one word of `words` (`[UNK]` for an unknown word)."""
        if len(word) > MAX_CHARACTERS_PER_WORD:
            return [self.unk_token]
        pieces = []
        start = 0
        while start < len(word):
            for end in range(len(word), start, -1):
                piece = word[start:end] if start == 0 else SUFFIX_INDICATOR + word[start:end]
                if piece in self.token_to_id:
                    break
            else:
                return [self.unk_token]  # no prefix of the rest is a piece: the word is unknown
            pieces.append(piece)
            start = end
        return pieces
