"""Raw text → sharded ALBERT pretraining TFRecords (the original's feature layout).

    keras-albert create-data --inputs data/corpus/janeaustenr \
        --output-dir runs/data --vocabulary tests/data/30k-clean.model \
        --sequence-length 128 --dupe-factor 10 --num-workers 2 --num-shards 8

Writes `{output_dir}/{file_prefix}-0000i-of-0000N.tfrecord` and prints the summary (counts, mask
rate, n-gram shares, label balance, skipped inputs); when no example was made (missing, empty
or binary inputs only) it writes no shard and exits 1.

`--engine beam` runs the same work as an Apache Beam pipeline (`pip install keras-albert[beam]`);
Beam's own options follow `--`, untouched; the files are the local engine's, byte for byte:

    keras-albert create-data --engine beam --inputs gs://b/corpus \
        --output-dir gs://b/data --vocabulary 30k-clean.model --num-shards 256 \
        -- --runner DataflowRunner --project p --region r --temp_location gs://b/tmp \
           --setup_file ./setup.py

(docs/guides/pretraining_data_at_scale.md: runners, sizing, shipping the package.)
Defaults are the original create_pretraining_data.py's (SOP, 512 tokens, 20 predictions,
3-grams, dupe_factor 40); `--help` lists every option of `PretrainingDataConfig`
(keras_albert.pretraining.data.config) and of this tool.

Flags of google-research/albert's create_pretraining_data.py accepted as aliases:
`--input_file` (one or more paths separated by spaces, not commas) → `--inputs`,
`--output_dir` → `--output-dir`, `--spm_model_file` and `--vocab_file` → `--vocabulary` (a
SentencePiece model or a WordPiece vocabulary, told apart from the file; the project's former
`--sentencepiece-model` too),
`--do_lower_case` / `--no-do_lower_case` → `--lowercase` / `--no-lowercase` (not the absl form
`--do_lower_case=False`), `--max_seq_length` → `--sequence-length`,
`--max_predictions_per_seq` → `--max-predictions-per-sequence`, `--random_seed` → `--seed`,
`--ngram` → `--max-ngram`, `--dupe_factor`, `--masked_lm_prob`, `--short_seq_prob` → their
dashed forms. Not accepted: `--output_file` (this tool writes shards into a directory),
`--do_whole_word_mask` (always whole words: with a WordPiece vocabulary a "##" piece continues
the word, as the original's `_is_start_piece_bert`),
`--favor_shorter_ngram` (always p(n) ∝ 1/n), `--do_permutation`, `--input_file_mode`,
`--parallel` (see `--num-workers`), `--random_next_sentence` (see `--task nsp`).
"""

import argparse
import dataclasses
import functools
import logging
import multiprocessing
import os
import sys
from typing import Literal

from keras_albert.cli import (
    VOCABULARY_METADATA,
    ToolError,
    add_options,
    options_from_args,
    with_debug_help,
)
from keras_albert.pretraining.data import PretrainingDataConfig, create_pretraining_data

# AlbertTokenizer.encode runs no TensorFlow ops, so forked workers may inherit it instead of
# importing TensorFlow each (~5 CPU seconds per worker).
_DEFAULT_START_METHOD = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"


@dataclasses.dataclass(frozen=True)
class DataToolOptions:
    """What the tool reads and writes, and how many processes do the work.

    Args:
        inputs: text files, directories (walked for *.txt, *.text, *.raw and names without an
            extension; not README, NOTICE, LICENSE or hidden files) or globs.
        output_dir: the directory the shards are written to (created).
        vocabulary: the tokenizer's vocabulary file: a SentencePiece model (30k-clean.model)
            or a WordPiece vocabulary (vocab_chinese.txt, one token per line).
        file_prefix: shards are FILE_PREFIX-0000i-of-0000N.tfrecord.
        lowercase: lowercase the text (uncased models).
        strip_accents: drop combining marks (the original's normalization); --no-strip-accents
            keeps them (a model trained on accented text: Vietnamese, Hindi, ...).
        num_workers: processes making examples (the output does not depend on it); local
            engine only (Beam's workers are its options after `--`).
        num_shards: output files; an example's shard and place come from a hash of its key.
        start_method: how worker processes start (fork where available: they inherit the
            tokenizer); local engine only.
        engine: "local" (this machine's processes) or "beam" (an Apache Beam pipeline; its
            options follow `--`); the same output.
    """

    inputs: tuple[str, ...] = dataclasses.field(metadata={"parse": str, "nargs": "+"})
    output_dir: str
    vocabulary: str = dataclasses.field(metadata=VOCABULARY_METADATA)
    file_prefix: str = "pretraining"
    lowercase: bool = True
    strip_accents: bool = True
    num_workers: int = os.cpu_count() or 1
    num_shards: int = 1
    start_method: Literal["spawn", "fork", "forkserver"] = _DEFAULT_START_METHOD
    engine: Literal["local", "beam"] = "local"


TOOL_ALIASES = {
    "inputs": ("--input_file",),
    "output_dir": ("--output_dir",),
    "vocabulary": ("--spm_model_file", "--vocab_file"),
    "lowercase": ("--do_lower_case",),
}
CONFIG_ALIASES = {
    "sequence_length": ("--max_seq_length",),
    "max_predictions_per_sequence": ("--max_predictions_per_seq",),
    "seed": ("--random_seed",),
    "max_ngram": ("--ngram",),
    "dupe_factor": ("--dupe_factor",),
    "masked_lm_prob": ("--masked_lm_prob",),
    "short_seq_prob": ("--short_seq_prob",),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=with_debug_help(None),
    )
    add_options(parser.add_argument_group("tool"), DataToolOptions, aliases=TOOL_ALIASES)
    add_options(
        parser.add_argument_group("examples (PretrainingDataConfig)"),
        PretrainingDataConfig,
        aliases=CONFIG_ALIASES,
    )
    return parser


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # Beam's pipeline options follow `--`, passed on untouched.
    split = argv.index("--") if "--" in argv else len(argv)
    argv, pipeline_args = argv[:split], argv[split + 1 :]
    args = build_parser().parse_args(argv)
    options = options_from_args(args, DataToolOptions)
    config = options_from_args(args, PretrainingDataConfig)
    if pipeline_args and options.engine != "beam":
        raise ToolError(
            "options after `--` are Beam's and need --engine beam. Received: "
            f"{' '.join(pipeline_args)}",
            2,
        )

    from keras_albert.text.python_tokenizer import PythonTokenizer, read_vocabulary_file
    from keras_albert.text.tokenizer import AlbertTokenizer

    output_prefix = os.path.join(options.output_dir, options.file_prefix)
    if options.engine == "beam":
        # Beam's import warns on the root logger that its BigQuery client is missing ("apitools
        # not found"): no step here uses BigQuery.
        notice = _MessageFilter("apitools not found")
        logging.getLogger().addFilter(notice)
        try:
            from keras_albert.pretraining.data.beam import create_pretraining_data_beam
        except ModuleNotFoundError as error:
            raise ToolError(
                f"--engine beam needs Apache Beam ({error}): pip install 'keras-albert[beam]'"
            ) from None
        finally:
            logging.getLogger().removeFilter(notice)

        summary = create_pretraining_data_beam(
            options.inputs,
            output_prefix,
            # The model's bytes travel with the pipeline: workers need no access to the file,
            # and the Python tokenizer: they import no TensorFlow.
            functools.partial(
                PythonTokenizer,
                proto=read_vocabulary_file(options.vocabulary),
                lowercase=options.lowercase,
                strip_accents=options.strip_accents,
            ),
            config,
            num_shards=options.num_shards,
            pipeline_args=pipeline_args,
        )
    else:
        summary = create_pretraining_data(
            options.inputs,
            output_prefix,
            # A factory: each worker process builds its own (TensorFlow resources do not pickle).
            functools.partial(
                AlbertTokenizer,
                proto=options.vocabulary,
                lowercase=options.lowercase,
                strip_accents=options.strip_accents,
            ),
            config,
            num_workers=options.num_workers,
            num_shards=options.num_shards,
            start_method=options.start_method,
            progress=sys.stderr.isatty(),  # a bar on a terminal only, not in logs
        )
    print(summary)
    if not summary.num_examples:
        raise ToolError(
            f"no example was made from --inputs {' '.join(options.inputs)}: no usable text "
            "(see 'skipped' above); no shard was written"
        )
    return 0


class _MessageFilter(logging.Filter):
    # Drops the records whose message holds `text`.
    def __init__(self, text: str):
        super().__init__()
        self.text = text

    def filter(self, record: logging.LogRecord) -> bool:
        return self.text not in record.getMessage()
