"""The records a run writes in its output directory (`run.json`, `summary.json`), read back
under today's key names: what `load_checkpoint` and the vocabulary search read of a training
output. Local paths need no TensorFlow; `gs://` and the other file systems it registers go
through `tf.io.gfile`. The rest of the run directory (locks, atomic saves, checkpoints) is
`keras_albert.training.run_directory`."""

from __future__ import annotations

import json
import os

from keras_albert.lazy import require_tensorflow
from keras_albert.text.files import is_remote

RUN_FILE = "run.json"
# Where fine-tuning wrote its run.json before both drivers wrote it in the output directory.
_LEGACY_RUN_FILE_DIRECTORY = "checkpoints"
# Names an earlier run.json used → today's (so runs started before the renames resume).
_RENAMED_RUN_KEYS = {
    "total_steps": "train_steps",
    "sentencepiece_model": "vocabulary",
    "epochs": "num_evaluations",  # fine-tuning's count of evaluations
    "squad_answerability": "answerability",
    "task": "dataset",  # fine-tuning's data set (`FinetuningOptions.dataset`)
}


def read_record(directory: str, name: str = RUN_FILE) -> dict | None:
    """The JSON object `directory/name` records (`run.json`, `summary.json`), its keys under
    today's names; None when there is no such file (or it holds no object)."""
    path = os.path.join(directory, name)
    if is_remote(path):
        gfile = require_tensorflow("read_record of a remote run").io.gfile
        if not gfile.exists(path) or gfile.isdir(path):
            return None
        with gfile.GFile(path, "r") as f:
            recorded = json.load(f)
    else:
        if not os.path.isfile(path):
            return None
        with open(path, encoding="utf-8") as f:
            recorded = json.load(f)
    if not isinstance(recorded, dict):
        return None
    # A key is renamed only when the file lacks its new name (a record that has both is of
    # today's options, where the old name may be a field of its own).
    renamed = {old: new for old, new in _RENAMED_RUN_KEYS.items() if new not in recorded}
    return {renamed.get(key, key): value for key, value in recorded.items()}


def read_run_file(output_dir: str) -> dict | None:
    """The options a run in `output_dir` recorded (`output_dir/run.json`, for every driver;
    fine-tuning wrote `checkpoints/run.json` before), under today's names, or None."""
    for directory in (output_dir, os.path.join(output_dir, _LEGACY_RUN_FILE_DIRECTORY)):
        recorded = read_record(directory)
        if recorded is not None:
            return recorded
    return None
