"""Train an ALBERT-style SentencePiece model on raw text files (one sentence or paragraph a line).

    keras-albert train-tokenizer --inputs corpus/*.txt \
        --vocabulary out/30k-clean.model --vocabulary-size 30000

Writes the model at `--vocabulary` (".model" is appended when missing) and its
vocabulary (piece and score per line) beside it, with ".vocab" in place of ".model". A file
that is not UTF-8 text (over 10% NUL or invalid UTF-8 bytes) is refused.
"""

import argparse
import dataclasses
import sys

from keras_albert.cli import (
    VOCABULARY_METADATA,
    add_options,
    options_from_args,
    with_debug_help,
)
from keras_albert.text.sentencepiece_trainer import train_sentencepiece


@dataclasses.dataclass(frozen=True)
class TokenizerToolOptions:
    """What the tokenizer is trained on, where it goes and how.

    Args:
        inputs: UTF-8 text files.
        vocabulary: the SentencePiece model file to write (PATH.model; PATH.vocab beside it):
            the tokenizer's vocabulary file the other tools take.
        vocabulary_size: number of pieces, special pieces included.
        lowercase: lowercase the text first (uncased ALBERT); the tokenizer must then lowercase
            too.
        strip_accents: drop combining marks first (the original recipe); --no-strip-accents
            keeps them (Vietnamese, Hindi, Hebrew), and the other tools must then be given
            --no-strip-accents too.
        character_coverage: share of characters the model covers; the rest become `<unk>`
            (0.9995 for Chinese or Japanese, as SentencePiece advises).
        input_sentence_size: at most this many lines (sampled) are used for training.
        num_threads: trainer threads; all CPUs when not given.
        seed: seed of SentencePiece's random generator, for reproducible models.
        verbose: show the SentencePiece trainer's own log (its settings and progress).
    """

    inputs: tuple[str, ...] = dataclasses.field(metadata={"parse": str, "nargs": "+"})
    vocabulary: str = dataclasses.field(metadata=VOCABULARY_METADATA)
    vocabulary_size: int = 30000
    lowercase: bool = True
    strip_accents: bool = True
    character_coverage: float = 0.99995
    input_sentence_size: int = 10_000_000
    num_threads: int | None = None
    seed: int | None = None
    verbose: bool = False


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n")[0], epilog=with_debug_help(None)
    )
    add_options(parser, TokenizerToolOptions)
    return parser


def main(argv=None) -> int:
    options = options_from_args(build_parser().parse_args(argv), TokenizerToolOptions)
    result = train_sentencepiece(
        options.inputs,
        options.vocabulary.removesuffix(".model"),
        vocabulary_size=options.vocabulary_size,
        lowercase=options.lowercase,
        strip_accents=options.strip_accents,
        character_coverage=options.character_coverage,
        input_sentence_size=options.input_sentence_size,
        num_threads=options.num_threads,
        seed=options.seed,
        verbose=options.verbose,
        progress=sys.stderr.isatty(),  # a bar on a terminal only, not in logs
    )
    print(f"wrote {result.model_path} and {result.vocabulary_path}")
    return 0
