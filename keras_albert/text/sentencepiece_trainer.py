"""Training a SentencePiece model the way ALBERT's `30k-clean.model` was trained.

The settings are those recorded in the released model's own `trainer_spec`: unigram,
`<pad>`=0, `<unk>`=1, no `<s>`/`</s>`, control symbols `[CLS]` `[SEP]` `[MASK]`, user-defined
symbols `( ) " - . – £ €`, `nmt_nfkc` normalization, character coverage 0.99995, shuffled input
sentences. The input lines are first put through the ALBERT text normalization
(`normalize_text`: whitespace collapse, NFKD without combining marks unless accents are kept,
lowercasing when uncased), as the tokenizer will do at encoding time.

Other scripts: text without spaces (Chinese, Japanese) needs nothing special (SentencePiece
treats the text as a stream of characters and splits pieces at script changes), but a rich
character set wants `character_coverage` 0.9995 (SentencePiece's advice for CJK) so that rare
characters become `<unk>` instead of pieces; accents and marks that carry meaning (Vietnamese
tones, Devanagari vowel signs, Hebrew niqqud) want `strip_accents=False`.

Input that is not text is refused rather than trained on: a file in which more than
`MAX_INVALID_BYTE_SHARE` (10%) of the bytes are NUL or invalid UTF-8 (a binary, or text in
another encoding) is an error naming it. Lines with a few invalid bytes are kept, the bytes
replaced by U+FFFD, and counted.
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
from collections.abc import Sequence

import sentencepiece as spm
import tensorflow as tf
from tqdm import tqdm

from keras_albert import directories, validation
from keras_albert.text.normalization import normalize_text
from keras_albert.text.sentencepiece_model import SPECIAL_PIECES

ALBERT_CONTROL_SYMBOLS = ("[CLS]", "[SEP]", "[MASK]")
ALBERT_USER_DEFINED_SYMBOLS = ("(", ")", '"', "-", ".", "–", "£", "€")
# A file whose NUL and invalid UTF-8 bytes exceed this share of its bytes is not text.
MAX_INVALID_BYTE_SHARE = 0.1


@dataclasses.dataclass(frozen=True)
class SentencePieceTrainingResult:
    """What `train_sentencepiece` wrote and what it read.

    Attributes:
        model_path: the trained `<model_prefix>.model`.
        vocabulary_path: `<model_prefix>.vocab` (piece and score per line).
        num_lines: non-empty normalized lines given to the trainer.
        num_empty_lines: lines skipped because they were empty after normalization.
        num_lines_with_invalid_utf8: lines whose invalid UTF-8 bytes were replaced by U+FFFD.
    """

    model_path: str
    vocabulary_path: str
    num_lines: int
    num_empty_lines: int
    num_lines_with_invalid_utf8: int


def train_sentencepiece(
    input_files: Sequence[str],
    model_prefix: str,
    vocabulary_size: int = 30000,
    lowercase: bool = True,
    strip_accents: bool = True,
    character_coverage: float = 0.99995,
    user_defined_symbols: Sequence[str] = ALBERT_USER_DEFINED_SYMBOLS,
    input_sentence_size: int = 10_000_000,
    num_threads: int | None = None,
    seed: int | None = None,
    progress: bool = True,
    verbose: bool = False,
) -> SentencePieceTrainingResult:
    """Trains an ALBERT-style unigram SentencePiece model on raw text files (one sentence or
    paragraph per line).

    Args:
        input_files: text files (anything `tf.io.gfile` reads), UTF-8.
        model_prefix: where to write `<model_prefix>.model` and `<model_prefix>.vocab`.
        vocabulary_size: number of pieces, special pieces included.
        lowercase: lowercase the text before training (the uncased models); the tokenizer must
            then be built with the same `lowercase`.
        strip_accents: drop combining marks before training (the original recipe); `False`
            keeps them, and the tokenizer must then be built with `strip_accents=False`.
        character_coverage: share of characters the model covers; the rest become `<unk>`.
        user_defined_symbols: pieces always kept whole.
        input_sentence_size: at most this many lines (sampled) are used for training.
        num_threads: trainer threads; all CPUs when None.
        seed: seed of SentencePiece's random generator, for reproducible models.
        progress: show a progress bar while reading and a line of counts before training.
        verbose: show the SentencePiece trainer's own log (its settings and progress).

    Returns:
        A `SentencePieceTrainingResult`.

    Raises:
        ValueError: when a file is not text (over `MAX_INVALID_BYTE_SHARE` of NUL or invalid
            UTF-8 bytes) or no line is left; the output directory, when made here, is removed.
    """
    if not input_files:
        raise ValueError(
            f"`input_files` must name at least one text file. Received: input_files={input_files!r}"
        )
    missing = [path for path in input_files if not tf.io.gfile.exists(path)]
    if missing:
        raise FileNotFoundError(
            f"`input_files` must exist; not found: {missing}. Received: input_files={input_files!r}"
        )
    num_fixed = len(SPECIAL_PIECES) + len(user_defined_symbols)
    # More pieces than the special and user-defined ones.
    validation.require_int("vocabulary_size", vocabulary_size, num_fixed + 1)
    validation.require_number(
        "character_coverage", character_coverage, 0.0, 1.0, exclusive_minimum=True
    )

    output_directory = os.path.dirname(os.path.abspath(model_prefix))
    with directories.output_directory(output_directory):
        return _train(
            input_files,
            model_prefix,
            output_directory,
            dict(
                model_type="unigram",
                vocab_size=vocabulary_size,
                pad_id=0,
                unk_id=1,
                bos_id=-1,
                eos_id=-1,
                pad_piece=SPECIAL_PIECES["pad"],
                unk_piece=SPECIAL_PIECES["unk"],
                control_symbols=list(ALBERT_CONTROL_SYMBOLS),
                user_defined_symbols=list(user_defined_symbols),
                normalization_rule_name="nmt_nfkc",
                character_coverage=character_coverage,
                input_sentence_size=input_sentence_size,
                shuffle_input_sentence=True,
                num_threads=num_threads or os.cpu_count() or 1,
                # 0: every INFO line (the settings dump); 1: warnings and errors only.
                minloglevel=0 if verbose else 1,
            ),
            lowercase=lowercase,
            strip_accents=strip_accents,
            seed=seed,
            progress=progress,
        )


def _train(
    input_files, model_prefix, output_directory, options, lowercase, strip_accents, seed, progress
):
    """Normalizes the input into a temporary file beside the model and trains on it."""
    num_lines = num_empty_lines = num_invalid = longest = 0
    with tempfile.NamedTemporaryFile(
        "w", encoding="utf-8", suffix=".txt", dir=output_directory, delete=False
    ) as normalized_file:
        try:
            total_bytes = sum(tf.io.gfile.stat(path).length for path in input_files)
            with tqdm(
                total=total_bytes,
                unit="B",
                unit_scale=True,
                desc="normalizing",
                disable=None if progress else True,  # None: on a terminal only
            ) as bar:
                for path in input_files:
                    num_bytes = num_bad_bytes = 0
                    with tf.io.gfile.GFile(path, "rb") as file:
                        for raw_line in file:
                            bar.update(len(raw_line))
                            num_bytes += len(raw_line)
                            num_bad_bytes += raw_line.count(b"\x00")
                            try:
                                line = raw_line.decode("utf-8")
                            except UnicodeDecodeError:
                                line = raw_line.decode("utf-8", errors="replace")
                                num_bad_bytes += line.count("\ufffd")
                                num_invalid += 1
                            text = normalize_text(
                                line, lowercase=lowercase, strip_accents=strip_accents
                            )
                            if not text:
                                num_empty_lines += 1
                                continue
                            normalized_file.write(text + "\n")
                            num_lines += 1
                            longest = max(longest, len(text.encode("utf-8")))
                    _check_is_text(path, num_bytes, num_bad_bytes)
            normalized_file.close()
            if num_lines == 0:
                raise ValueError(f"No text in {list(input_files)}: every line is empty")
            if progress:
                print(
                    f"training on {num_lines} lines ({num_empty_lines} empty lines skipped, "
                    f"{num_invalid} lines with invalid UTF-8 replaced)",
                    flush=True,
                )
            if seed is not None:
                spm.set_random_generator_seed(seed)
            # The trainer skips lines over `max_sentence_length` bytes (4,192 by default, a long
            # paragraph): raised to the longest line, every line is trained on.
            spm.SentencePieceTrainer.train(
                input=normalized_file.name,
                model_prefix=model_prefix,
                max_sentence_length=max(4192, longest),
                **options,
            )
        finally:
            os.unlink(normalized_file.name)
    return SentencePieceTrainingResult(
        model_path=model_prefix + ".model",
        vocabulary_path=model_prefix + ".vocab",
        num_lines=num_lines,
        num_empty_lines=num_empty_lines,
        num_lines_with_invalid_utf8=num_invalid,
    )


def _check_is_text(path: str, num_bytes: int, num_bad_bytes: int) -> None:
    if num_bytes and num_bad_bytes / num_bytes > MAX_INVALID_BYTE_SHARE:
        raise ValueError(
            f"`input_files` must be UTF-8 text: {path!r} has {num_bad_bytes / num_bytes:.0%} NUL "
            f"or invalid UTF-8 bytes (over {MAX_INVALID_BYTE_SHARE:.0%}: a binary file, or text "
            f"in another encoding). Received: input_files containing {path!r}"
        )
