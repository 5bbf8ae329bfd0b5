"""The main job's options: its budget, its data (defaults: the files that ship in `data/`).

The data defaults are resolved here, in the job, from this file's place in the repository
checkout; the library (`keras_albert/`) never refers to repository paths.
"""

import dataclasses
import os

from keras_albert.cli import parse_int_or_none
from keras_albert.config import AlbertConfig
from keras_albert.training.precision import PRECISIONS
from keras_albert.validation import require_one_of, require_positive_int

REPOSITORY = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA_DIR = os.path.join(REPOSITORY, "data")


def check_seeds(seeds: tuple, received=None) -> tuple:
    """`seeds` if they are distinct non-negative integers, at least one; else a clear error
    naming `received` (what the user wrote; default: `seeds`)."""
    valid = all(isinstance(seed, int) and seed >= 0 for seed in seeds)
    if not seeds or not valid or len(set(seeds)) < len(seeds):
        raise ValueError(
            "`finetune_seeds` must be distinct non-negative integers, comma-separated. "
            f"Received: finetune_seeds={seeds if received is None else received!r}"
        )
    return seeds


def parse_seeds(text: str) -> tuple:
    """`0,1,2` → `(0, 1, 2)`."""
    try:
        seeds = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        seeds = ()
    return check_seeds(seeds, text)


def parse_model(text: str) -> tuple:
    """`embedding_dim=128,hidden_dim=128,dropout=0.1` → `(("embedding_dim", 128), ...)`."""
    fields = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, equals, value = part.partition("=")
        if not equals or not name.strip():
            raise ValueError(
                "`model` must be comma-separated `field=value` pairs of AlbertConfig. "
                f"Received: model={text!r}"
            )
        try:
            number = int(value)
        except ValueError:
            number = float(value)  # a bad number raises here, naming the value
        fields.append((name.strip(), number))
    return tuple(fields)


@dataclasses.dataclass(frozen=True)
class MainJobOptions:
    """The budget and data of the main job; `MainJobOptions.quick()` is the ≤5-minute variant.

    Args:
        output_dir: where every step writes (tokenizer, data, pretraining, fine-tuning, summary).
        saved_models_dir: TF Serving base directory; the export goes to
            `<saved_models_dir>/<export_name>/<version>/`.
        export_name: the served model's name.
        corpus_dir: plain-text novels; `held_out` is kept out of the tokenizer and the
            pretraining data and used for held-out evaluation.
        held_out: the file name, in `corpus_dir`, of the held-out novel.
        wikitext: a WikiText-2 `*.raw` file pretrained on too (None: none); its last
            `held_out_articles` articles join the held-out text.
        held_out_articles: WikiText articles held out of pretraining.
        task_sentences: pretrain also on the sentences of `finetune_train_data`, unlabeled
            (task-adaptive pretraining: the label column is never read).
        finetune_train_data: the GLUE SST-2 training file (a sample of it is used).
        finetune_eval_data: the GLUE SST-2 dev file (used whole).
        vocabulary_size: SentencePiece pieces, trained on all the pretraining text (4,000:
            pretraining 1.45x faster than with 8,000, the MLM softmax being ~40 % of a step,
            and both SST-2 sides more accurate, measured).
        sequence_length: packed length of the pretraining data; the model holds the longer of
            it and `finetune_sequence_length`.
        max_predictions_per_sequence: masked positions per pretraining sequence, at most.
        masked_lm_prob: the share of tokens masked for MLM (drawn anew every pass).
        max_ngram: the longest masked span, in words (the paper's n-gram masking: 3; 1 masks
            single words, which taught the job's small model more in its budget, measured).
        pair_task: the sentence-pair task of pretraining: "sop" (ALBERT's sentence order) or
            "nsp" (BERT's next sentence, for comparison).
        dupe_factor: passes over the corpus when cutting sentence pairs (the masks are drawn
            anew every pass in the graph: dynamic masking).
        corpus_files: how many training novels to use (None: all).
        model: the architecture, `field=value` pairs of `AlbertConfig` (vocabulary and length
            are filled in).
        pretrain_train_steps: LAMB steps of the pretraining run.
        pretrain_batch_size: pretraining batch size.
        pretrain_learning_rate: pretraining peak learning rate.
        pretrain_sentence_order_loss_weight: the SOP loss's weight (1.0: the original's sum).
        pretrain_evaluations: held-out evaluations (and checkpoints) over the run.
        jit_compile: XLA for the pretraining and fine-tuning steps (about 2x the steps of the
            job's small model on CPU, measured).
        precision: the pretraining and fine-tuning precision (`--precision` of both commands).
            `auto`: mixed_bfloat16 on a CPU that multiplies bfloat16 natively (AVX512-BF16 or
            AMX), float32 on other CPUs. On the job, mixed_bfloat16 learns what float32 learns
            (5 pretraining seeds x 5 fine-tuning seeds: MLM/SOP within 1 point, SST-2 -0.14
            points on average) and pretrains 1.07-1.13x faster on an AVX512-BF16 CPU
            (docs/benchmarks.md). The summary prints the precision the job ran in.
        finetune_examples: SST-2 training rows used (a seeded sample); the dev set is used whole.
        finetune_sequence_length: packed length for SST-2 (its sentences are short).
        finetune_train_steps: optimizer steps of the SST-2 fine-tuning run.
        finetune_batch_size: fine-tuning batch size.
        finetune_learning_rate: fine-tuning peak learning rate.
        finetune_pad_to_multiple_of: dynamic padding of the SST-2 batches (each cut to its
            longest sentence rounded up to a multiple of this; exact; None (`none` on the
            command line): all `finetune_sequence_length` long).
        finetune_group_by_length: SST-2 training batches of sentences of similar length
            (about 1.8x the steps per second of dynamic padding alone; off: with it, the
            from-scratch side gained more than the pretrained one and the full-set gain fell
            from +1.4 to +0.1 points, measured).
        finetune_from_scratch_learning_rate: the from-scratch run's peak learning rate (None:
            `finetune_learning_rate`); both runs otherwise share every setting.
        finetune_evaluations: dev-set evaluations over each fine-tuning run (its curve's points).
        finetune_seeds: one fine-tuning run per seed on each side (the gain's spread); the
            first seed's pretrained run is exported.
        finetune_processes: fine-tuning runs at once, each in its own process with its share
            of the cores, its output in its `finetune.log` (two side by side, one thread each,
            do 1.5x the runs per hour of one at a time on 2 cores, measured); 1: one after
            another in this process (use 1 with a GPU).
        force: redo every step, pretraining included (from step 0; the export then becomes a
            new version: versions are never overwritten).
        smoke: a smoke run (`quick()`): every step on a tiny budget, to check that it works; the
            summary says that its accuracies, gain and predictions carry no signal.
        seed: the seed of every step.
    """

    output_dir: str = "runs/main"
    saved_models_dir: str = "saved_models"
    export_name: str = "albert_sst2"
    corpus_dir: str = os.path.join(DATA_DIR, "corpus", "janeaustenr")
    held_out: str = "persuasion.txt"
    wikitext: str | None = os.path.join(DATA_DIR, "corpus", "wikitext2", "wiki.test.raw")
    held_out_articles: int = 8
    task_sentences: bool = True
    finetune_train_data: str = os.path.join(DATA_DIR, "glue", "SST-2", "train.tsv")
    finetune_eval_data: str = os.path.join(DATA_DIR, "glue", "SST-2", "dev.tsv")
    vocabulary_size: int = 4000
    sequence_length: int = 32
    max_predictions_per_sequence: int = 10
    masked_lm_prob: float = 0.3
    max_ngram: int = 1
    pair_task: str = dataclasses.field(default="sop", metadata={"choices": ("sop", "nsp")})
    dupe_factor: int = 2
    corpus_files: int | None = None
    model: tuple = dataclasses.field(
        default=(
            ("embedding_dim", 128),
            ("hidden_dim", 128),
            ("intermediate_dim", 512),
            ("num_layers", 2),
            ("num_heads", 4),
        ),
        metadata={"parse": parse_model, "metavar": "FIELD=VALUE,..."},
    )
    pretrain_train_steps: int = 3000
    pretrain_batch_size: int = 128
    pretrain_learning_rate: float = 1e-2
    pretrain_sentence_order_loss_weight: float = 1.0
    pretrain_evaluations: int = 5
    finetune_examples: int = 20000
    finetune_sequence_length: int = 64
    finetune_train_steps: int = 1000
    finetune_batch_size: int = 32
    finetune_learning_rate: float = 3e-4
    finetune_from_scratch_learning_rate: float | None = None
    finetune_pad_to_multiple_of: int | None = dataclasses.field(
        default=16, metadata={"parse": parse_int_or_none}
    )
    finetune_group_by_length: bool = False
    finetune_evaluations: int = 5
    finetune_seeds: tuple = dataclasses.field(
        default=(0, 1, 2), metadata={"parse": parse_seeds, "metavar": "SEED,..."}
    )
    finetune_processes: int = 2
    jit_compile: bool = True
    precision: str = dataclasses.field(default="auto", metadata={"choices": PRECISIONS})
    force: bool = False
    smoke: bool = False
    seed: int = 0

    @classmethod
    def quick(cls, **changes) -> "MainJobOptions":
        """A ≤5-minute run of every step (for smoke tests), numbers not meant to be good."""
        quick = dict(
            output_dir="runs/main-quick",
            export_name="albert_sst2_quick",
            vocabulary_size=2000,
            dupe_factor=1,
            corpus_files=2,
            model=(
                ("embedding_dim", 32),
                ("hidden_dim", 64),
                ("intermediate_dim", 128),
                ("num_layers", 2),
                ("num_heads", 2),
            ),
            pretrain_train_steps=60,
            pretrain_batch_size=16,
            finetune_examples=1000,
            finetune_sequence_length=32,
            finetune_train_steps=60,
            finetune_batch_size=16,
            finetune_evaluations=2,
            finetune_seeds=(0, 1),
            smoke=True,
        )
        return cls(**{**quick, **changes})

    def __post_init__(self):
        require_positive_int("pretrain_evaluations", self.pretrain_evaluations)
        require_positive_int("finetune_evaluations", self.finetune_evaluations)
        require_positive_int("finetune_processes", self.finetune_processes)
        check_seeds(tuple(self.finetune_seeds))
        require_one_of("pair_task", self.pair_task, ("sop", "nsp"))

    def path(self, *parts: str) -> str:
        return os.path.join(self.output_dir, *parts)

    def finetuning_dir(self, from_scratch: bool, seed: int | None = None) -> str:
        """The SST-2 run (of `seed`, by default the first) from the pretraining checkpoint, or
        the one from scratch."""
        seed = self.finetune_seeds[0] if seed is None else seed
        side = "sst2_from_scratch" if from_scratch else "sst2"
        return self.path("finetuning", side, f"seed_{seed}")

    def albert_config(self) -> AlbertConfig:
        return AlbertConfig(
            vocabulary_size=self.vocabulary_size,
            max_sequence_length=max(self.sequence_length, self.finetune_sequence_length),
            **dict(self.model),
        )
