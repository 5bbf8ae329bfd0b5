"""The main job's steps, end to end on data that ships with the repository.

Austen novels + WikiText-2 + SST-2's training sentences (unlabeled) → SentencePiece model on
all that text → SOP TFRecords (n-gram masks drawn anew every pass) → small ALBERT pretrained
with LAMB → fine-tuned on SST-2 from that checkpoint, and the same architecture from scratch
with the same budget, once per seed (the gain is pretraining's) → the pretrained one exported
for TF Serving → loaded as the server would (`keras-albert probe`: TF1 session loader, in a
fresh process without keras_albert) → summary and curves.

Each step writes its result under `output_dir`; a rerun skips the finished steps (pretraining
also resumes an interrupted run) unless `force=True`, which redoes every step (pretraining
from step 0, in its cleared run directory); an export never overwrites an existing version: a
forced rerun writes the next version.
"""

import collections
import dataclasses
import datetime
import glob
import importlib.util
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time

from .curves import plot_curves
from .options import REPOSITORY, MainJobOptions

# The user-facing export probe (`keras-albert probe`), run from its file in a fresh process as
# the command runs it (finding it imports keras_albert.commands here, never there).
PROBE = importlib.util.find_spec("keras_albert.commands.probe").origin

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
    "corpus",
    "tokenizer",
    "pretraining_data",
    "pretraining",
    "finetuning",
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
        ("corpus", lambda: _build_corpus(options, train_files, held_out_files)),
        ("tokenizer", lambda: _train_tokenizer(options)),
        ("pretraining_data", lambda: _pretraining_data(options)),
        ("pretraining", lambda: _pretrain(options)),
        ("finetuning", lambda: _finetune(options)),
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


def _build_corpus(options: MainJobOptions, train_files, held_out_files) -> dict:
    """The pretraining text and the held-out text (`task_corpus.build_task_corpus`)."""
    from .corpus import build_task_corpus

    corpus = build_task_corpus(
        options.path("corpus"),
        books=train_files,
        held_out_books=held_out_files,
        wikitext=options.wikitext,
        held_out_articles=options.held_out_articles if options.wikitext else 0,
        task_train_data=options.finetune_train_data if options.task_sentences else None,
        seed=options.seed,
    )
    print(f"corpus: {corpus.documents} documents; left out: {corpus.dropped}")
    return dataclasses.asdict(corpus)


def _train_tokenizer(options: MainJobOptions) -> dict:
    from keras_albert.text.sentencepiece_trainer import train_sentencepiece

    model_path = tokenizer_path(options)
    os.makedirs(os.path.dirname(model_path), exist_ok=True)
    result = train_sentencepiece(
        [read_result(options, "corpus")["train_file"]],
        model_path.removesuffix(".model"),  # the trainer takes the prefix
        vocabulary_size=options.vocabulary_size,
        seed=options.seed,
    )
    return {"model": model_path, "summary": str(result)}


def tokenizer_path(options: MainJobOptions) -> str:
    return options.path("tokenizer", "sentencepiece.model")


def pretraining_data_config(options: MainJobOptions, split: str):
    """How the `split` ("train" or "eval") records are made: the eval records are one pass."""
    from keras_albert.pretraining.data import PretrainingDataConfig

    from .corpus import DOCUMENT_SPLIT

    return PretrainingDataConfig(
        sequence_length=options.sequence_length,
        max_predictions_per_sequence=options.max_predictions_per_sequence,
        masked_lm_prob=options.masked_lm_prob,
        max_ngram=options.max_ngram,
        dupe_factor=options.dupe_factor if split == "train" else 1,
        task=options.pair_task,
        document_split=DOCUMENT_SPLIT,
        seed=options.seed + len(split),
    )


def tokenizer_factory(options: MainJobOptions):
    """The job's tokenizer, as the pretraining data writers take it (made in each worker)."""
    import functools

    from keras_albert.text.tokenizer import AlbertTokenizer

    return functools.partial(AlbertTokenizer, proto=tokenizer_path(options))


def _pretraining_data(options) -> dict:
    from keras_albert.pretraining.data import create_pretraining_data

    corpus = read_result(options, "corpus")
    results = {}
    for split, text_file, num_shards in (
        ("train", corpus["train_file"], 4),
        ("eval", corpus["held_out_file"], 1),
    ):
        summary = create_pretraining_data(
            [text_file],
            options.path("pretraining_data", split),
            tokenizer_factory(options),
            pretraining_data_config(options, split),
            num_workers=1,  # short documents: worker round trips would cost more than they save
            num_shards=num_shards,
        )
        print(summary)
        results[split] = {"examples": summary.num_examples, "summary": str(summary)}
    return results


def _pretrain(options: MainJobOptions) -> dict:
    from keras_albert.pretraining.driver import pretrain

    run_options = pretraining_options(options)
    if options.force:  # redo, not resume: the finished run's checkpoints would be restored
        shutil.rmtree(run_options.output_dir, ignore_errors=True)
    os.makedirs(os.path.dirname(run_options.config), exist_ok=True)
    options.albert_config().to_json(run_options.config)
    summary = pretrain(run_options)
    return {"output_dir": run_options.output_dir, "summary": summary}


def pretraining_options(options: MainJobOptions):
    """The job's `PretrainingOptions` (its config file is written by the pretraining step)."""
    from keras_albert.pretraining.options import PretrainingOptions

    # Checkpoints and evaluations fall on log boundaries (the driver's Keras epochs).
    steps_per_execution = 10
    log_every = max(options.pretrain_train_steps // 40 // steps_per_execution, 1)
    log_every *= steps_per_execution
    every = options.pretrain_train_steps // options.pretrain_evaluations
    every = log_every * max(1, every // log_every)
    return PretrainingOptions(
        config=options.path("pretraining", "albert_config.json"),
        train_data=options.path("pretraining_data", "train-*.tfrecord"),
        eval_data=options.path("pretraining_data", "eval-*.tfrecord"),
        output_dir=options.path("pretraining", "model"),
        vocabulary=tokenizer_path(options),
        dynamic_masking=True,
        masked_lm_prob=options.masked_lm_prob,
        max_ngram=options.max_ngram,
        train_steps=options.pretrain_train_steps,
        batch_size=options.pretrain_batch_size,
        learning_rate=options.pretrain_learning_rate,
        sentence_order_loss_weight=options.pretrain_sentence_order_loss_weight,
        warmup_steps=max(options.pretrain_train_steps // 10, 1),
        strategy="cpu",
        log_every_steps=log_every,
        checkpoint_every_steps=every,
        eval_every_steps=every,
        steps_per_execution=steps_per_execution,
        jit_compile=options.jit_compile,
        precision=options.precision,
        seed=options.seed,
    )


def _finetune(options: MainJobOptions) -> dict:
    """SST-2 from the pretraining checkpoint and the same architecture from random weights: one
    run per side and seed of `finetune_seeds` (the seed of the head's or the whole model's
    initial weights and of the batch order; the training sample is the same), all of them
    `finetune_processes` at a time (`parallel_runs.finetune_runs`)."""
    from keras_albert.finetuning.parallel_runs import finetune_runs
    from keras_albert.training.progress import format_duration

    train_file = options.path("finetuning", "sst2_train_sample.tsv")
    os.makedirs(os.path.dirname(train_file), exist_ok=True)
    sample_tsv(options.finetune_train_data, train_file, options.finetune_examples, options.seed)
    sides = {"pretrained": False, "from_scratch": True}
    keys = [(side, seed) for side in sides for seed in options.finetune_seeds]
    runs = []
    for side, seed in keys:
        from_scratch = sides[side]
        learning_rate = options.finetune_learning_rate
        if from_scratch and options.finetune_from_scratch_learning_rate is not None:
            learning_rate = options.finetune_from_scratch_learning_rate
        output_dir = options.finetuning_dir(from_scratch, seed)
        if options.force:
            shutil.rmtree(output_dir, ignore_errors=True)
        runs.append(
            finetuning_options(
                options,
                from_scratch,
                train_data=train_file,
                eval_data=options.finetune_eval_data,
                output_dir=output_dir,
                learning_rate=learning_rate,
                train_steps=options.finetune_train_steps,
                num_evaluations=options.finetune_evaluations,
                seed=seed,
                verbose=2,
            )
        )
    started, finished = time.perf_counter(), []

    def report(index: int, summary: dict, seconds: float) -> None:
        finished.append(index)
        (side, seed), last = keys[index], summary["history"][-1]
        elapsed = time.perf_counter() - started
        left = elapsed / len(finished) * (len(keys) - len(finished))
        print(
            f"finetuning: {len(finished)}/{len(keys)} runs done · {side} seed {seed}: dev "
            f"accuracy {_round(last.get('accuracy'))} ({format_duration(seconds)}) · "
            f"{format_duration(left)} left",
            flush=True,
        )

    summaries = finetune_runs(runs, options.finetune_processes, on_finish=report)
    result = {side: {"runs": []} for side in sides}
    for (side, seed), run, summary in zip(keys, runs, summaries, strict=True):
        result[side]["runs"].append(
            {"seed": seed, "output_dir": run.output_dir, "summary": summary}
        )
    return result


def finetuning_options(options: MainJobOptions, from_scratch: bool, *, dataset="SST-2", **run):
    """The job's fine-tuning options (its tokenizer, lengths, batch, dynamic padding, XLA)
    for one run: from the pretraining checkpoint, or the same architecture from scratch.
    `run`: the run's own `FinetuningOptions` fields (data, output, rate, steps, seed, ...)."""
    from keras_albert.finetuning.driver import FinetuningOptions

    start = (
        {"config": pretraining_options(options).config}
        if from_scratch
        else {"init_checkpoint": options.path("pretraining", "model")}
    )
    return FinetuningOptions(
        dataset=dataset,
        warmup_steps=max(run["train_steps"] // 10, 1),
        vocabulary=tokenizer_path(options),
        sequence_length=options.finetune_sequence_length,
        batch_size=options.finetune_batch_size,
        pad_to_multiple_of=options.finetune_pad_to_multiple_of,
        group_by_length=options.finetune_group_by_length,
        jit_compile=options.jit_compile,
        precision=options.precision,
        **start,
        **run,
    )


def sample_tsv(source: str, destination: str, count: int, seed: int) -> tuple[str, list[str]]:
    """A seeded sample of `count` data rows of a TSV with a header, header kept (all the rows,
    shuffled, when the file holds no more than `count`); returns the header and the rows."""
    with open(source, encoding="utf-8") as f:
        header, *rows = f.readlines()
    rows = random.Random(seed).sample(rows, min(count, len(rows)))
    write_tsv(destination, header, rows)
    return header, rows


def write_tsv(path: str, header: str, rows: list[str]) -> str:
    """`header` and `rows` (lines with their newlines) to `path`, written whole or not at all."""
    from keras_albert.text.files import write_text_atomically

    write_text_atomically(path, "".join([header, *rows]))
    return path


def _export(options: MainJobOptions) -> dict:
    import keras

    from keras_albert.export.serving_layout import export_for_serving
    from keras_albert.text.tokenizer import AlbertTokenizer

    classifier = keras.models.load_model(
        os.path.join(options.finetuning_dir(from_scratch=False), "best.keras"), compile=False
    )
    path = export_for_serving(
        classifier,
        AlbertTokenizer(tokenizer_path(options)),
        base_dir=options.saved_models_dir,
        name=options.export_name,
        class_names=["negative", "positive"],
    )
    return {"path": os.fspath(path)}


def _serve(options: MainJobOptions) -> dict:
    """Classifies a few sentences through the export in a fresh process, as TF Serving would."""
    export_path = read_result(options, "export")["path"]
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


def read_result(options: MainJobOptions, name: str) -> dict:
    with open(options.path("steps", f"{name}.json"), encoding="utf-8") as f:
        return json.load(f)


def _summary(options: MainJobOptions, results: dict, seconds: float) -> dict:
    # Each run's last evaluation: no checkpoint is chosen on the dev set the gain is measured
    # on (`best.keras`, the dev set's best, is what gets exported).
    sides = {
        side: [run["summary"]["history"][-1] for run in results["finetuning"][side]["runs"]]
        for side in ("pretrained", "from_scratch")
    }
    serving = results["serving"]
    summary = {
        "smoke_run": options.smoke,
        "precision": results["pretraining"]["summary"].get("precision"),
        "pretraining_held_out": results["pretraining"]["summary"].get("eval"),
        "finetune_seeds": list(options.finetune_seeds),
        "sst2_dev": sides,
        "sst2_dev_accuracy_gain": _gain(sides["pretrained"], sides["from_scratch"], "accuracy"),
        "sst2_dev_majority_accuracy": majority_accuracy(options.finetune_eval_data),
        "export_path": results["export"]["path"],
        "serving_latency_ms_batch_1": serving["latency_ms_batch_1"],
        "served_predictions": serving["predictions"],
        "step_seconds": {name: result["seconds"] for name, result in results.items()},
        "total_seconds_this_run": round(seconds, 1),
        "curves": plot_curves(options),
        **run_record(),
    }
    from keras_albert.text.files import write_text_atomically

    write_text_atomically(options.path("summary.json"), json.dumps(summary, indent=2))
    print("\n== keras_albert main job: summary")
    print(summary_text(summary))
    return summary


def command_line() -> str:
    """The command line as it was run: `python -m examples.main ...` for a module (whose
    `sys.argv[0]` is its file)."""
    spec = getattr(sys.modules["__main__"], "__spec__", None)
    program = ["-m", spec.name] if spec else sys.argv[:1]
    return " ".join([os.path.basename(sys.executable), *program, *sys.argv[1:]])


def run_record() -> dict:
    """What a figure quoted from this summary needs beside it: when, on what CPU (model, family,
    the flags that decide the precision), with oneDNN or not, under what load, by which command
    at which commit (`+`: the checkout differed from it)."""
    from keras_albert.cpu import cpu_features, onednn_enabled

    def git(*args):
        return subprocess.run(
            ["git", *args], cwd=REPOSITORY, capture_output=True, text=True, check=False
        )

    head = git("rev-parse", "HEAD")
    commit = "unknown"
    if head.returncode == 0:
        commit = head.stdout.strip() + ("+" if git("diff", "--quiet", "HEAD").returncode else "")
    # The fields and layout of the benchmarks' result files (`benchmarks/prelude.py`).
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": command_line(),
        "machine": {
            "cpu": cpu_features(),
            "onednn": onednn_enabled(),
            "cpus": os.cpu_count(),
            "load_average": [round(value, 2) for value in os.getloadavg()],  # at the end
            "commit": commit,
        },
    }


def majority_accuracy(path: str) -> float:
    """The accuracy of always answering the most frequent label of the GLUE-style file `path`:
    the floor a fine-tuned model must clear to have learned anything."""
    from keras_albert.tasks.classification.reader import read_examples

    labels = read_examples(path, "SST-2", progress=False).labels.tolist()
    return max(collections.Counter(labels).values()) / len(labels)


def _gain(pretrained: list[dict], from_scratch: list[dict], metric: str) -> dict | None:
    """`seed_gains` of `metric` in each run's results (None where a run lacks it)."""
    pairs = list(zip(pretrained, from_scratch, strict=True))
    if not pairs or any(metric not in p or metric not in s for p, s in pairs):
        return None
    return seed_gains([p[metric] for p, _ in pairs], [s[metric] for _, s in pairs])


def seed_gains(pretrained: list[float], from_scratch: list[float]) -> dict:
    """Pretrained minus from scratch, seed by seed: each, their mean, their range."""
    gains = [p - s for p, s in zip(pretrained, from_scratch, strict=True)]
    return {"per_seed": gains, **mean_and_range(gains)}


def mean_and_range(values: list[float]) -> dict:
    return {"mean": statistics.fmean(values), "range": [min(values), max(values)]}


def _mean_and_range(runs: list[dict], metric: str) -> str:
    values = [run[metric] for run in runs if metric in run]
    if not values:
        return "n/a"
    return f"{statistics.fmean(values):.3f} [{min(values):.3f}, {max(values):.3f}]"


def summary_text(summary: dict) -> str:
    """The summary for a reader: numbers rounded to what they can tell, class names."""
    held_out = summary["pretraining_held_out"] or {}
    pretrained, from_scratch = (
        summary["sst2_dev"]["pretrained"],
        summary["sst2_dev"]["from_scratch"],
    )
    gain = summary["sst2_dev_accuracy_gain"]
    seeds = len(summary["finetune_seeds"])
    lines = []
    if summary["smoke_run"]:
        lines.append(
            "SMOKE RUN (--quick): every step ran on a tiny budget to check that it works; the "
            "accuracies, the gain and the predictions below carry no signal (run without "
            "--quick for the measured job)"
        )
    lines += [
        f"precision: {summary.get('precision') or 'n/a'}",
        f"pretraining, held out: MLM accuracy {_round(held_out.get('mlm_accuracy'))}, "
        f"SOP accuracy {_round(held_out.get('sop_accuracy'))}",
        f"SST-2 dev accuracy after fine-tuning, mean [min, max] of {seeds} seed(s): pretrained "
        f"{_mean_and_range(pretrained, 'accuracy')}, from scratch "
        f"{_mean_and_range(from_scratch, 'accuracy')} (always the majority label: "
        f"{summary['sst2_dev_majority_accuracy']:.3f})",
        "gain from pretraining: "
        + (
            "n/a"
            if gain is None
            else f"{100 * gain['mean']:+.1f} points [{100 * gain['range'][0]:+.1f}, "
            f"{100 * gain['range'][1]:+.1f}] (mean [min, max] over the {seeds} seed(s) of the "
            "paired gain, pretrained minus from scratch with the same fine-tuning seed; per "
            "seed " + " / ".join(f"{100 * value:+.1f}" for value in gain["per_seed"]) + ")"
        ),
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
    machine = summary.get("machine") or {}
    cpu = machine.get("cpu") or {}
    lines += [
        f"steps: {steps}; this run {summary['total_seconds_this_run'] / 60:.1f} min",
        f"machine: {cpu.get('model_name', 'n/a')} (family {cpu.get('family')} model "
        f"{cpu.get('model')}), {machine.get('cpus')} cores, oneDNN {machine.get('onednn')}, "
        f"load {machine.get('load_average')}; commit {machine.get('commit')}; {summary['date']}",
        f"curves: {summary['curves']}",
    ]
    return "\n".join(lines)


def _round(value) -> str:
    return "n/a" if value is None else f"{value:.3f}"
