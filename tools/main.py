"""The main job: Austen novels + WikiText-2 + SST-2's unlabeled sentences → tokenizer →
pretraining data → pretrained ALBERT → SST-2 from it and from scratch (3 seeds each) → TF
Serving export → served in a fresh process → summary and curves.

    python tools/main.py            # the full run, about an hour on 2 CPU cores (see below)
    python tools/main.py --quick    # every step in a few minutes (smoke test)
    python tools/main.py --force    # redo every step, pretraining from step 0 (the export
                                    # becomes a new version; versions are never overwritten)

Duration on this project's 2-core AMD EPYC (AVX2 only), measured step by step (2026-11-24):
corpus 1 s, tokenizer 10 s, data ~40 s, pretraining 2,400 XLA steps ≈ 21 minutes alone
(1.9 steps/s; 57 minutes when it shared the cores with the test suite), six SST-2 runs of
1,000 steps and 5 dev evaluations ≈ 6 minutes each (2.6 steps/s with another run beside it),
export and serving check ≈ 20 s: about an hour.
`--quick`: about 3 minutes on an idle machine (4.6 under load).

Every field of `MainJobOptions` (tools/main_job/options.py) is a flag; with `--quick`, the
flags given override the quick variant's values.
"""

import argparse
import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")

from main_job import MainJobOptions, run_main_job  # noqa: E402  (tools/main_job/, beside this file)
from main_job.flags import add_job_flags, parse_job_flags  # noqa: E402

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
