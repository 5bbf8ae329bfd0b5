"""Training a SentencePiece model the way ALBERT's `30k-clean.model` was trained.

The settings are those recorded in the released model's own `trainer_spec`: unigram,
`<pad>`=0, `<unk>`=1, no `<s>`/`</s>`, control symbols `[CLS]` `[SEP]` `[MASK]`, user-defined
symbols `( ) " - . – £ €`, `nmt_nfkc` normalization, character coverage 0.99995, shuffled input
sentences. The input lines are first put through the ALBERT text normalization
(`normalize_text`: whitespace collapse, NFKD without combining marks, lowercasing when uncased),
as the tokenizer will do at encoding time.
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
from collections.abc import Sequence

import sentencepiece as spm
import tensorflow as tf
from tqdm import tqdm

from keras_albert import validation
from keras_albert.text.tokenizer import SPECIAL_PIECES, normalize_text

ALBERT_CONTROL_SYMBOLS = ("[CLS]", "[SEP]", "[MASK]")
ALBERT_USER_DEFINED_SYMBOLS = ("(", ")", '"', "-", ".", "–", "£", "€")


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
    character_coverage: float = 0.99995,
    user_defined_symbols: Sequence[str] = ALBERT_USER_DEFINED_SYMBOLS,
    input_sentence_size: int = 10_000_000,
    num_threads: int | None = None,
    seed: int | None = None,
    progress: bool = True,
) -> SentencePieceTrainingResult:
    """Trains an ALBERT-style unigram SentencePiece model on raw text files (one sentence or
    paragraph per line).

    Args:
        input_files: text files (anything `tf.io.gfile` reads), UTF-8.
        model_prefix: where to write `<model_prefix>.model` and `<model_prefix>.vocab`.
        vocabulary_size: number of pieces, special pieces included.
        lowercase: lowercase the text before training (the uncased models); the tokenizer must
            then be built with the same `lowercase`.
        character_coverage: share of characters the model covers; the rest become `<unk>`.
        user_defined_symbols: pieces always kept whole.
        input_sentence_size: at most this many lines (sampled) are used for training.
        num_threads: trainer threads; all CPUs when None.
        seed: seed of SentencePiece's random generator, for reproducible models.
        progress: show a progress bar while reading and the trainer's own log while training.

    Returns:
        A `SentencePieceTrainingResult`.
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
    os.makedirs(output_directory, exist_ok=True)
    num_lines = num_empty_lines = num_invalid = 0
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
                disable=not progress,
            ) as bar:
                for path in input_files:
                    with tf.io.gfile.GFile(path, "rb") as file:
                        for raw_line in file:
                            bar.update(len(raw_line))
                            try:
                                line = raw_line.decode("utf-8")
                            except UnicodeDecodeError:
                                line = raw_line.decode("utf-8", errors="replace")
                                num_invalid += 1
                            text = normalize_text(line, lowercase=lowercase)
                            if not text:
                                num_empty_lines += 1
                                continue
                            normalized_file.write(text + "\n")
                            num_lines += 1
            normalized_file.close()
            if num_lines == 0:
                raise ValueError(f"No text in {list(input_files)}: every line is empty")
            if progress:
                print(
                    f"training on {num_lines} lines ({num_empty_lines} empty lines skipped, "
                    f"{num_invalid} lines with invalid UTF-8 replaced)",
                    flush=True,
                )
            options = dict(
                input=normalized_file.name,
                model_prefix=model_prefix,
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
                minloglevel=0 if progress else 2,
            )
            if seed is not None:
                spm.set_random_generator_seed(seed)
            spm.SentencePieceTrainer.train(**options)
        finally:
            os.unlink(normalized_file.name)
    return SentencePieceTrainingResult(
        model_path=model_prefix + ".model",
        vocabulary_path=model_prefix + ".vocab",
        num_lines=num_lines,
        num_empty_lines=num_empty_lines,
        num_lines_with_invalid_utf8=num_invalid,
    )
