"""Pretraining in mixed precision follows float32 (the same tiny model, records and seed), and
a run resumes in another precision where it stopped (`training.loss_scale`, the checkpoints
hold float32 weights and the unwrapped optimizer)."""

import csv
import dataclasses
import json
import shutil

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_albert.pretraining.driver import pretrain
from tests.pretraining.test_driver import options, write_config, write_records

# Mean loss per 5 steps of 30, learning rate 1e-2. Observed against float32 on an AVX512-BF16
# CPU: bfloat16 within 3e-4, float16 within 1e-4 (the tiny model's sums are short; ALBERT-base
# drifts further, which the main job's convergence runs measure).
TOLERANCE = {"mixed_bfloat16": 0.02, "mixed_float16": 0.005}
# float16's runs (its loss scale) with `--run-slow` (CI); bfloat16's in every run.
PRECISIONS = [
    precision if precision == "mixed_bfloat16" else pytest.param(precision, marks=pytest.mark.slow)
    for precision in sorted(TOLERANCE)
]


def losses_by_step(run_dir) -> dict[int, float]:
    with open(run_dir / "history.csv", encoding="utf-8") as file:
        return {int(row["step"]): float(row["loss"]) for row in csv.DictReader(file)}


@pytest.fixture(scope="module")
def records_and_reference(tmp_path_factory):
    base = tmp_path_factory.mktemp("precision")
    data = base / "data"
    data.mkdir()
    for i in range(2):
        write_records(data / f"train-{i}.tfrecord", 48, seed=i)
    records = {"train_data": str(data / "train-*.tfrecord"),
               "config": write_config(base / "config.json")}  # fmt: skip
    reference = base / "float32"
    pretrain(run_options(reference, records, "float32"))
    return records, reference / "run"


def run_options(directory, records, precision):
    return options(directory, records, precision=precision, train_steps=30, log_every_steps=5,
                   checkpoint_every_steps=10, keep_checkpoints=5)  # fmt: skip


@pytest.mark.parametrize("precision", PRECISIONS)
def test_a_mixed_precision_run_follows_float32(tmp_path, records_and_reference, precision):
    records, reference = records_and_reference
    summary = pretrain(run_options(tmp_path, records, precision))
    assert summary["precision"] == precision
    expected, actual = losses_by_step(reference), losses_by_step(tmp_path / "run")
    assert sorted(actual) == [5, 10, 15, 20, 25, 30] == sorted(expected)
    differences = np.abs(np.array([actual[s] for s in expected]) - list(expected.values()))
    assert differences.max() <= TOLERANCE[precision], differences
    assert differences.max() > 0  # computed in 16 bits indeed
    assert actual[30] < actual[5] - 0.3  # it learned (observed 4.81 -> 4.35)
    recorded = json.loads((tmp_path / "run" / "run.json").read_text())
    assert recorded["precision"] == precision
    reader = tf.train.load_checkpoint(str(tmp_path / "run" / "checkpoints" / "ckpt-30"))
    dtypes = reader.get_variable_to_dtype_map()
    weights = [name for name in dtypes if name.startswith("model/") and "optimizer" not in name]
    assert weights and {dtypes[name] for name in weights} == {tf.float32}  # master weights
    if precision == "mixed_float16":
        with open(tmp_path / "run" / "history.csv", encoding="utf-8") as file:
            rows = list(csv.DictReader(file))
        assert {row["skipped_steps"] for row in rows} == {"0.0"}
        assert float(rows[-1]["loss_scale"]) == 2.0**15


@pytest.mark.parametrize("precision", PRECISIONS)
def test_a_float32_run_resumes_in_another_precision(tmp_path, records_and_reference, precision):
    records, reference = records_and_reference
    run = tmp_path / "run"
    shutil.copytree(reference, run)
    # Back to step 10: the float32 run's later checkpoints are gone.
    checkpoints = run / "checkpoints"
    for path in checkpoints.iterdir():
        if path.name.startswith(("ckpt-20", "ckpt-30", "ckpt-15", "ckpt-25")):
            path.unlink()
    (checkpoints / "checkpoint").write_text(
        'model_checkpoint_path: "ckpt-10"\nall_model_checkpoint_paths: "ckpt-10"\n'
    )
    summary = pretrain(run_options(tmp_path, records, precision))
    assert summary["resumed_from_step"] == 10 and summary["trained_steps_this_run"] == 20
    expected, actual = losses_by_step(reference), losses_by_step(run)
    for step in (15, 20, 25, 30):  # the curve goes on as the float32 run's did
        assert abs(actual[step] - expected[step]) <= TOLERANCE[precision], (step, actual)
    assert json.loads((run / "run.json").read_text())["precision"] == precision


@pytest.mark.slow
def test_the_originals_adamw_poly_power_and_start_warmup_step(tmp_path, records_and_reference):
    records, _ = records_and_reference
    run = options(tmp_path, records, train_steps=20, log_every_steps=5,
                  checkpoint_every_steps=10, optimizer="adamw", poly_power=2.0,
                  start_warmup_step=5, warmup_steps=5)  # fmt: skip
    pretrain(run)
    with open(tmp_path / "run" / "history.csv", encoding="utf-8") as file:
        rates = {int(row["step"]): float(row["learning_rate"]) for row in csv.DictReader(file)}
    # The rate of the last update of each row (step - 1): 0 before step 5, then the warmup
    # from step 5, then (1 - t / 20)**2 decay from step 0.
    expected = {5: 0.0, 10: 1e-2 * 4 / 5, 15: 1e-2 * (1 - 14 / 20) ** 2, 20: 1e-2 * (1 / 20) ** 2}
    assert rates == pytest.approx(expected, rel=1e-5, abs=1e-12)
    model = keras.models.load_model(tmp_path / "run" / "pretrainer.keras")
    assert type(model.optimizer).__name__ == "AdamW"
    recorded = json.loads((tmp_path / "run" / "run.json").read_text())
    assert (recorded["optimizer"], recorded["poly_power"], recorded["start_warmup_step"]) == (
        "adamw", 2.0, 5)  # fmt: skip
    with pytest.raises(ValueError, match="optimizer: 'adamw' -> 'lamb'"):
        pretrain(dataclasses.replace(run, optimizer="lamb"))
