"""The main job's flags: every field of `MainJobOptions` is one, with `--quick` for the
few-minute variant. `examples/main.py` parses them; so does `benchmarks/pretraining_transfer.py`
for the job it runs."""

import argparse

from keras_albert.cli import add_options

from .options import MainJobOptions


def add_job_flags(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Adds `--quick` and one flag per field of `MainJobOptions` to `parser`; returns it."""
    parser.add_argument(
        "--quick", action="store_true", help="the few-minute variant (MainJobOptions.quick())"
    )
    add_options(parser, MainJobOptions)
    return parser


def parse_job_flags(parser: argparse.ArgumentParser, argv: list[str] | None) -> MainJobOptions:
    """The job's options from `argv` parsed by `parser` (see `add_job_flags`): the flags given,
    over the full or quick run."""
    # argparse fills in a default only where the namespace has no value yet: pre-filled with a
    # marker, the flags left at the marker are those not given.
    not_given = object()
    names = [action.dest for action in parser._actions if action.dest not in ("help", "quick")]
    args = parser.parse_args(argv, namespace=argparse.Namespace(**dict.fromkeys(names, not_given)))
    given = {name: getattr(args, name) for name in names if getattr(args, name) is not not_given}
    return MainJobOptions.quick(**given) if args.quick else MainJobOptions(**given)
