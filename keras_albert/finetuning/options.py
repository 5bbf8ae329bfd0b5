"""`FinetuningOptions`: everything one fine-tuning run needs, checked when made.

Each field is one flag of `keras-albert finetune` (`keras_albert.cli.add_options`): the default is
written here once, the help is the field's entry in the class docstring. The options of one
task type (SQuAD's windows, a generic CSV's columns, ...) are that task type's own dataclass
in its folder, given as `task_options`; which data set names exist and what each task type
accepts, `keras_albert.finetuning.task_choice` checks against the registry: these options know
no task type. `dataset` was `task` before (`--task`, `task=` and run records that name it
still work).
"""

from __future__ import annotations

import dataclasses
import functools
import warnings

from keras_albert.cli import VOCABULARY_METADATA, parse_bool_or_auto, parse_int_or_none
from keras_albert.finetuning.elastic_depth import parse_depths
from keras_albert.training.precision import PRECISIONS
from keras_albert.validation import (
    require_bool,
    require_exactly_one,
    require_int,
    require_number,
    require_one_of,
    require_positive_int,
)

_VERBOSITY = {"choices": (0, 1, 2)}


@dataclasses.dataclass(frozen=True)
class FinetuningOptions:
    """Everything one fine-tuning run needs (`keras_albert.finetuning.driver.finetune`).

    Args:
        dataset: the data set to fine-tune on, which picks the task type: a GLUE task name
            (SST-2, MRPC, STS-B, CoLA, RTE, QQP, MNLI, QNLI) or "generic" (classification),
            "squad_v1" or "squad_v2" (question_answering), "race" (multiple_choice), "ner"
            (token_classification), "stsb_embedding" or "sentence_pairs" (text_embedding);
            `--task` is its former name.
        train_data: the training file, in a layout the task knows (SQuAD JSON, a RACE file or
            split directory, a CoNLL file, a GLUE-style TSV/CSV, a file of sentence pairs).
        eval_data: the evaluation file (labeled); evaluated after every epoch.
        output_dir: where checkpoints, logs, predictions and the summary go; rerunning the
            same command with the same `output_dir` resumes from its last checkpoint.
        init_checkpoint: weights for the backbone: our pretraining output (a directory holding
            `pretrainer.keras`, or a `.keras` file of a pretrainer, backbone or classifier), or
            a Hugging Face / original TF1 checkpoint; the head is always fresh. Without it
            the model trains from scratch (give `preset` or `config`).
        preset: a `keras_albert.PRESETS` name, for training from scratch.
        config: an ALBERT config JSON (ours, albert_config.json or HF config.json), for
            training from scratch.
        vocabulary: the tokenizer's vocabulary file: a SentencePiece model (30k-clean.model) or a
            WordPiece vocabulary (vocab_chinese.txt, one token per line); by default the one
            `init_checkpoint`'s run.json names or the one beside it
            (`keras_albert.convert.find_vocabulary`).
        lowercase: the tokenizer lowercases; by default as `init_checkpoint`'s run recorded
            (`keras_albert.convert.resolve_normalization`), else true (the original's).
        strip_accents: the tokenizer drops combining marks; by default as `init_checkpoint`'s
            run recorded, else true (the original's).
        test_data: an unlabeled file to predict with the best checkpoint, in the task's
            layout without the gold: a GLUE-style test TSV/CSV, a SQuAD JSON whose questions
            have no answers, RACE passages without answers, a CoNLL file of words only.
        sequence_length: packed length; by default the original's for the task (its task
            type's `defaults.SEQUENCE_LENGTH`).
        scale: multiplies the recipe's train and warmup steps (e.g. 0.05 on a laptop).
        learning_rate: overrides the recipe's peak learning rate.
        batch_size: overrides the recipe's batch size.
        train_steps: overrides the recipe's train steps.
        warmup_steps: overrides the recipe's warmup steps.
        num_evaluations: how many times the run evaluates (each may keep the best model):
            after every ceil(train_steps / num_evaluations) steps and after the last step (the
            last stretch shorter: the run trains exactly train_steps; fewer evaluations, said
            so, when the stretches use the steps up sooner). By default about one per pass
            over the training data (at least one).
        dropout: dropout of the task head (0.1 as the original heads).
        lora_rank: train LoRA adapters of this rank (Keras's `enable_lora`) on the layers
            `lora_target_layer_names` names, and the task head, the rest of the backbone
            frozen; the saved models and exports carry them merged into the weights. None:
            fine-tune every weight. The adapters start at zero: give them a larger
            `learning_rate` than full fine-tuning's (docs/guides/backends.md#6-lora).
        lora_target_layer_names: the backbone's dense and embedding layers `lora_rank`
            adapts, by name; None: every weight matrix
            (`keras_albert.models.backbone.LORA_LAYER_NAMES`, the token table among them);
            `query,value` is keras-hub's choice.
        weight_decay_rate: AdamW's decoupled decay (LayerNorm and biases excluded).
        skip_invalid: skip (and count) bad rows instead of stopping at the first.
        task_options: the task type's own options (e.g. a `QuestionAnsweringOptions`: the
            `TaskType.options` of `keras_albert.tasks.registry.task_type_for(dataset)`); None: its
            defaults. `keras-albert finetune` builds them from the task type's own flags.
        strategy: a `build_strategy` name (auto, cpu, one_device, mirrored, multi_worker with
            TF_CONFIG, tpu); every one runs the same training loop (`training.loop`).
        tpu_address: for the "tpu" strategy: a Cloud TPU name, "local" on a TPU VM, or
            grpc://host:port.
        precision: float32, mixed_bfloat16, mixed_float16 (with dynamic loss scaling) or auto,
            as pretraining's (`PretrainingOptions.precision`); by default the device's. Any
            checkpoint, pretrained in any precision, starts any of them; a run may resume in
            another.
        steps_per_execution: train steps per `tf.function` call.
        jit_compile: auto, true or false: XLA for the train step (auto: on GPUs and TPUs).
        remat: recompute each application of the shared transformer block in the backward
            pass instead of keeping its activations (gradient checkpointing,
            `AlbertBackbone(remat=True)`): less memory for a second forward pass through the
            blocks; the same gradients.
        seed: seed of weights initialization and shuffling.
        verbose: 0: quiet; 1: before each evaluation a heading, then its steps: a progress
            bar on a terminal, elsewhere (a log file, a pipe) one line every few steps (about
            10 per evaluation; step, rate, time left, loss and metrics), and after it a line
            of its results; 2: the headings and the results' lines only.
        elastic_depths: also train the shared block at these shallower depths (e.g. 6,3),
            so that the model can be served with `--num-layers` any of them
            (`keras_albert.finetuning.elastic_depth`); the loss is the mean over all depths.
        pad_to_multiple_of: dynamic padding (GLUE-style tasks): each batch is cut to its
            longest example rounded up to a multiple of this, instead of padded to
            `sequence_length` (exact: padding is masked; short texts then train and evaluate
            faster). None: static shapes; TPUs need them (the "tpu" strategy rejects it).
        group_by_length: with `pad_to_multiple_of`: training batches of examples of similar
            length (windows of 50 shuffled batches sorted by token count, then served in a
            shuffled order), so that dynamic padding pads little.
        checkpoint_every_steps: steps between checkpoints inside a stretch of steps between
            two evaluations; a checkpoint is always written after every evaluation. None:
            after the evaluations only.
        keep_checkpoints: how many checkpoints to keep.
        force: start over: remove the checkpoints, history, logs and best model of an earlier
            run in `output_dir` instead of resuming it (or refusing other options).
    """

    dataset: str = dataclasses.field(metadata={"aliases": ("--task",)})
    train_data: str
    eval_data: str
    output_dir: str
    init_checkpoint: str | None = None
    preset: str | None = None
    config: str | None = None
    vocabulary: str | None = dataclasses.field(default=None, metadata=VOCABULARY_METADATA)
    lowercase: bool | None = None
    strip_accents: bool | None = None
    test_data: str | None = None
    sequence_length: int | None = None
    scale: float = 1.0
    learning_rate: float | None = None
    batch_size: int | None = None
    train_steps: int | None = None
    warmup_steps: int | None = None
    num_evaluations: int | None = dataclasses.field(
        default=None, metadata={"aliases": ("--epochs",)}
    )
    dropout: float = 0.1
    lora_rank: int | None = None
    lora_target_layer_names: tuple[str, ...] | None = None
    weight_decay_rate: float = 0.01
    skip_invalid: bool = False
    task_options: object | None = dataclasses.field(default=None, metadata={"flag": False})
    strategy: str = "auto"
    tpu_address: str | None = None
    precision: str | None = None
    steps_per_execution: int = 1
    jit_compile: bool | str = dataclasses.field(
        default="auto", metadata={"parse": parse_bool_or_auto}
    )
    remat: bool = False
    seed: int = 0
    verbose: int = dataclasses.field(default=1, metadata=_VERBOSITY)
    elastic_depths: tuple[int, ...] | None = dataclasses.field(
        default=None, metadata={"parse": parse_depths}
    )
    pad_to_multiple_of: int | None = dataclasses.field(
        default=None, metadata={"parse": parse_int_or_none}
    )
    group_by_length: bool = False
    checkpoint_every_steps: int | None = dataclasses.field(
        default=None, metadata={"parse": parse_int_or_none}
    )
    keep_checkpoints: int = 3
    force: bool = False

    def __post_init__(self):
        require_exactly_one(
            init_checkpoint=self.init_checkpoint, preset=self.preset, config=self.config
        )
        for name in (
            "batch_size",
            "train_steps",
            "num_evaluations",
            "steps_per_execution",
            "lora_rank",
        ):
            if getattr(self, name) is not None:
                require_positive_int(name, getattr(self, name))
        require_int("sequence_length", self.sequence_length, 3, optional=True)
        require_int("warmup_steps", self.warmup_steps, 0, optional=True)
        require_int("seed", self.seed, 0)
        require_number("scale", self.scale, 0, exclusive_minimum=True)
        require_number("learning_rate", self.learning_rate, 0, exclusive_minimum=True,
                       optional=True)  # fmt: skip
        require_one_of("jit_compile", self.jit_compile, (True, False, "auto"))
        require_one_of("precision", self.precision, (None, *PRECISIONS))
        require_one_of("verbose", self.verbose, (0, 1, 2))
        require_int("pad_to_multiple_of", self.pad_to_multiple_of, 1, optional=True)
        require_int("checkpoint_every_steps", self.checkpoint_every_steps, 1, optional=True)
        require_int("keep_checkpoints", self.keep_checkpoints, 1)
        require_one_of("force", self.force, (True, False))
        require_one_of("group_by_length", self.group_by_length, (True, False))
        require_bool("remat", self.remat)
        if self.group_by_length and self.pad_to_multiple_of is None:
            raise ValueError(
                "`group_by_length` must come with `pad_to_multiple_of` (grouping saves time "
                "only when each batch is cut to its own length). Received: "
                "group_by_length=True, pad_to_multiple_of=None"
            )
        if self.lora_target_layer_names is not None:
            self._check_lora_targets()

    def _check_lora_targets(self) -> None:
        from keras_albert.models.backbone import ADAPTABLE_LAYER_NAMES  # Keras: only here

        targets = self.lora_target_layer_names
        if self.lora_rank is None:
            raise ValueError(
                "`lora_target_layer_names` must come with `lora_rank` (the adapters' rank). "
                f"Received: lora_target_layer_names={targets!r}, lora_rank=None"
            )
        if not targets or set(targets) - set(ADAPTABLE_LAYER_NAMES):
            raise ValueError(
                "`lora_target_layer_names` must name dense or embedding layers of the backbone "
                f"({', '.join(sorted(ADAPTABLE_LAYER_NAMES))}). "
                f"Received: lora_target_layer_names={targets!r}"
            )


_generated_init = FinetuningOptions.__init__


@functools.wraps(_generated_init)
def _init(self, *args, task=None, **kwargs):
    # `task=` is the former name of `dataset` (a deprecated alias of the keyword).
    if task is not None:
        if args or "dataset" in kwargs:
            raise TypeError(
                "`task` must be None when `dataset` is given (`task` is its former name). "
                f"Received: task={task!r}"
            )
        warnings.warn(
            "`FinetuningOptions(task=...)` is deprecated: use `dataset=`.",
            DeprecationWarning,
            stacklevel=2,
        )
        kwargs["dataset"] = task
    _generated_init(self, *args, **kwargs)


FinetuningOptions.__init__ = _init
