"""Output directories written before the task-type restructure (tests/data/legacy_runs, see its
README) still resume and load: a fine-tuning run whose `checkpoints/run.json` holds every
task's options flat under their former names (`epochs`, `squad_answerability`), one whose
`run.json` names the data set `task` (today's place, `dataset`'s former name), and a
pretraining run."""

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from keras_albert import AlbertPretrainer, AlbertQuestionAnswerer, load_checkpoint
from keras_albert.finetuning.driver import finetune
from keras_albert.finetuning.options import FinetuningOptions
from keras_albert.pretraining.driver import pretrain
from keras_albert.pretraining.options import PretrainingOptions
from keras_albert.tasks.question_answering.options import QuestionAnsweringOptions
from tests.text._paths import DATA_DIR

LEGACY = Path(DATA_DIR) / "legacy_runs"
VOCABULARY = str(Path(DATA_DIR) / "albert_test_vocab.spm")
SQUAD = str(Path(DATA_DIR) / "squad" / "dev-v2.0-small.json")


def _copy(name: str, tmp_path: Path, run_file: str, **paths) -> Path:
    """The legacy directory `name` in `tmp_path`, its recorded paths rewritten to this
    machine's (the format is what is tested, not the paths of the machine that wrote it)."""
    directory = tmp_path / name
    shutil.copytree(LEGACY / name, directory)
    config = tmp_path / "tiny_config.json"
    shutil.copy(LEGACY / "tiny_config.json", config)
    record_path = directory / run_file
    record = json.loads(record_path.read_text())
    record.update({"vocabulary": VOCABULARY, **paths})
    if isinstance(record.get("config"), str):
        record["config"] = str(config)
    record_path.write_text(json.dumps(record))
    return directory


def _squad_options(directory: Path, **changes) -> FinetuningOptions:
    task_options = {"answerability": "answer_class", "doc_stride": 8, "max_query_length": 12}
    task_options.update(changes)
    return FinetuningOptions(
        "squad_v2", SQUAD, SQUAD, str(directory), config=str(directory.parent / "tiny_config.json"),
        vocabulary=VOCABULARY, sequence_length=32, batch_size=4, train_steps=2,
        num_evaluations=1, keep_checkpoints=1, verbose=0,
        task_options=QuestionAnsweringOptions(**task_options),
    )  # fmt: skip


def test_a_finetuning_run_written_before_resumes_and_loads(tmp_path):
    directory = _copy(
        "finetune_squad_v2", tmp_path, "checkpoints/run.json", train_data=SQUAD, eval_data=SQUAD
    )
    loaded = load_checkpoint(str(directory))
    assert isinstance(loaded, AlbertQuestionAnswerer) and loaded.answerability == "answer_class"
    # A task option recorded flat (and under its former name) is still compared.
    for change, message in (
        ({"doc_stride": 16}, r"doc_stride: 8 -> 16"),
        ({"answerability": "null_span"}, r"answerability: 'answer_class' -> 'null_span'"),
    ):
        with pytest.raises(ValueError, match=message):
            finetune(_squad_options(directory, **change))
    summary = finetune(_squad_options(directory))
    assert summary["resumed_from_step"] == 2 and summary["train_steps"] == 2


def test_a_run_json_naming_the_dataset_task_resumes(tmp_path):
    """`run.json` in the output directory as written before `task` became `dataset`: the data
    set it records is still compared, and the same options resume the run."""
    directory = _copy(
        "finetune_squad_v2", tmp_path, "checkpoints/run.json", train_data=SQUAD, eval_data=SQUAD
    )
    legacy = json.loads((directory / "checkpoints" / "run.json").read_text())
    (directory / "checkpoints" / "run.json").unlink()
    record = {key: value for key, value in legacy.items() if key not in ("epochs",)}
    record["num_evaluations"] = legacy["epochs"]
    record["answerability"] = record.pop("squad_answerability")
    assert record["task"] == "squad_v2" and "dataset" not in record
    (directory / "run.json").write_text(json.dumps(record))
    with pytest.raises(ValueError, match=r"dataset: 'squad_v2' -> 'squad_v1'"):
        finetune(
            dataclasses.replace(
                _squad_options(directory, answerability="null_span"), dataset="squad_v1"
            )
        )
    summary = finetune(_squad_options(directory))
    assert summary["resumed_from_step"] == 2 and summary["options"]["dataset"] == "squad_v2"
    assert json.loads((directory / "run.json").read_text())["dataset"] == "squad_v2"


def test_a_pretraining_run_written_before_resumes_and_loads(tmp_path):
    data = str(tmp_path / "pretraining-*.tfrecord")
    shutil.copy(LEGACY / "pretraining-00000-of-00001.tfrecord", tmp_path)
    directory = _copy("pretrain", tmp_path, "run.json", train_data=data)
    assert isinstance(load_checkpoint(str(directory)), AlbertPretrainer)
    summary = pretrain(
        PretrainingOptions(
            train_data=data, output_dir=str(directory), train_steps=2, batch_size=4,
            config=str(tmp_path / "tiny_config.json"), vocabulary=VOCABULARY,
            max_predictions_per_sequence=4, keep_checkpoints=1,
        )
    )  # fmt: skip
    assert summary["resumed_from_step"] == 2 and summary["step"] == 2
