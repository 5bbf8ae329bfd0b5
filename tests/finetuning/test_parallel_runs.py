"""Fine-tuning runs side by side (`parallel_runs.finetune_runs`): the same results as one after
another, each run's output in its own log, failures named."""

import os

import pytest

from keras_albert import AlbertConfig
from keras_albert.finetuning.options import FinetuningOptions
from keras_albert.finetuning.parallel_runs import LOG_NAME, available_cores, finetune_runs
from tests.finetuning.test_driver import ALBERT_MODEL, TINY_30K
from tests.text.glue_rows import GLUE_DATA


def _runs(tmp_path, name, seeds=(0, 1), **changes):
    config = tmp_path / "albert_config.json"
    if not config.exists():
        AlbertConfig(**TINY_30K).to_json(config)
    return [
        FinetuningOptions(
            **{
                "task": "SST-2",
                "train_data": os.path.join(GLUE_DATA, "sst2_train.tsv"),
                "eval_data": os.path.join(GLUE_DATA, "sst2_dev.tsv"),
                "output_dir": str(tmp_path / name / f"seed_{seed}"),
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


@pytest.mark.slow  # four fine-tuning processes (CI runs it)
def test_side_by_side_runs_equal_runs_one_after_another(tmp_path, capsys):
    finished = []
    together = finetune_runs(
        _runs(tmp_path, "together"),
        processes=2,
        on_finish=lambda index, summary, seconds: finished.append(index),
    )
    alone = finetune_runs(_runs(tmp_path, "alone"), processes=1)
    assert sorted(finished) == [0, 1]
    # Same seeds, same data: the same losses and metrics, whatever the threads per run
    # (only the order of float sums may differ).
    assert len(together) == len(alone) == 2
    for run_together, run_alone in zip(together, alone, strict=True):
        assert run_together["options"]["seed"] == run_alone["options"]["seed"]
        for row_together, row_alone in zip(
            run_together["history"], run_alone["history"], strict=True
        ):
            assert row_together.keys() == row_alone.keys()
            for key, value in row_alone.items():
                assert row_together[key] == pytest.approx(value, abs=1e-5), key
    # The two seeds are different runs, not one run twice.
    assert together[0]["history"][-1]["loss"] != together[1]["history"][-1]["loss"]
    # Side by side, each run's lines went to its own log, not to this process's output.
    for seed in (0, 1):
        log = (tmp_path / "together" / f"seed_{seed}" / LOG_NAME).read_text()
        assert "SST-2 eval after evaluation 2" in log
    assert not (tmp_path / "alone" / "seed_0" / LOG_NAME).exists()
    assert "SST-2 eval after evaluation" in capsys.readouterr().out  # the in-process runs'


def test_a_failed_run_is_named_with_its_log(tmp_path):
    runs = _runs(tmp_path, "bad", seeds=(0,), train_data=str(tmp_path / "missing.tsv"))
    with pytest.raises(RuntimeError, match=r"run 0 \(output_dir=.*seed_0'\) failed: .*missing"):
        finetune_runs(runs, processes=2)


def test_arguments_are_checked(tmp_path):
    with pytest.raises(ValueError, match="`processes` must be"):
        finetune_runs([], processes=0)
    runs = _runs(tmp_path, "same", seeds=(0, 0))
    with pytest.raises(ValueError, match="their own `output_dir`"):
        finetune_runs(runs, processes=2)
    assert available_cores() >= 1
