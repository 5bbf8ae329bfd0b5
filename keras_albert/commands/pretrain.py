"""Pretrain ALBERT (MLM + SOP) on pretraining TFRecords; rerun the same command to resume.

    keras-albert pretrain --preset albert_base_v2 --train-data 'data/train-*.tfrecord' \\
        --eval-data 'data/eval-*.tfrecord' --output-dir runs/base --train-steps 125000 \\
        --batch-size 4096 --learning-rate 0.00176 --warmup-steps 3125 --strategy tpu

Every flag is a field of `keras_albert.pretraining.options.PretrainingOptions` (its docstring
gives the meaning, the default is the dataclass's).

Strategies (docs/guides/pretraining.md): `--strategy mirrored` uses every GPU of the host;
`--strategy multi_worker` runs the same command on every host, each with its `TF_CONFIG`
(`{"cluster": {"worker": ["host0:12345", "host1:12345"]}, "task": {"type": "worker",
"index": 0}}`; worker 0 writes the artifacts, `--output-dir` must be shared, e.g. `gs://`);
`--strategy tpu --tpu-address local` on a TPU VM, `--tpu-address NAME` for a pod slice. The
result does not depend on the number of replicas: each trains on its share of the global
batch one device would see, and a run resumes on any topology.

The flags of google-research/albert `run_pretraining.py` (and `--spm_model_file`,
`--random_seed` of its `create_pretraining_data.py`) are accepted as aliases:

    --input_file              --train-data
    --output_dir              --output-dir
    --albert_config_file      --config
    --init_checkpoint         --init-checkpoint
    --max_seq_length          --sequence-length (checked against the records)
    --max_predictions_per_seq --max-predictions-per-sequence
    --train_batch_size        --batch-size
    --learning_rate           --learning-rate
    --num_train_steps         --train-steps
    --num_warmup_steps        --warmup-steps
    --save_checkpoints_steps  --checkpoint-every-steps
    --keep_checkpoint_max     --keep-checkpoints
    --iterations_per_loop     --steps-per-execution
    --max_eval_steps          --eval-steps
    --tpu_name                --tpu-address
    --use_tpu[=true|false]    --strategy tpu (false: leaves --strategy as it is)
    --spm_model_file          --vocabulary (also --vocab_file; and our former
                              --sentencepiece-model)
    --random_seed             --seed
    --poly_power              --poly-power
    --start_warmup_step       --start-warmup-step
    --optimizer lamb|adamw    (the same name)

Not accepted, for they have no counterpart: `--do_train` (always), `--do_eval` (give
`--eval-data`), `--eval_batch_size` (the eval batch is `--batch-size`), `--init_from_group0`,
`--masked_lm_budget` (see `--dynamic-masking`), `--tpu_zone`, `--gcp_project`, `--master`,
`--num_tpu_cores` (the TPU strategy uses every core).
"""

import argparse

from keras_albert.cli import (
    add_options,
    options_from_args,
    with_debug_help,
)
from keras_albert.pretraining.options import PretrainingOptions

# The original tools' flag names, by option field.
ALIASES = {
    "train_data": ("--input_file",),
    "output_dir": ("--output_dir",),
    "config": ("--albert_config_file",),
    "init_checkpoint": ("--init_checkpoint",),
    "sequence_length": ("--max_seq_length",),
    "max_predictions_per_sequence": ("--max_predictions_per_seq",),
    "batch_size": ("--train_batch_size",),
    "learning_rate": ("--learning_rate",),
    "train_steps": ("--num_train_steps",),
    "warmup_steps": ("--num_warmup_steps",),
    "checkpoint_every_steps": ("--save_checkpoints_steps",),
    "keep_checkpoints": ("--keep_checkpoint_max",),
    "steps_per_execution": ("--iterations_per_loop",),
    "eval_steps": ("--max_eval_steps",),
    "tpu_address": ("--tpu_name",),
    "vocabulary": ("--spm_model_file", "--vocab_file"),
    "seed": ("--random_seed",),
    "poly_power": ("--poly_power",),
    "start_warmup_step": ("--start_warmup_step",),
}


class _UseTpu(argparse.Action):
    """The original's boolean `--use_tpu`: true selects the "tpu" strategy."""

    def __call__(self, parser, namespace, value, option_string=None):
        if value.lower() not in ("true", "false", "1", "0"):
            parser.error(f"{option_string} must be true or false. Received: {value!r}")
        if value.lower() in ("true", "1"):
            namespace.strategy = "tpu"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=with_debug_help("\n".join(__doc__.splitlines()[2:])),
    )
    add_options(parser, PretrainingOptions, aliases=ALIASES)
    parser.add_argument(
        "--use_tpu",
        dest="strategy",
        action=_UseTpu,
        nargs="?",
        const="true",
        metavar="BOOL",
        default=parser.get_default("strategy"),
        help="the original's flag: --use_tpu (or =true) is --strategy tpu",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    options = options_from_args(build_parser().parse_args(argv), PretrainingOptions)
    from keras_albert.pretraining.driver import pretrain

    pretrain(options)
    return 0
