"""The main job, end to end on data that ships with the repository.

raw Austen novels → SentencePiece model → SOP + n-gram-masked TFRecords → small ALBERT
pretrained with LAMB → fine-tuned on SST-2 → exported for TF Serving → loaded as the server
would (TF1 session loader, in a fresh process without keras_albert) → summary and curves.

Each step writes its result under `work_dir`; a rerun skips the finished steps (pretraining
also resumes an interrupted run) unless `force=True`, and an export never overwrites an
existing version: a forced rerun writes the next version.
"""

import csv
import dataclasses
import glob
import json
import os
import random
import subprocess
import sys
import time

from keras_albert.config import AlbertConfig

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SESSION_PROBE = os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "export", "session_probe.py"
)
PROBE_SENTENCES = (
    "a gorgeous , witty , seductive movie .",
    "the plot is nothing but boilerplate clichés from start to finish .",
    "it 's a charming and often affecting journey .",
    "a sour little movie at its core .",
    "Emma was delighted with the ball, and everyone agreed it was a success.",
)


@dataclasses.dataclass(frozen=True)
class MainJobOptions:
    """The budget and data of the main job; `MainJobOptions.quick()` is the ≤5-minute variant.

    Args:
        work_dir: where every step writes (tokenizer, data, pretraining, fine-tuning, summary).
        saved_models_dir: TF Serving base directory; the export goes to
            `<saved_models_dir>/<export_name>/<version>/`.
        export_name: the served model's name.
        corpus_dir: plain-text novels; `held_out` is kept out of the tokenizer and the
            pretraining data and used for held-out evaluation.
        sst2_train, sst2_dev: GLUE SST-2 files.
        vocabulary_size: SentencePiece pieces trained on the corpus.
        sequence_length: pretraining and fine-tuning sequence length.
        dupe_factor: masking passes over the pretraining corpus.
        corpus_files: how many training novels to use (None: all).
        model: the architecture (fields of `AlbertConfig`; vocabulary and length are filled in).
        pretrain_steps, pretrain_batch_size, pretrain_learning_rate: the pretraining budget.
        pretrain_sop_loss_weight: the SOP loss's weight (1.0: the original's sum).
        pretrain_evaluations: held-out evaluations (and checkpoints) over the run.
        finetune_examples: SST-2 training rows used (a seeded sample); the dev set is used whole.
        finetune_sequence_length: packed length for SST-2 (its sentences are short).
        finetune_steps, finetune_batch_size, finetune_learning_rate: the fine-tuning budget.
        force: redo finished steps (the export then becomes a new version).
        seed: the seed of every step.
    """

    work_dir: str = "runs/main"
    saved_models_dir: str = "saved_models"
    export_name: str = "albert_sst2"
    corpus_dir: str = os.path.join(REPO_ROOT, "data", "corpus", "janeaustenr")
    held_out: str = "persuasion.txt"
    sst2_train: str = os.path.join(REPO_ROOT, "data", "glue", "SST-2", "train.tsv")
    sst2_dev: str = os.path.join(REPO_ROOT, "data", "glue", "SST-2", "dev.tsv")
    vocabulary_size: int = 8000
    sequence_length: int = 128
    dupe_factor: int = 10
    corpus_files: int | None = None
    model: tuple = (
        ("embedding_dim", 128),
        ("hidden_dim", 128),
        ("intermediate_dim", 512),
        ("num_layers", 4),
        ("num_heads", 4),
    )
    pretrain_steps: int = 2000
    pretrain_batch_size: int = 32
    pretrain_learning_rate: float = 5e-3
    pretrain_sop_loss_weight: float = 1.0
    pretrain_evaluations: int = 5
    finetune_examples: int = 20000
    finetune_sequence_length: int = 64
    finetune_steps: int = 1500
    finetune_batch_size: int = 32
    finetune_learning_rate: float = 1e-4
    force: bool = False
    seed: int = 0

    @classmethod
    def quick(cls, **changes) -> "MainJobOptions":
        """A ≤5-minute run of every step (for smoke tests), numbers not meant to be good."""
        quick = dict(
            work_dir="runs/main-quick",
            export_name="albert_sst2_quick",
            vocabulary_size=2000,
            sequence_length=64,
            dupe_factor=1,
            corpus_files=2,
            model=(
                ("embedding_dim", 32),
                ("hidden_dim", 64),
                ("intermediate_dim", 128),
                ("num_layers", 2),
                ("num_heads", 2),
            ),
            pretrain_steps=60,
            pretrain_batch_size=16,
            finetune_examples=1000,
            finetune_sequence_length=32,
            finetune_steps=60,
            finetune_batch_size=16,
        )
        return cls(**{**quick, **changes})

    def __post_init__(self):
        if not isinstance(self.pretrain_evaluations, int) or self.pretrain_evaluations < 1:
            raise ValueError(
                "`pretrain_evaluations` must be an integer >= 1. "
                f"Received: pretrain_evaluations={self.pretrain_evaluations!r}"
            )

    def path(self, *parts: str) -> str:
        return os.path.join(self.work_dir, *parts)

    def albert_config(self) -> AlbertConfig:
        return AlbertConfig(
            vocabulary_size=self.vocabulary_size,
            max_sequence_length=self.sequence_length,
            **dict(self.model),
        )


def run_main_job(options: MainJobOptions) -> dict:
    """Runs every step (skipping finished ones); returns and prints the summary."""
    started = time.perf_counter()
    results = run_steps(options, STEPS)
    summary = _summary(options, results, time.perf_counter() - started)
    return summary


STEPS = ("tokenizer", "pretraining_data", "pretraining", "finetuning", "export", "serving")


def run_steps(options: MainJobOptions, names: tuple[str, ...]) -> dict:
    """Runs the named steps of the job, in order, skipping finished ones; their results by name.

    A step needs the results of the steps before it (run now or earlier in `work_dir`).
    """
    unknown = [name for name in names if name not in STEPS]
    if unknown:
        raise ValueError(f"Unknown steps {unknown}; the steps are {list(STEPS)}.")
    train_files, held_out_files = _corpus(options)  # a missing corpus fails before any step
    steps = [step for step in _steps(options, train_files, held_out_files) if step[0] in names]
    os.makedirs(options.work_dir, exist_ok=True)
    return {
        name: _step(options, number, len(steps), name, run)
        for number, (name, run) in enumerate(steps, start=1)
    }


def _steps(options: MainJobOptions, train_files: list[str], held_out_files: list[str]) -> list:
    return [
        ("tokenizer", lambda: _train_tokenizer(options, train_files)),
        ("pretraining_data", lambda: _pretraining_data(options, train_files, held_out_files)),
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

    from keras_albert.text.pretraining_data import PretrainingDataConfig, create_pretraining_data
    from keras_albert.text.tokenizer import AlbertTokenizer

    tokenizer = functools.partial(AlbertTokenizer, proto=_tokenizer_path(options))
    results = {}
    for split, files, dupe_factor, num_shards in (
        ("train", train_files, options.dupe_factor, 4),
        ("eval", held_out_files, 1, 1),
    ):
        config = PretrainingDataConfig(
            max_seq_length=options.sequence_length,
            dupe_factor=dupe_factor,
            random_seed=options.seed + len(split),
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
    os.makedirs(os.path.dirname(run_options.config), exist_ok=True)
    options.albert_config().to_json(run_options.config)
    summary = pretrain(run_options)
    return {"output_dir": run_options.output_dir, "summary": summary}


def pretraining_options(options: MainJobOptions):
    """The job's `PretrainingOptions` (its config file is written by the pretraining step)."""
    from keras_albert.training.pretraining import PretrainingOptions

    # Checkpoints and evaluations fall on log boundaries (the driver's Keras epochs).
    log_every = max(options.pretrain_steps // 40, 10)
    every = options.pretrain_steps // options.pretrain_evaluations
    every = log_every * max(1, every // log_every)
    return PretrainingOptions(
        config=options.path("pretraining", "albert_config.json"),
        train_data=options.path("pretraining_data", "train-*.tfrecord"),
        eval_data=options.path("pretraining_data", "eval-*.tfrecord"),
        output_dir=options.path("pretraining", "model"),
        vocabulary=_tokenizer_path(options),
        total_steps=options.pretrain_steps,
        batch_size=options.pretrain_batch_size,
        learning_rate=options.pretrain_learning_rate,
        sentence_order_loss_weight=options.pretrain_sop_loss_weight,
        warmup_steps=max(options.pretrain_steps // 10, 1),
        strategy="cpu",
        log_every_steps=log_every,
        checkpoint_every_steps=every,
        eval_every_steps=every,
        jit_compile=False,
        seed=options.seed,
    )


def _finetune(options: MainJobOptions) -> dict:
    from keras_albert.training.finetuning import FinetuningOptions, finetune

    train_file = options.path("finetuning", "sst2_train_sample.tsv")
    os.makedirs(os.path.dirname(train_file), exist_ok=True)
    _sample_tsv(options.sst2_train, train_file, options.finetune_examples, options.seed)
    summary = finetune(
        FinetuningOptions(
            task="SST-2",
            train_file=train_file,
            eval_file=options.sst2_dev,
            output_dir=options.path("finetuning", "sst2"),
            init_checkpoint=options.path("pretraining", "model"),
            tokenizer=_tokenizer_path(options),
            sequence_length=options.finetune_sequence_length,
            learning_rate=options.finetune_learning_rate,
            batch_size=options.finetune_batch_size,
            train_steps=options.finetune_steps,
            warmup_steps=max(options.finetune_steps // 10, 1),
            seed=options.seed,
            verbose=2,
        )
    )
    return {"output_dir": options.path("finetuning", "sst2"), "summary": summary}


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
        options.path("finetuning", "sst2", "best.keras"), compile=False
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
        [sys.executable, "-I", SESSION_PROBE, export_path, *PROBE_SENTENCES],
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
    pretraining = results["pretraining"]["summary"]
    finetuning = results["finetuning"]["summary"]
    serving = results["serving"]
    summary = {
        "pretraining_held_out": pretraining.get("eval"),
        "sst2_dev": finetuning.get("best"),
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
    print(json.dumps(summary, indent=2))
    return summary


def _read_history(path: str) -> list[dict]:
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as f:
        return list(csv.DictReader(f))


def plot_curves(options: MainJobOptions, reference_lines: tuple = ()) -> str:
    """A PNG of the pretraining and fine-tuning curves; returns its path.

    `reference_lines`: `(value, label)` pairs drawn across the pretraining accuracy panel.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pretraining = _read_history(options.path("pretraining", "model", "history.csv"))
    finetuning = _read_history(options.path("finetuning", "sst2", "history.csv"))
    panels = [
        (pretraining, "step", ("mlm_loss", "sop_loss"), "pretraining losses"),
        (pretraining, "step", ("mlm_accuracy", "sop_accuracy"), "pretraining accuracy"),
        (finetuning, "epoch", ("loss", "accuracy"), "SST-2 fine-tuning"),
    ]
    panels = [panel for panel in panels if panel[0]] or panels[:1]  # steps not run: no panel
    figure, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 4), squeeze=False)
    for axis, (rows, x_name, names, title) in zip(axes[0], panels, strict=True):
        for name in names:
            for prefix, style in (("", ".-"), ("val_", "o--")):
                points = [
                    (float(row[x_name]), float(row[prefix + name]))
                    for row in rows
                    if row.get(prefix + name) not in (None, "", "NA")  # NA: no evaluation then
                ]
                if points:
                    label = ("held-out " if prefix else "train ") + name
                    axis.plot(*zip(*points, strict=True), style, label=label)
        if title == "pretraining accuracy":
            for value, label in reference_lines:
                axis.axhline(value, ls=":", color="gray", label=label)
        axis.set_title(title)
        axis.set_xlabel(x_name)
        if axis.get_legend_handles_labels()[0]:
            axis.legend(fontsize=7)
    figure.tight_layout()
    path = options.path("curves.png")
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return path
