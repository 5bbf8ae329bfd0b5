"""Smoke test of the README's main command: the quick variant of the whole job, twice."""

import json
import os
import pathlib
import subprocess
import sys

import pytest

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]


def run_main(*arguments):
    return subprocess.run(
        [sys.executable, str(REPO_ROOT / "tools" / "main.py"), "--quick", *arguments],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        timeout=900,
    )


def test_quick_main_job_runs_every_step_and_reruns_without_redoing_them(tmp_path):
    work_dir, saved = tmp_path / "work", tmp_path / "saved_models"
    arguments = ("--work-dir", str(work_dir), "--saved-models-dir", str(saved))
    first = run_main(*arguments)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]

    summary = json.loads((work_dir / "summary.json").read_text())
    export = pathlib.Path(summary["export_path"])
    assert export == saved / "albert_sst2_quick" / "1"
    assert (export / "saved_model.pb").is_file()
    assert (export / "assets.extra" / "tf_serving_warmup_requests").is_file()
    assert (saved / "models.config").is_file()
    # Served in a fresh process that never imported keras_albert, one prediction per text.
    # (Keras itself may be imported there: tensorflow_text imports it.)
    served = json.loads((work_dir / "steps" / "serving.json").read_text())
    assert served["keras_albert_imported"] is False
    assert len(served["predictions"]) == 5
    for prediction in served["predictions"]:
        assert abs(sum(prediction["probabilities"]) - 1) < 1e-3
        assert (
            prediction["label"] == max((p, i) for i, p in enumerate(prediction["probabilities"]))[1]
        )
    assert 0.0 <= summary["sst2_dev"]["accuracy"] <= 1.0
    assert (work_dir / "curves.png").stat().st_size > 10_000

    second = run_main(*arguments)
    assert second.returncode == 0, second.stderr[-3000:]
    for step in ("tokenizer", "pretraining_data", "pretraining", "finetuning", "export"):
        assert f"{step}: done before, skipped" in second.stdout
    assert sorted(p.name for p in (saved / "albert_sst2_quick").iterdir()) == ["1"]


def test_bad_step_names_and_evaluation_counts_are_refused(tmp_path):
    from keras_albert.pipeline import MainJobOptions, run_steps

    with pytest.raises(ValueError, match=r"Unknown steps \['pretrain'\]"):
        run_steps(MainJobOptions.quick(work_dir=str(tmp_path)), ("tokenizer", "pretrain"))
    assert not any(tmp_path.iterdir())  # refused before any step ran
    with pytest.raises(ValueError, match="pretrain_evaluations=0"):
        MainJobOptions(pretrain_evaluations=0)
