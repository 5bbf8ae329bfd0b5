"""The main job's steps, end to end on data that ships with the repository.

raw Austen novels → SentencePiece model → SOP + n-gram-masked TFRecords → small ALBERT
pretrained with LAMB → fine-tuned on SST-2 from that checkpoint, and the same architecture
from scratch with the same budget (the gain is pretraining's) → the pretrained one exported
for TF Serving → loaded as the server would (`tools/probe_saved_model.py`: TF1 session
loader, in a fresh process without keras_albert) → summary and curves.

Each step writes its result under `output_dir`; a rerun skips the finished steps (pretraining
also resumes an interrupted run) unless `force=True`, which redoes every step (pretraining
from step 0, in its cleared run directory); an export never overwrites an existing version: a
forced rerun writes the next version.
"""

import glob
import json
import os
import random
import shutil
import subprocess
import sys
import time

from main_job.curves import plot_curves
from main_job.options import REPOSITORY, MainJobOptions

# The user-facing export probe (tools/probe_saved_model.py), run in a fresh process.
PROBE = os.path.join(REPOSITORY, "tools", "probe_saved_model.py")

PROBE_SENTENCES = (
    "a gorgeous , witty , seductive movie .",
    "the plot is nothing but boilerplate clichés from start to finish .",
    "it 's a charming and often affecting journey .",
    "a sour little movie at its core .",
    "Emma was delighted with the ball, and everyone agreed it was a success.",
)


def run_main_job(options: MainJobOptions) -> dict:
    """Runs every step (skipping finished ones); returns and prints the summary."""
    started = time.perf_counter()
    results = run_steps(options, STEPS)
    summary = _summary(options, results, time.perf_counter() - started)
    return summary


STEPS = (
    "tokenizer",
    "pretraining_data",
    "pretraining",
    "finetuning",
    "finetuning_from_scratch",
    "export",
    "serving",
)


def run_steps(options: MainJobOptions, names: tuple[str, ...]) -> dict:
    """Runs the named steps of the job, in order, skipping finished ones; their results by name.

    A step needs the results of the steps before it (run now or earlier in `output_dir`).
    """
    unknown = [name for name in names if name not in STEPS]
    if unknown:
        raise ValueError(f"Unknown steps {unknown}; the steps are {list(STEPS)}.")
    train_files, held_out_files = _corpus(options)  # a missing corpus fails before any step
    steps = [step for step in _steps(options, train_files, held_out_files) if step[0] in names]
    os.makedirs(options.output_dir, exist_ok=True)
    return {
        name: _step(options, number, len(steps), name, run)
        for number, (name, run) in enumerate(steps, start=1)
    }


def _steps(options: MainJobOptions, train_files: list[str], held_out_files: list[str]) -> list:
    return [
        ("tokenizer", lambda: _train_tokenizer(options, train_files)),
        ("pretraining_data", lambda: _pretraining_data(options, train_files, held_out_files)),
        ("pretraining", lambda: _pretrain(options)),
        ("finetuning", lambda: _finetune(options, from_scratch=False)),
        ("finetuning_from_scratch", lambda: _finetune(options, from_scratch=True)),
        ("export", lambda: _export(options)),
        ("serving", lambda: _serve(options)),
    ]


def _step(options: MainJobOptions, number: int, total: int, name: str, run) -> dict:
    """Runs one step unless its result file exists; the result file marks it finished."""
    result_path = options.path("steps", f"{name}.json")
    if os.path.exists(result_path) and not options.force:
        print(f"[{number}/{total}] {name}: done before, skipped ({result_path})", flush=True)
        with open(result_path, encoding="utf-8") as f:
            return json.load(f)
    print(f"[{number}/{total}] {name} ...", flush=True)
    step_started = time.perf_counter()
    result = run()
    result["seconds"] = round(time.perf_counter() - step_started, 1)
    os.makedirs(os.path.dirname(result_path), exist_ok=True)
    with open(result_path, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=2)
    print(f"[{number}/{total}] {name}: {result['seconds']} s", flush=True)
    return result


def _corpus(options: MainJobOptions) -> tuple[list[str], list[str]]:
    files = sorted(glob.glob(os.path.join(options.corpus_dir, "*.txt")))
    held_out = [f for f in files if os.path.basename(f) == options.held_out]
    train = [f for f in files if os.path.basename(f) != options.held_out]
    if not held_out or not train:
        raise ValueError(
            f"Expected several *.txt novels in corpus_dir={options.corpus_dir!r}, one of them "
            f"held_out={options.held_out!r}. Found: {[os.path.basename(f) for f in files]}"
        )
    return train[: options.corpus_files], held_out


def _train_tokenizer(options: MainJobOptions, train_files: list[str]) -> dict:
    from keras_albert.text.sentencepiece_trainer import train_sentencepiece

    model_path = _tokenizer_path(options)
    os.makedirs(os.path.dirname(model_path), exist_ok=True)
    result = train_sentencepiece(
        train_files,
        model_path.removesuffix(".model"),  # the trainer takes the prefix
        vocabulary_size=options.vocabulary_size,
        seed=options.seed,
    )
    return {"model": model_path, "summary": str(result)}


def _tokenizer_path(options: MainJobOptions) -> str:
    return options.path("tokenizer", "austen.model")


def _pretraining_data(options, train_files, held_out_files) -> dict:
    import functools

    from keras_albert.text.pretraining import PretrainingDataConfig, create_pretraining_data
    from keras_albert.text.tokenizer import AlbertTokenizer

    tokenizer = functools.partial(AlbertTokenizer, proto=_tokenizer_path(options))
    results = {}
    for split, files, dupe_factor, num_shards in (
        ("train", train_files, options.dupe_factor, 4),
        ("eval", held_out_files, 1, 1),
    ):
        config = PretrainingDataConfig(
            sequence_length=options.sequence_length,
            dupe_factor=dupe_factor,
            seed=options.seed + len(split),
        )
        summary = create_pretraining_data(
            files,
            options.path("pretraining_data", split),
            tokenizer,
            config,
            num_workers=min(2, os.cpu_count() or 1),
            num_shards=num_shards,
            start_method="fork" if sys.platform == "linux" else "spawn",
        )
        print(summary)
        results[split] = {"examples": summary.num_examples, "summary": str(summary)}
    return results


def _pretrain(options: MainJobOptions) -> dict:
    from keras_albert.training.pretraining import pretrain

    run_options = pretraining_options(options)
    if options.force:  # redo, not resume: the finished run's checkpoints would be restored
        shutil.rmtree(run_options.output_dir, ignore_errors=True)
    os.makedirs(os.path.dirname(run_options.config), exist_ok=True)
    options.albert_config().to_json(run_options.config)
    summary = pretrain(run_options)
    return {"output_dir": run_options.output_dir, "summary": summary}


def pretraining_options(options: MainJobOptions):
    """The job's `PretrainingOptions` (its config file is written by the pretraining step)."""
    from keras_albert.training.pretraining import PretrainingOptions

    # Checkpoints and evaluations fall on log boundaries (the driver's Keras epochs).
    log_every = max(options.pretrain_train_steps // 40, 10)
    every = options.pretrain_train_steps // options.pretrain_evaluations
    every = log_every * max(1, every // log_every)
    return PretrainingOptions(
        config=options.path("pretraining", "albert_config.json"),
        train_data=options.path("pretraining_data", "train-*.tfrecord"),
        eval_data=options.path("pretraining_data", "eval-*.tfrecord"),
        output_dir=options.path("pretraining", "model"),
        sentencepiece_model=_tokenizer_path(options),
        train_steps=options.pretrain_train_steps,
        batch_size=options.pretrain_batch_size,
        learning_rate=options.pretrain_learning_rate,
        sentence_order_loss_weight=options.pretrain_sentence_order_loss_weight,
        warmup_steps=max(options.pretrain_train_steps // 10, 1),
        strategy="cpu",
        log_every_steps=log_every,
        checkpoint_every_steps=every,
        eval_every_steps=every,
        jit_compile=False,
        seed=options.seed,
    )


def _finetune(options: MainJobOptions, from_scratch: bool) -> dict:
    """SST-2 from the pretraining checkpoint, or the same architecture from random weights."""
    from keras_albert.training.finetuning import FinetuningOptions, finetune

    train_file = options.path("finetuning", "sst2_train_sample.tsv")
    os.makedirs(os.path.dirname(train_file), exist_ok=True)
    _sample_tsv(options.finetune_train_data, train_file, options.finetune_examples, options.seed)
    output_dir = options.finetuning_dir(from_scratch)
    if options.force:
        shutil.rmtree(output_dir, ignore_errors=True)
    learning_rate = options.finetune_learning_rate
    if from_scratch and options.finetune_from_scratch_learning_rate is not None:
        learning_rate = options.finetune_from_scratch_learning_rate
    start = (
        {"config": pretraining_options(options).config}
        if from_scratch
        else {"init_checkpoint": options.path("pretraining", "model")}
    )
    summary = finetune(
        FinetuningOptions(
            task="SST-2",
            train_data=train_file,
            eval_data=options.finetune_eval_data,
            output_dir=output_dir,
            sentencepiece_model=_tokenizer_path(options),
            sequence_length=options.finetune_sequence_length,
            learning_rate=learning_rate,
            batch_size=options.finetune_batch_size,
            train_steps=options.finetune_train_steps,
            warmup_steps=max(options.finetune_train_steps // 10, 1),
            epochs=options.finetune_evaluations,
            seed=options.seed,
            verbose=2,
            **start,
        )
    )
    return {"output_dir": output_dir, "summary": summary}


def _sample_tsv(source: str, destination: str, count: int, seed: int) -> None:
    """A seeded sample of `count` data rows of a TSV with a header, header kept."""
    with open(source, encoding="utf-8") as f:
        header, *rows = f.readlines()
    if count < len(rows):
        rows = random.Random(seed).sample(rows, count)
    with open(destination, "w", encoding="utf-8") as f:
        f.writelines([header, *rows])


def _export(options: MainJobOptions) -> dict:
    import keras

    from keras_albert.export.serving_layout import export_for_serving
    from keras_albert.text.tokenizer import AlbertTokenizer

    classifier = keras.models.load_model(
        os.path.join(options.finetuning_dir(from_scratch=False), "best.keras"), compile=False
    )
    path = export_for_serving(
        classifier,
        AlbertTokenizer(_tokenizer_path(options)),
        base_dir=options.saved_models_dir,
        name=options.export_name,
        class_names=["negative", "positive"],
    )
    return {"path": os.fspath(path)}


def _serve(options: MainJobOptions) -> dict:
    """Classifies a few sentences through the export in a fresh process, as TF Serving would."""
    export_path = _read_result(options, "export")["path"]
    # -I: isolated, so neither keras_albert nor the script's folder is importable there.
    completed = subprocess.run(
        [sys.executable, "-I", PROBE, export_path, *PROBE_SENTENCES],
        capture_output=True,
        text=True,
        check=False,
    )
    if completed.returncode != 0:
        raise RuntimeError(
            f"Loading {export_path} in a fresh process failed:\n{completed.stderr[-3000:]}"
        )
    return json.loads(completed.stdout.strip().splitlines()[-1])


def _read_result(options: MainJobOptions, name: str) -> dict:
    with open(options.path("steps", f"{name}.json"), encoding="utf-8") as f:
        return json.load(f)


def _summary(options: MainJobOptions, results: dict, seconds: float) -> dict:
    pretrained = results["finetuning"]["summary"].get("best") or {}
    from_scratch = results["finetuning_from_scratch"]["summary"].get("best") or {}
    serving = results["serving"]
    summary = {
        "pretraining_held_out": results["pretraining"]["summary"].get("eval"),
        "sst2_dev": {"pretrained": pretrained, "from_scratch": from_scratch},
        "sst2_dev_accuracy_gain": _gain(pretrained, from_scratch, "accuracy"),
        "export_path": results["export"]["path"],
        "serving_latency_ms_batch_1": serving["latency_ms_batch_1"],
        "served_predictions": serving["predictions"],
        "step_seconds": {name: result["seconds"] for name, result in results.items()},
        "total_seconds_this_run": round(seconds, 1),
        "curves": plot_curves(options),
    }
    with open(options.path("summary.json"), "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=2)
    print("\n== keras_albert main job: summary")
    print(summary_text(summary))
    return summary


def _gain(pretrained: dict, from_scratch: dict, metric: str) -> float | None:
    if metric not in pretrained or metric not in from_scratch:
        return None
    return pretrained[metric] - from_scratch[metric]


def summary_text(summary: dict) -> str:
    """The summary for a reader: numbers rounded to what they can tell, class names."""
    held_out = summary["pretraining_held_out"] or {}
    pretrained, from_scratch = (
        summary["sst2_dev"]["pretrained"],
        summary["sst2_dev"]["from_scratch"],
    )
    gain = summary["sst2_dev_accuracy_gain"]
    lines = [
        f"pretraining, held out: MLM accuracy {_round(held_out.get('mlm_accuracy'))}, "
        f"SOP accuracy {_round(held_out.get('sop_accuracy'))}",
        f"SST-2 dev accuracy: pretrained {_round(pretrained.get('accuracy'))}, from scratch "
        f"{_round(from_scratch.get('accuracy'))}, gain "
        + ("n/a" if gain is None else f"{100 * gain:+.1f} points"),
        f"export: {summary['export_path']}",
        f"served (batch-1 latency {summary['serving_latency_ms_batch_1']:.1f} ms):",
    ]
    for prediction in summary["served_predictions"]:
        name = prediction.get("class", prediction["label"])
        probability = prediction["probabilities"][prediction["label"]]
        lines.append(f"  {name} ({probability:.2f})  {prediction['text']}")
    steps = ", ".join(
        f"{name} {seconds:.0f} s" for name, seconds in summary["step_seconds"].items()
    )
    lines += [
        f"steps: {steps}; this run {summary['total_seconds_this_run'] / 60:.1f} min",
        f"curves: {summary['curves']}",
    ]
    return "\n".join(lines)


def _round(value) -> str:
    return "n/a" if value is None else f"{value:.3f}"
