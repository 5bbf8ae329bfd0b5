"""The main job: Austen novels + WikiText-2 + SST-2's unlabeled sentences → tokenizer →
pretraining data → pretrained ALBERT → SST-2 from it and from scratch (3 seeds each) → TF
Serving export → served in a fresh process → summary and curves.

    bash tools/run.sh main            # the full run (≈ 15 min on 2 CPU cores, see README.md)
    bash tools/run.sh main --quick    # every step in a few minutes (smoke test)
    bash tools/run.sh main --force    # redo every step, pretraining from step 0 (the export
                                      # becomes a new version; versions are never overwritten)

`bash tools/run.sh main` sets up `.venv/` and runs `python -m examples.main` from the
repository's root (as a module of the `examples` package, so that `examples.main_job` imports
from the checkout with no change to `sys.path`).

What a run takes and gives, with the CPU and precision it was measured on: README.md's main
job table and docs/benchmarks.md ("The main job").

Every field of `MainJobOptions` (examples/main_job/options.py) is a flag; with `--quick`, the
flags given override the quick variant's values.
"""

import argparse
import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")

from examples.main_job import MainJobOptions, run_main_job  # noqa: E402
from examples.main_job.flags import add_job_flags, parse_job_flags  # noqa: E402
from keras_albert.cli import run_tool, with_debug_help  # noqa: E402


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=with_debug_help(None),
    )
    return add_job_flags(parser)


def parse_options(argv: list[str] | None = None) -> MainJobOptions:
    """The job's options from the command line: the flags given, over the full or quick run."""
    return parse_job_flags(build_parser(), argv)


def main(argv: list[str] | None = None) -> int:
    run_main_job(parse_options(argv))
    return 0


if __name__ == "__main__":
    run_tool(main)
