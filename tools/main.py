"""The main job: Austen novels → tokenizer → pretraining data → pretrained ALBERT → SST-2 from
it and from scratch → TF Serving export → served in a fresh process → summary and curves.

    python tools/main.py            # the full run, about an hour on 2 CPU cores (see below)
    python tools/main.py --quick    # every step in a few minutes (smoke test)
    python tools/main.py --force    # redo every step, pretraining from step 0 (the export
                                    # becomes a new version; versions are never overwritten)

Duration, measured from a fresh clone (`bash tools/run.sh main`, 2026-11-23) on this project's
2-core AMD EPYC (AVX2 only) with small tests running beside it: 66.7 minutes wall, of which
3 for setting up `.venv` and 63.7 for the steps (tokenizer 4 s, data 10 s, pretraining 2,273 s
for 2,000 steps at 0.88 steps/s, SST-2 from the checkpoint 761 s and from scratch 756 s for
1,500 steps each, export 8 s, serving check 12 s). The project's earlier, ~3× faster machine
ran the steps in about 20 minutes.
`--quick`: about 2.5 minutes on an idle machine.

Every field of `MainJobOptions` (tools/main_job/options.py) is a flag; with `--quick`, the
flags given override the quick variant's values.
"""

import argparse
import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")

from main_job import MainJobOptions, run_main_job  # noqa: E402  (tools/main_job/, beside this file)

from keras_albert.cli import add_options, run_tool, with_debug_help  # noqa: E402


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=with_debug_help(None),
    )
    parser.add_argument(
        "--quick", action="store_true", help="the few-minute variant (MainJobOptions.quick())"
    )
    add_options(parser, MainJobOptions)
    return parser


def parse_options(argv: list[str] | None = None) -> MainJobOptions:
    """The job's options from the command line: the flags given, over the full or quick run."""
    parser = build_parser()
    # argparse fills in a default only where the namespace has no value yet: pre-filled with a
    # marker, the flags left at the marker are those not given.
    not_given = object()
    names = [action.dest for action in parser._actions if action.dest not in ("help", "quick")]
    args = parser.parse_args(argv, namespace=argparse.Namespace(**dict.fromkeys(names, not_given)))
    given = {name: getattr(args, name) for name in names if getattr(args, name) is not not_given}
    return MainJobOptions.quick(**given) if args.quick else MainJobOptions(**given)


def main(argv: list[str] | None = None) -> int:
    run_main_job(parse_options(argv))
    return 0


if __name__ == "__main__":
    run_tool(main)
