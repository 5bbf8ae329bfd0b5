"""Tiny SST-2 fine-tuning runs side by side (`parallel_runs.finetune_runs`), for the tests; run
by test_parallel_runs.py as

    python -m tests.finetuning.parallel_run DIRECTORY TRAIN_STEPS

(two runs, two processes, `DIRECTORY/runs/seed_*`; checkpoints after the evaluations only, so
that those a signal writes are its own) so that a signal meets the job as it meets a tool:
`run_tool` turns `Interrupted` into one line and the signal's exit status.
"""

import os
import sys
from pathlib import Path

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from keras_albert import AlbertConfig  # noqa: E402
from keras_albert.finetuning.options import FinetuningOptions  # noqa: E402
from tests.finetuning.test_driver import ALBERT_MODEL, TINY_30K  # noqa: E402
from tests.text.glue_rows import GLUE_DATA  # noqa: E402


def tiny_runs(directory: Path, name: str, seeds=(0, 1), **changes) -> list[FinetuningOptions]:
    """One tiny SST-2 run per seed in `directory/name/seed_<seed>` (the config written once in
    `directory`)."""
    config = directory / "albert_config.json"
    if not config.exists():
        AlbertConfig(**TINY_30K).to_json(config)
    return [
        FinetuningOptions(
            **{
                "dataset": "SST-2",
                "train_data": os.path.join(GLUE_DATA, "sst2_train.tsv"),
                "eval_data": os.path.join(GLUE_DATA, "sst2_dev.tsv"),
                "output_dir": str(directory / name / f"seed_{seed}"),
                "config": str(config),
                "vocabulary": ALBERT_MODEL,
                "sequence_length": 32,
                "train_steps": 6,
                "batch_size": 4,
                "num_evaluations": 2,
                "pad_to_multiple_of": 8,
                "seed": seed,
                "verbose": 2,
                **changes,
            }
        )
        for seed in seeds
    ]


def main(argv: list[str]) -> None:
    from keras_albert.finetuning.parallel_runs import finetune_runs

    directory, train_steps = Path(argv[0]), int(argv[1])
    finetune_runs(tiny_runs(directory, "runs", train_steps=train_steps), processes=2)
    print("finished", flush=True)


if __name__ == "__main__":
    from keras_albert.cli import run_tool

    run_tool(main, sys.argv[1:])
