"""Fine-tune ALBERT on a GLUE-style task, SQuAD v1.1 / v2.0, RACE, named entities (NER) or
sentence embeddings.

Tasks: SST-2, MRPC, STS-B, CoLA, RTE, QQP, MNLI, QNLI, generic, squad_v1, squad_v2, race, ner,
stsb_embedding, sentence_pairs.

Defaults per task (each task type's `keras_albert/tasks/<task type>/defaults.py`): google-research/
albert run_glue.sh for GLUE, the original README for SQuAD and RACE, Hugging Face run_ner for
NER, sentence-transformers' STS-B example for embeddings; --scale shrinks the step counts, and
with --train-steps the warmup stays the recipe's fraction of the run. Every flag is a field of
`keras_albert.finetuning.options.FinetuningOptions` or, in the task type's group, of its own
options (`keras_albert/tasks/<task type>/options.py`); their docstrings give the meaning, the
default is the dataclass's.

Examples:
  keras-albert finetune --dataset SST-2 --train-data glue/SST-2/train.tsv \\
      --eval-data glue/SST-2/dev.tsv --init-checkpoint runs/austen/pretrain \\
      --output-dir runs/sst2 --scale 0.05 --sequence-length 128
  keras-albert finetune --dataset RTE --train-data RTE/train.tsv --eval-data RTE/dev.tsv \\
      --init-checkpoint albert_base_hf/ --vocabulary 30k-clean.model \\
      --output-dir runs/rte
  keras-albert finetune --dataset generic --text-columns review --label-column stars \\
      --labels 1,2,3,4,5 --train-data reviews_train.csv --eval-data reviews_dev.csv \\
      --preset albert_base_v2 --vocabulary 30k-clean.model --output-dir runs/reviews
  keras-albert finetune --dataset squad_v2 --answerability answer_class \\
      --train-data squad/train-v2.0.json --eval-data squad/dev-v2.0.json \\
      --init-checkpoint albert_base_hf/ --vocabulary 30k-clean.model \\
      --output-dir runs/squad2 --scale 0.01
  keras-albert finetune --dataset race --train-data RACE/train --eval-data RACE/dev \\
      --init-checkpoint runs/austen/pretrain --output-dir runs/race --scale 0.01
  keras-albert finetune --dataset ner --train-data wnut17/train.conll \\
      --eval-data wnut17/dev.conll --init-checkpoint runs/austen/pretrain --output-dir runs/ner
  keras-albert finetune --dataset stsb_embedding --train-data data/glue/STS-B/train.tsv \\
      --eval-data data/glue/STS-B/dev.tsv --init-checkpoint runs/austen/pretrain \\
      --output-dir runs/stsb_embedding
"""

import argparse

from keras_albert.cli import (
    add_options,
    with_debug_help,
)
from keras_albert.finetuning.options import FinetuningOptions
from keras_albert.finetuning.task_choice import add_task_options, options_from_flags


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=with_debug_help("\n".join(__doc__.splitlines()[2:])),
    )
    add_options(parser, FinetuningOptions)
    add_task_options(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    options = options_from_flags(build_parser().parse_args(argv))
    from keras_albert.finetuning.driver import finetune

    finetune(options)
    return 0
