"""Smoke test of the README's main command (the quick variant of the whole job, twice), and
the flags of `tools/main.py` (one per field of `MainJobOptions`, defaults written once)."""

import importlib.util
import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
from main_job import MainJobOptions, run_steps

from tests.tool_flags import check_tool_flags

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


def best_model_probabilities(work_dir, texts):
    """Softmax of the fine-tuned `best.keras` on `texts`, packed here as [CLS] ids [SEP]."""
    import keras
    from scipy.special import softmax

    from keras_albert.text.tokenizer import AlbertTokenizer
    from tests.export.conftest import reference_pack

    tokenizer = AlbertTokenizer(str(work_dir / "tokenizer" / "austen.model"))
    best = keras.models.load_model(work_dir / "finetuning" / "sst2" / "best.keras", compile=False)
    inputs = reference_pack(
        [tokenizer.encode(text) for text in texts],
        None,
        best.backbone.albert_config.max_sequence_length,
        tokenizer.cls_id,
        tokenizer.sep_id,
        tokenizer.pad_id,
    )
    logits = np.asarray(best(inputs, training=False), np.float64)
    return softmax(logits, axis=-1)


def test_quick_main_job_runs_every_step_and_reruns_without_redoing_them(tmp_path):
    work_dir, saved = tmp_path / "work", tmp_path / "saved_models"
    arguments = ("--output-dir", str(work_dir), "--saved-models-dir", str(saved))
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
    # The served probabilities are `best.keras`'s on the same sentences: within 1e-5 through
    # the export loaded here, and as the probe prints them (rounded to 4 decimals).
    texts = [prediction["text"] for prediction in served["predictions"]]
    expected = best_model_probabilities(work_dir, texts)
    signature = tf.saved_model.load(str(export)).signatures["serving_default"]
    exported = signature(text=tf.constant(texts))["probabilities"].numpy()
    np.testing.assert_allclose(exported, expected, atol=1e-5, rtol=0)
    probed = np.array([prediction["probabilities"] for prediction in served["predictions"]])
    np.testing.assert_allclose(probed, expected, atol=5e-5 + 1e-6, rtol=0)
    assert (work_dir / "curves.png").stat().st_size > 10_000

    second = run_main(*arguments)
    assert second.returncode == 0, second.stderr[-3000:]
    for step in ("tokenizer", "pretraining_data", "pretraining", "finetuning", "export"):
        assert f"{step}: done before, skipped" in second.stdout
    assert sorted(p.name for p in (saved / "albert_sst2_quick").iterdir()) == ["1"]


def test_bad_step_names_and_evaluation_counts_are_refused(tmp_path):
    with pytest.raises(ValueError, match=r"Unknown steps \['pretrain'\]"):
        run_steps(MainJobOptions.quick(output_dir=str(tmp_path)), ("tokenizer", "pretrain"))
    assert not any(tmp_path.iterdir())  # refused before any step ran
    with pytest.raises(ValueError, match="pretrain_evaluations=0"):
        MainJobOptions(pretrain_evaluations=0)


def load_tool():
    spec = importlib.util.spec_from_file_location("main_tool", REPO_ROOT / "tools" / "main.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    return tool


def test_every_option_is_one_flag_with_the_dataclass_default():
    check_tool_flags(load_tool().build_parser(), MainJobOptions, tool_flags=("quick",))


def test_flags_reach_the_options_and_override_the_quick_variant():
    tool = load_tool()
    assert tool.parse_options([]) == MainJobOptions()
    assert tool.parse_options(["--quick"]) == MainJobOptions.quick()
    options = tool.parse_options(
        ["--quick", "--output-dir", "o", "--pretrain-train-steps", "2000", "--force"]
    )
    # A flag given at the full run's default still wins over the quick value.
    assert options == MainJobOptions.quick(output_dir="o", pretrain_train_steps=2000, force=True)
    options = tool.parse_options(["--model", "num_layers=3,dropout=0.1", "--corpus-files", "2"])
    assert options.model == (("num_layers", 3), ("dropout", 0.1))
    assert options.corpus_files == 2
    assert options.albert_config().num_layers == 3


def test_the_data_defaults_are_the_files_that_ship_in_data():
    options = MainJobOptions()
    assert pathlib.Path(options.corpus_dir) == REPO_ROOT / "data" / "corpus" / "janeaustenr"
    for path in (options.corpus_dir, options.finetune_train_data, options.finetune_eval_data):
        assert pathlib.Path(path).exists(), path


def test_bad_model_fields_are_refused_naming_the_value():
    from main_job.options import parse_model

    with pytest.raises(ValueError, match="Received: model='num_layers'"):
        parse_model("num_layers")
    with pytest.raises(ValueError, match="three"):
        parse_model("num_layers=three")
