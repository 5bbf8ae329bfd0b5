"""Pretrain ALBERT (MLM + SOP) on pretraining TFRecords; rerun the same command to resume.

    python tools/pretrain.py --preset albert_base_v2 --train-data 'data/train-*.tfrecord' \
        --eval-data 'data/eval-*.tfrecord' --output-dir runs/base --total-steps 125000 \
        --batch-size 4096 --learning-rate 0.00176 --warmup-steps 3125 --strategy tpu

Every flag is a field of `keras_albert.training.pretraining.PretrainingOptions` (see its
docstring for the meaning and defaults).
"""

import argparse
import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")

from keras_albert.training.pretraining import PretrainingOptions, pretrain  # noqa: E402


def _jit_compile(value: str):
    choices = {"auto": "auto", "true": True, "false": False}
    if value.lower() not in choices:
        raise argparse.ArgumentTypeError(f"expected auto, true or false; received {value!r}")
    return choices[value.lower()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    model = parser.add_argument_group("model (one of --preset / --config, or --init-checkpoint)")
    model.add_argument("--preset", help="e.g. albert_base_v2")
    model.add_argument("--config", help="ALBERT config JSON (ours, albert_config.json, HF)")
    model.add_argument("--init-checkpoint", help=".keras, .weights.h5, HF dir or TF1 checkpoint")
    data = parser.add_argument_group("data")
    data.add_argument("--train-data", required=True, help="glob(s) of TFRecords, comma-separated")
    data.add_argument("--eval-data", help="glob(s) of held-out TFRecords")
    data.add_argument("--eval-steps", type=int, help="batches per evaluation (default: all)")
    data.add_argument("--eval-every-steps", type=int)
    data.add_argument("--dynamic-masking", action=argparse.BooleanOptionalAction, default=False)
    data.add_argument("--vocabulary", help="SentencePiece model (for --dynamic-masking)")
    data.add_argument("--masked-lm-prob", type=float, default=0.15)
    data.add_argument("--max-ngram", type=int, default=3)
    data.add_argument("--shuffle-buffer-size", type=int, default=10_000)
    run = parser.add_argument_group("run")
    run.add_argument("--output-dir", required=True, help="checkpoints, logs, summary; resumes")
    run.add_argument("--total-steps", type=int, required=True)
    run.add_argument("--batch-size", type=int, required=True, help="global batch size")
    run.add_argument("--learning-rate", type=float, default=0.00176)
    run.add_argument("--warmup-steps", type=int, help="default: 2.5%% of --total-steps")
    run.add_argument("--end-learning-rate", type=float, default=0.0)
    run.add_argument("--weight-decay-rate", type=float, default=0.01)
    run.add_argument(
        "--sentence-order-loss-weight", type=float, default=1.0, help="1.0: the original's sum"
    )
    run.add_argument("--strategy", default="auto", help="auto, cpu, one_device, mirrored, tpu")
    run.add_argument("--tpu-address")
    run.add_argument("--precision", help="Keras dtype policy (default: per device)")
    run.add_argument("--steps-per-execution", type=int, default=1)
    run.add_argument("--jit-compile", type=_jit_compile, default="auto", help="auto/true/false")
    run.add_argument("--log-every-steps", type=int, default=100)
    run.add_argument("--checkpoint-every-steps", type=int, default=1000)
    run.add_argument("--keep-checkpoints", type=int, default=3)
    run.add_argument("--seed", type=int, default=12345)
    run.add_argument("--deterministic", action="store_true", help="deterministic TF ops")
    run.add_argument("--verbose", type=int, default=2, choices=(0, 1, 2))
    args = parser.parse_args()
    pretrain(PretrainingOptions(**vars(args)))


if __name__ == "__main__":
    main()
