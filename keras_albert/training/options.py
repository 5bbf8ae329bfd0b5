"""The options of the two drivers, checked when made: `PretrainingOptions`, `FinetuningOptions`.

Each field is one flag of its tool (`keras_albert.cli.add_options`): the default is written
here once, the help is the field's entry in the class docstring.
"""

from __future__ import annotations

import dataclasses
import math

from keras_albert.cli import parse_bool_or_auto, parse_int_or_none
from keras_albert.models.question_answerer import ANSWERABILITY
from keras_albert.text.glue import TaskSpec, generic_task, get_task
from keras_albert.training.elastic_depth import parse_depths
from keras_albert.training.tasks import task_class
from keras_albert.validation import (
    require_any,
    require_divisible,
    require_exactly_one,
    require_exclusive,
    require_given,
    require_int,
    require_number,
    require_one_of,
    require_positive_int,
)

_VERBOSITY = {"choices": (0, 1, 2)}


@dataclasses.dataclass(frozen=True)
class PretrainingOptions:
    """Everything one pretraining run needs (`keras_albert.training.pretraining.pretrain`).

    Args:
        train_data: glob (or comma-separated globs) of pretraining TFRecords in the original
            layout; the sequence length and the predictions per sequence are read from them.
        output_dir: where checkpoints, logs and the summary go; rerunning with the same
            `output_dir` resumes.
        train_steps: optimizer steps of the whole run (sets the schedule).
        batch_size: global batch size (split over the replicas).
        preset: a `keras_albert.PRESETS` name (or `config`, or neither when `init_checkpoint`
            says the architecture).
        config: path to an ALBERT config JSON (ours, `albert_config.json` or HF `config.json`).
        init_checkpoint: weights to start from (continued pretraining): a `.keras` file of an
            `AlbertPretrainer` or `AlbertBackbone`, a `.weights.h5` of an `AlbertPretrainer`, a
            Hugging Face directory or an original TF1 checkpoint. A backbone-only checkpoint
            leaves the heads fresh. Ignored when `output_dir` holds a checkpoint (resume wins).
        eval_data: glob of held-out TFRecords, evaluated every `eval_every_steps` and at the end.
        eval_steps: batches per evaluation; by default the whole eval set.
        eval_every_steps: by default `checkpoint_every_steps`; a multiple of `log_every_steps`.
        learning_rate: peak learning rate (ALBERT's 0.00176).
        warmup_steps: linear warmup steps; by default 2.5% of `train_steps` (ALBERT's 3125 of
            125000).
        end_learning_rate: the rate at `train_steps`.
        weight_decay_rate: LAMB's decay (LayerNorm parameters and biases excluded).
        sentence_order_loss_weight: the SOP loss's weight in the total loss; 1.0 is the
            original's plain sum.
        strategy: a `build_strategy` name (auto, cpu, one_device, mirrored, multi_worker with
            TF_CONFIG set, tpu).
        tpu_address: for the "tpu" strategy: a Cloud TPU name, "local" on a TPU VM, or
            "grpc://host:port".
        precision: a Keras dtype policy; by default chosen per device.
        dynamic_masking: mask anew every pass in-graph instead of using the records' masks;
            needs `sentencepiece_model`.
        sentencepiece_model: the SentencePiece model the data was made with (dynamic masking).
        masked_lm_prob: dynamic masking: the share of tokens to predict.
        max_ngram: dynamic masking: the longest masked n-gram.
        sequence_length: the records' sequence length, to check against them; by default
            whatever the records hold.
        max_predictions_per_sequence: prediction slots per sequence; by default the records'
            count. Without dynamic masking it must equal the records' count.
        steps_per_execution: train steps per `tf.function` call.
        jit_compile: auto, true or false: XLA for the train step (auto: on GPUs and TPUs).
        log_every_steps: steps between logs: progress lines, TensorBoard, history rows.
        checkpoint_every_steps: a multiple of `log_every_steps`.
        keep_checkpoints: how many checkpoints to keep.
        shuffle_buffer_size: records in the shuffle buffer.
        input_sharding: "global": every input pipeline (worker) reads the whole stream and
            keeps its replicas' rows of each global batch — the same batches as one device on
            any topology, resumable on any number of workers, but every host reads all the
            data; "files": each pipeline reads only its own files (files i, i + P, ... of P
            pipelines), its own shuffled stream of batch_size / P rows — each host reads 1/P of
            the data, as a pod needs; the batches then depend on the number of workers (resume
            on the same topology).
        seed: seed of weights initialization, shuffles and dynamic masking; resume relies on it.
        deterministic: deterministic TensorFlow ops for the whole process: bit-reproducible
            runs, slower input pipelines.
        verbose: 0: no progress lines; 1 or 2: one per log interval (step, rate, time left).
    """

    train_data: str
    output_dir: str
    train_steps: int
    batch_size: int
    preset: str | None = None
    config: str | None = None
    init_checkpoint: str | None = None
    eval_data: str | None = None
    eval_steps: int | None = None
    eval_every_steps: int | None = None
    learning_rate: float = 0.00176
    warmup_steps: int | None = None
    end_learning_rate: float = 0.0
    weight_decay_rate: float = 0.01
    sentence_order_loss_weight: float = 1.0
    strategy: str = "auto"
    tpu_address: str | None = None
    precision: str | None = None
    dynamic_masking: bool = False
    sentencepiece_model: str | None = None
    masked_lm_prob: float = 0.15
    max_ngram: int = 3
    sequence_length: int | None = None
    max_predictions_per_sequence: int | None = None
    steps_per_execution: int = 1
    jit_compile: bool | str = dataclasses.field(
        default="auto", metadata={"parse": parse_bool_or_auto}
    )
    log_every_steps: int = 100
    checkpoint_every_steps: int = 1000
    keep_checkpoints: int = 3
    shuffle_buffer_size: int = 10_000
    input_sharding: str = "global"
    seed: int = 12345
    deterministic: bool = False
    verbose: int = dataclasses.field(default=2, metadata=_VERBOSITY)

    def __post_init__(self):
        for name in (
            "train_steps",
            "batch_size",
            "log_every_steps",
            "checkpoint_every_steps",
            "steps_per_execution",
            "keep_checkpoints",
            "shuffle_buffer_size",
        ):
            require_int(name, getattr(self, name), 1)
        require_int("seed", self.seed, 0)
        require_int("warmup_steps", self.warmup_steps, 0, optional=True)
        for name in ("eval_steps", "eval_every_steps", "max_predictions_per_sequence"):
            require_int(name, getattr(self, name), 1, optional=True)
        require_int("sequence_length", self.sequence_length, 3, optional=True)
        require_exclusive(preset=self.preset, config=self.config)
        require_any(preset=self.preset, config=self.config, init_checkpoint=self.init_checkpoint)
        why = "checkpoints and evaluations happen at the end of a log interval"
        for name in ("checkpoint_every_steps", "eval_every_steps"):
            if getattr(self, name) is not None:
                require_divisible(
                    name, getattr(self, name), "log_every_steps", self.log_every_steps, reason=why
                )
        require_divisible(
            "log_every_steps", self.log_every_steps, "steps_per_execution",
            self.steps_per_execution,
        )  # fmt: skip
        if self.dynamic_masking:
            require_given(
                "sentencepiece_model", self.sentencepiece_model,
                "with `dynamic_masking` (it says word starts and special tokens)",
            )  # fmt: skip
        require_one_of("jit_compile", self.jit_compile, (True, False, "auto"))
        if self.eval_steps is not None:
            require_given("eval_data", self.eval_data, "with `eval_steps`")
        require_number("sentence_order_loss_weight", self.sentence_order_loss_weight, 0)
        require_number("learning_rate", self.learning_rate, 0, exclusive_minimum=True)
        require_number("end_learning_rate", self.end_learning_rate, 0)
        require_number("weight_decay_rate", self.weight_decay_rate, 0)
        require_number("masked_lm_prob", self.masked_lm_prob, 0, 1, exclusive_minimum=True)
        require_int("max_ngram", self.max_ngram, 1)
        require_one_of("input_sharding", self.input_sharding, ("global", "files"))
        require_one_of("verbose", self.verbose, (0, 1, 2))

    @property
    def resolved_warmup_steps(self) -> int:
        if self.warmup_steps is None:
            return int(math.ceil(0.025 * self.train_steps))
        return self.warmup_steps


@dataclasses.dataclass(frozen=True)
class FinetuningOptions:
    """Everything one fine-tuning run needs (`keras_albert.training.finetuning.finetune`).

    Args:
        task: a GLUE task name (SST-2, MRPC, STS-B, CoLA, RTE, QQP, MNLI, QNLI), "generic",
            "squad_v1", "squad_v2", "race" or "ner".
        train_data: the training file, in a layout the task knows (SQuAD JSON, a RACE file or
            split directory, a CoNLL file, a GLUE-style TSV/CSV).
        eval_data: the evaluation file (labeled); evaluated after every epoch.
        output_dir: where checkpoints, logs, predictions and the summary go.
        init_checkpoint: weights for the backbone: our pretraining output (a directory holding
            `pretrainer.keras`, or a `.keras` file of a pretrainer, backbone or classifier), or
            a Hugging Face / original TF1 checkpoint; the head is always fresh. Without it
            the model trains from scratch (give `preset` or `config`).
        preset: a `keras_albert.PRESETS` name, for training from scratch.
        config: an ALBERT config JSON (ours, albert_config.json or HF config.json), for
            training from scratch.
        sentencepiece_model: the SentencePiece model; by default `*.model` in
            `init_checkpoint`'s directory or the one its `run.json` names.
        test_data: an unlabeled file (GLUE test layout) to predict with the best checkpoint.
        sequence_length: packed length; by default the original's for the task: 512 (GLUE,
            RACE), 384 (SQuAD), 128 (NER).
        scale: multiplies the recipe's train and warmup steps (e.g. 0.05 on a laptop).
        learning_rate: overrides the recipe's peak learning rate.
        batch_size: overrides the recipe's batch size.
        train_steps: overrides the recipe's train steps.
        warmup_steps: overrides the recipe's warmup steps.
        epochs: number of evaluations; by default about one per pass over the training data
            (at least one). The train steps are split evenly among them.
        dropout: dropout of the task head (0.1 as the original heads).
        weight_decay_rate: AdamW's decoupled decay (LayerNorm and biases excluded).
        text_columns: generic task: the text columns, one or two (header names or indices).
        label_column: generic task: the label column.
        labels: generic task: the label values (comma-separated); none is regression.
        delimiter: generic task: the field separator.
        header: generic task: the first row names the columns.
        skip_invalid: skip (and count) bad rows instead of stopping at the first.
        squad_answerability: squad_v2: "null_span" (the [CLS] span scores "no answer") or
            "answer_class" (the original ALBERT v2 head); squad_v1 is always "null_span".
        doc_stride: SQuAD: context tokens between the starts of successive windows.
        max_query_length: SQuAD: question tokens kept.
        max_answer_length: SQuAD: the longest answer span, in tokens.
        max_qa_length: RACE: tokens of question + option kept (their last ones).
        strategy: a `build_strategy` name (auto, cpu, one_device, mirrored, multi_worker with
            TF_CONFIG, tpu); every one runs the same training loop (`training.loop`).
        tpu_address: for the "tpu" strategy: a Cloud TPU name, "local" on a TPU VM, or
            grpc://host:port.
        steps_per_execution: train steps per `tf.function` call.
        jit_compile: auto, true or false: XLA for the train step (auto: on GPUs and TPUs).
        seed: seed of weights initialization and shuffling.
        verbose: 0: quiet; 1: a heading per evaluation and a progress bar over its steps;
            2: the heading only.
        elastic_depths: also train the shared block at these shallower depths (e.g. 6,3),
            so that the model can be served with `--num-layers` any of them
            (`keras_albert.training.elastic_depth`); the loss is the mean over all depths.
        pad_to_multiple_of: dynamic padding (GLUE-style tasks): each batch is cut to its
            longest example rounded up to a multiple of this, instead of padded to
            `sequence_length` (exact: padding is masked; short texts then train and evaluate
            faster). None: static shapes; TPUs need them (the "tpu" strategy rejects it).
        group_by_length: with `pad_to_multiple_of`: training batches of examples of similar
            length (windows of 50 shuffled batches sorted by token count, then served in a
            shuffled order), so that dynamic padding pads little.
    """

    task: str
    train_data: str
    eval_data: str
    output_dir: str
    init_checkpoint: str | None = None
    preset: str | None = None
    config: str | None = None
    sentencepiece_model: str | None = None
    test_data: str | None = None
    sequence_length: int | None = None
    scale: float = 1.0
    learning_rate: float | None = None
    batch_size: int | None = None
    train_steps: int | None = None
    warmup_steps: int | None = None
    epochs: int | None = None
    dropout: float = 0.1
    weight_decay_rate: float = 0.01
    text_columns: tuple[str, ...] | None = None
    label_column: str | None = None
    labels: tuple[str, ...] | None = None
    delimiter: str = "\t"
    header: bool = True
    skip_invalid: bool = False
    squad_answerability: str = "null_span"
    doc_stride: int = 128
    max_query_length: int = 64
    max_answer_length: int = 30
    max_qa_length: int = 128
    strategy: str = "auto"
    tpu_address: str | None = None
    steps_per_execution: int = 1
    jit_compile: bool | str = dataclasses.field(
        default="auto", metadata={"parse": parse_bool_or_auto}
    )
    seed: int = 0
    verbose: int = dataclasses.field(default=1, metadata=_VERBOSITY)
    elastic_depths: tuple[int, ...] | None = dataclasses.field(
        default=None, metadata={"parse": parse_depths}
    )
    pad_to_multiple_of: int | None = dataclasses.field(
        default=None, metadata={"parse": parse_int_or_none}
    )
    group_by_length: bool = False

    def __post_init__(self):
        require_exactly_one(
            init_checkpoint=self.init_checkpoint, preset=self.preset, config=self.config
        )
        for name in ("batch_size", "train_steps", "epochs", "steps_per_execution"):
            if getattr(self, name) is not None:
                require_positive_int(name, getattr(self, name))
        require_int("sequence_length", self.sequence_length, 3, optional=True)
        for name in ("doc_stride", "max_query_length", "max_answer_length", "max_qa_length"):
            require_positive_int(name, getattr(self, name))
        require_one_of("squad_answerability", self.squad_answerability, ANSWERABILITY)
        if self.task == "squad_v1" and self.squad_answerability != "null_span":
            raise ValueError(
                "`squad_answerability` must be 'null_span' for squad_v1 (the answer-class head "
                f"is SQuAD v2.0's). Received: squad_answerability={self.squad_answerability!r}"
            )
        require_int("warmup_steps", self.warmup_steps, 0, optional=True)
        require_int("seed", self.seed, 0)
        require_number("scale", self.scale, 0, exclusive_minimum=True)
        require_number("learning_rate", self.learning_rate, 0, exclusive_minimum=True,
                       optional=True)  # fmt: skip
        if self.task.lower() == "generic":
            when = "for the generic task (one or two columns, with `label_column`)"
            require_given("text_columns", self.text_columns or None, when)
            require_given("label_column", self.label_column, "for the generic task")
        else:
            task_class(self.task)  # fails early on an unknown name
        require_one_of("jit_compile", self.jit_compile, (True, False, "auto"))
        require_one_of("verbose", self.verbose, (0, 1, 2))
        require_int("pad_to_multiple_of", self.pad_to_multiple_of, 1, optional=True)
        if self.pad_to_multiple_of is not None and not task_class(self.task).dynamic_padding:
            raise ValueError(
                "`pad_to_multiple_of` must be None for the task "
                f"{self.task!r}: dynamic padding is for GLUE-style tasks. "
                f"Received: pad_to_multiple_of={self.pad_to_multiple_of}"
            )
        require_one_of("group_by_length", self.group_by_length, (True, False))
        if self.group_by_length and self.pad_to_multiple_of is None:
            raise ValueError(
                "`group_by_length` must come with `pad_to_multiple_of` (grouping saves time "
                "only when each batch is cut to its own length). Received: "
                "group_by_length=True, pad_to_multiple_of=None"
            )

    def task_spec(self) -> TaskSpec:
        """The GLUE-style task (a GLUE name or "generic")."""
        if self.task.lower() == "generic":
            return generic_task(
                self.text_columns,
                self.label_column,
                self.labels,
                delimiter=self.delimiter,
                header=self.header,
            )
        return get_task(self.task)
