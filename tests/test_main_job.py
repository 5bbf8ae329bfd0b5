"""Smoke test of the README's main command (the quick variant of the whole job, run once for
the module and its files checked by several tests), `--force` and a rerun on copies of it,
and the flags of `examples/main.py` (one per field of `MainJobOptions`, defaults written once)."""

import csv
import datetime
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import types

import numpy as np
import pytest
import tensorflow as tf

from examples.main_job import STEPS, MainJobOptions, run_steps
from examples.main_job.options import parse_seeds
from examples.main_job.steps import PROBE_SENTENCES, pretraining_options
from keras_albert.cpu import cpu_features, onednn_enabled
from keras_albert.training.strategy import choose_precision_policy
from tests.test_benchmark_results import missing_fields
from tests.tool_flags import check_tool_flags

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
DEV_FILE = pathlib.Path(MainJobOptions().finetune_eval_data)


def run_main(*arguments):
    return subprocess.run(
        # As `bash tools/run.sh main` runs it: a module of the checkout's `examples` package.
        [sys.executable, "-m", "examples.main", "--quick", *arguments],
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

    from keras_albert.serving.precision import serving_model
    from keras_albert.text.tokenizer import AlbertTokenizer
    from tests.export.conftest import reference_pack

    tokenizer = AlbertTokenizer(str(work_dir / "tokenizer" / "sentencepiece.model"))
    best = keras.models.load_model(
        work_dir / "finetuning" / "sst2" / "seed_0" / "best.keras", compile=False
    )
    # The job trains in `--precision auto` (mixed_bfloat16 on a CPU with AVX512-BF16) and
    # exports float32: the reference is the same weights computed in float32.
    best = serving_model(best, "float32")
    assert best.backbone.dtype_policy.name == "float32"
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


# The quick job runs every step of the pipeline (≈ 2.5 min on 2 cores, most of this module's
# time); each step has its own tests elsewhere. Its checks run with the slow tests (CI runs
# them: `--run-slow`), the flag tests below in every run.
SMOKE_RUN = pytest.mark.slow


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    """The quick main job, run once for the module's checks; tests that change its files
    work on a copy (`copy_of`)."""
    root = tmp_path_factory.mktemp("main_job")
    work_dir, saved = root / "work", root / "saved_models"
    completed = run_main("--output-dir", str(work_dir), "--saved-models-dir", str(saved))
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-3000:]
    return types.SimpleNamespace(
        work_dir=work_dir, saved=saved, stdout=completed.stdout, stderr=completed.stderr
    )


def copy_of(quick_run, tmp_path) -> pathlib.Path:
    work_dir = tmp_path / "work"
    shutil.copytree(quick_run.work_dir, work_dir)
    return work_dir


@SMOKE_RUN
def test_quick_main_job_exports_and_serves_the_model_it_fine_tuned(quick_run):
    work_dir, saved = quick_run.work_dir, quick_run.saved
    summary = json.loads((work_dir / "summary.json").read_text())
    # `auto`: mixed_bfloat16 where the CPU multiplies bfloat16 natively, float32 elsewhere.
    precision = choose_precision_policy("cpu", "auto")
    assert summary["precision"] == precision
    assert f"precision: {precision}" in quick_run.stdout
    export = pathlib.Path(summary["export_path"])
    assert export == saved / "albert_sst2_quick" / "1"
    assert (export / "saved_model.pb").is_file()
    assert (export / "assets.extra" / "tf_serving_warmup_requests").is_file()
    assert (saved / "models.config").is_file()
    # Served in a fresh process that never imported keras_albert, one prediction per text.
    # (Keras itself may be imported there: tensorflow_text imports it.)
    served = json.loads((work_dir / "steps" / "serving.json").read_text())
    assert served["keras_albert_imported"] is False
    assert [p["text"] for p in served["predictions"]] == list(PROBE_SENTENCES)
    # The served probabilities, as the probe prints them (full float32), are `best.keras`'s
    # on the same sentences, and so are those of the export loaded here.
    expected = best_model_probabilities(work_dir, PROBE_SENTENCES)
    probed = np.array([prediction["probabilities"] for prediction in served["predictions"]])
    np.testing.assert_allclose(probed, expected, atol=1e-5, rtol=0)
    signature = tf.saved_model.load(str(export)).signatures["serving_default"]
    exported = signature(text=tf.constant(PROBE_SENTENCES))["probabilities"].numpy()
    np.testing.assert_allclose(exported, expected, atol=1e-5, rtol=0)
    # Labels are the argmax, named with the class names the job exported.
    for prediction, row in zip(served["predictions"], expected, strict=True):
        assert prediction["label"] == int(np.argmax(row))
        assert prediction["class"] == ("negative", "positive")[prediction["label"]]


@SMOKE_RUN
def test_quick_summary_has_both_fine_tunings_and_the_pretraining_held_out_metrics(quick_run):
    work_dir = quick_run.work_dir
    summary = json.loads((work_dir / "summary.json").read_text())
    held_out = summary["pretraining_held_out"]
    pretraining = json.loads((work_dir / "pretraining" / "model" / "summary.json").read_text())
    assert held_out == pretraining["eval"]
    assert set(held_out) >= {"mlm_accuracy", "sop_accuracy"}
    # Both SST-2 sides, one run per seed with the same budget; only the pretrained side
    # loads a checkpoint.
    seeds = MainJobOptions.quick().finetune_seeds
    assert summary["finetune_seeds"] == list(seeds) and len(seeds) == 2
    runs = {
        (name, seed): json.loads(
            (work_dir / "finetuning" / directory / f"seed_{seed}" / "summary.json").read_text()
        )
        for name, directory in (("pretrained", "sst2"), ("from_scratch", "sst2_from_scratch"))
        for seed in seeds
    }
    for (name, seed), run in runs.items():
        # The last evaluation: no checkpoint chosen on the dev set the gain is measured on.
        assert summary["sst2_dev"][name][seeds.index(seed)] == run["history"][-1]
    options = {key: dict(run["options"]) for key, run in runs.items()}
    for key in options:
        assert options[key].pop("seed") == key[1]
        options[key].pop("output_dir")
        if key[0] == "pretrained":
            assert options[key].pop("init_checkpoint") == str(work_dir / "pretraining" / "model")
            assert options[key].pop("config") is None
        else:
            assert options[key].pop("init_checkpoint") is None
            assert options[key].pop("config").endswith("albert_config.json")
    assert all(option == options["pretrained", seeds[0]] for option in options.values())
    accuracy = {key: run["history"][-1]["accuracy"] for key, run in runs.items()}
    gains = [accuracy["pretrained", seed] - accuracy["from_scratch", seed] for seed in seeds]
    gain = summary["sst2_dev_accuracy_gain"]
    assert gain["per_seed"] == pytest.approx(gains, abs=1e-12)
    assert gain["mean"] == pytest.approx(sum(gains) / len(gains), abs=1e-12)
    assert gain["range"] == pytest.approx([min(gains), max(gains)], abs=1e-12)
    # The pretraining text holds SST-2's training sentences but never its labels, nor any
    # held-out text.
    corpus = json.loads((work_dir / "steps" / "corpus.json").read_text())
    assert corpus["documents"]["train/task"] > 60000
    assert corpus["documents"]["held_out/wikitext"] > 0
    train_text = set(pathlib.Path(corpus["train_file"]).read_text().splitlines()) - {""}
    held_out_text = set(pathlib.Path(corpus["held_out_file"]).read_text().splitlines()) - {""}
    assert train_text.isdisjoint(held_out_text)
    assert not [line for line in train_text if re.search(r"\t[01]$", line)]
    # ... and printed for a reader, rounded, under a line that says it is a smoke run, beside
    # what always answering the majority label scores on the same dev file.
    assert summary["smoke_run"] is True and MainJobOptions().smoke is False
    printed = quick_run.stdout.split("== keras_albert main job: summary")[1].strip()
    assert printed.startswith("SMOKE RUN (--quick):") and "carry no signal" in printed
    dev_labels = [line.rsplit("\t", 1)[1] for line in DEV_FILE.read_text().splitlines()[1:]]
    majority = max(dev_labels.count("0"), dev_labels.count("1")) / len(dev_labels)
    assert summary["sst2_dev_majority_accuracy"] == pytest.approx(majority, abs=1e-12)
    assert f"(always the majority label: {majority:.3f})" in printed
    assert f"gain from pretraining: {100 * gain['mean']:+.1f} points" in quick_run.stdout
    assert f"SOP accuracy {held_out['sop_accuracy']:.3f}" in quick_run.stdout
    per_seed = " / ".join(f"{100 * value:+.1f}" for value in gain["per_seed"])
    assert f"pretrained minus from scratch with the same fine-tuning seed; per seed {per_seed}" in (
        quick_run.stdout
    )
    # What a quoted figure needs beside it: date, CPU, oneDNN's state, command and commit.
    machine = summary["machine"]
    assert machine["cpu"] == cpu_features() and machine["onednn"] is onednn_enabled()
    ended = datetime.datetime.fromisoformat(summary["date"])
    assert abs(datetime.datetime.now(datetime.timezone.utc) - ended).total_seconds() < 3600
    assert "-m examples.main --quick" in summary["command"]
    assert re.fullmatch(r"[0-9a-f]{40}\+?", machine["commit"])
    assert f"family {machine['cpu']['family']} model {machine['cpu']['model']}" in printed
    # The fields every result file under benchmarks/results/ records.
    assert not missing_fields(summary)
    # The curves are a readable PNG with something drawn on it.
    import matplotlib.image

    image = matplotlib.image.imread(work_dir / "curves.png")
    assert image.ndim == 3 and image.shape[1] > 3 * image.shape[0]  # four panels side by side
    assert image[..., :3].std() > 0.05


@SMOKE_RUN
def test_quick_output_has_no_start_up_noise_and_no_trainer_dump(quick_run):
    output = quick_run.stdout + quick_run.stderr
    lines = output.replace("\r", "\n").splitlines()
    noisy = [line for line in lines if re.match(r"[EWI]0000 ", line)]
    assert not noisy, noisy[:5]
    for marker in ("trainer_interface.cc", "trainer_spec {", "normalizer_spec {", "Traceback"):
        assert marker not in output, marker
    # Numbers for a reader are rounded: no 16-digit floats in the printed summary.
    printed_summary = quick_run.stdout.split("== keras_albert main job: summary")[1]
    assert not re.search(r"\d\.\d{6,}", printed_summary), printed_summary


@SMOKE_RUN
def test_quick_progress_lines_carry_a_time_estimate(quick_run):
    output = quick_run.stdout.replace("\r", "\n")
    sections = dict(
        pretraining=output.split("pretraining ...", 1)[-1].split("] pretraining:", 1)[0],
        finetuning=output.split("] finetuning ...", 1)[-1].split("] finetuning:", 1)[0],
    )
    for name, section in sections.items():
        estimates = [line for line in section.splitlines() if re.search(r"\b(left|ETA)\b", line)]
        assert estimates, f"no progress line with a time estimate in {name}:\n{section[-2000:]}"
        assert not re.search(r"\bEpoch \d+/\d+", section), name  # log intervals are not epochs


@SMOKE_RUN
def test_rerun_skips_every_finished_step(quick_run, tmp_path):
    work_dir = copy_of(quick_run, tmp_path)
    rerun = run_main("--output-dir", str(work_dir), "--saved-models-dir", str(quick_run.saved))
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    for step in STEPS:
        assert f"{step}: done before, skipped" in rerun.stdout
    assert sorted(p.name for p in (quick_run.saved / "albert_sst2_quick").iterdir()) == ["1"]


@SMOKE_RUN  # and a second pretraining of the quick job
def test_force_after_a_finished_run_retrains_pretraining_from_step_0(quick_run, tmp_path):
    work_dir = copy_of(quick_run, tmp_path)
    finished = json.loads((work_dir / "steps" / "pretraining.json").read_text())
    assert finished["summary"]["step"] == MainJobOptions.quick().pretrain_train_steps
    # A smaller budget than the finished run's 60 steps. Without the clearing the driver finds
    # the finished run in its directory: it refuses the changed options (checked: ValueError
    # "holds a run with other options"), and with unchanged ones it resumes at step 60 and
    # trains nothing. Redoing trains exactly the budget, from step 0.
    options = MainJobOptions.quick(
        output_dir=str(work_dir), force=True, pretrain_train_steps=20, pretrain_evaluations=1
    )
    results = run_steps(options, ("corpus", "tokenizer", "pretraining_data", "pretraining"))
    summary = results["pretraining"]["summary"]
    assert summary["resumed_from_step"] is None
    assert summary["step"] == summary["trained_steps_this_run"] == 20
    with open(work_dir / "pretraining" / "model" / "history.csv", encoding="utf-8") as f:
        steps = [int(float(row["step"])) for row in csv.DictReader(f)]
    assert steps == [10, 20]  # the new run's rows only
    assert json.loads((work_dir / "steps" / "pretraining.json").read_text())["summary"] == summary


def test_bad_step_names_and_evaluation_counts_are_refused(tmp_path):
    with pytest.raises(ValueError, match=r"Unknown steps \['pretrain'\]"):
        run_steps(MainJobOptions.quick(output_dir=str(tmp_path)), ("tokenizer", "pretrain"))
    assert not any(tmp_path.iterdir())  # refused before any step ran
    with pytest.raises(ValueError, match="pretrain_evaluations=0"):
        MainJobOptions(pretrain_evaluations=0)
    with pytest.raises(ValueError, match=r"Received: finetune_seeds=\(0, 0\)"):
        MainJobOptions(finetune_seeds=(0, 0))
    with pytest.raises(ValueError, match=r"Received: finetune_seeds=\(-1,\)"):
        MainJobOptions(finetune_seeds=(-1,))
    with pytest.raises(ValueError, match=r"Received: finetune_seeds='0,x'"):
        parse_seeds("0,x")


def load_tool():
    import examples.main

    return examples.main


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
    assert tool.parse_options(["--finetune-seeds", "3,1"]).finetune_seeds == (3, 1)
    bfloat16 = tool.parse_options(["--precision", "mixed_bfloat16"])
    assert MainJobOptions().precision == "auto"
    assert pretraining_options(bfloat16).precision == "mixed_bfloat16"


def test_masking_options_reach_the_records_and_the_dynamic_masks_alike():
    from examples.main_job.steps import pretraining_data_config, pretraining_options

    options = MainJobOptions(max_ngram=2, masked_lm_prob=0.2)
    for made in (pretraining_data_config(options, "train"), pretraining_options(options)):
        assert (made.max_ngram, made.masked_lm_prob) == (2, 0.2)


def test_the_data_defaults_are_the_files_that_ship_in_data():
    options = MainJobOptions()
    assert pathlib.Path(options.corpus_dir) == REPO_ROOT / "data" / "corpus" / "janeaustenr"
    data = (options.corpus_dir, options.wikitext, options.finetune_train_data)
    for path in (*data, options.finetune_eval_data):
        assert pathlib.Path(path).exists(), path


def test_bad_model_fields_are_refused_naming_the_value():
    from examples.main_job.options import parse_model

    with pytest.raises(ValueError, match="Received: model='num_layers'"):
        parse_model("num_layers")
    with pytest.raises(ValueError, match="three"):
        parse_model("num_layers=three")


PROBE = REPO_ROOT / "tools" / "probe_saved_model.py"


@SMOKE_RUN
def test_the_probe_tool_classifies_with_class_names_and_full_precision(quick_run):
    export = quick_run.saved / "albert_sst2_quick" / "1"
    texts = ["a gorgeous , witty , seductive movie .", "a sour little movie at its core ."]
    # -I: isolated from PYTHONPATH and the script's folder, as a user's deployment would be.
    completed = subprocess.run(
        [sys.executable, "-I", str(PROBE), str(export), *texts, "--repeats", "0"],
        capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert completed.stderr == ""  # TensorFlow's start-up lines hidden
    result = json.loads(completed.stdout.strip().splitlines()[-1])
    assert result["keras_albert_imported"] is False
    assert result["latency_ms_batch_1"] is None  # --repeats 0
    probabilities = np.array([p["probabilities"] for p in result["predictions"]])
    np.testing.assert_allclose(
        probabilities, best_model_probabilities(quick_run.work_dir, texts), atol=1e-5, rtol=0
    )
    # Full float32 precision, not rounded for display: float32 values printed exactly.
    assert probabilities.tolist() == probabilities.astype(np.float32).astype(float).tolist()
    assert any(len(repr(p)) > 8 for p in probabilities.ravel())
    assert [p["class"] for p in result["predictions"]] == [
        ("negative", "positive")[int(np.argmax(row))] for row in probabilities
    ]


def test_the_probe_tool_says_in_one_line_when_there_is_no_export(tmp_path):
    completed = subprocess.run(
        [sys.executable, "-I", str(PROBE), str(tmp_path / "missing"), "a text"],
        capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip
    assert completed.returncode == 1
    assert completed.stderr.splitlines() == [
        f"error: no SavedModel at {tmp_path / 'missing'} (no saved_model.pb)"
    ]
    assert completed.stdout == ""
