"""The pretraining driver's options, checked when made: `PretrainingOptions`.

Each field is one flag of its tool (`keras_albert.cli.add_options`): the default is written
here once, the help is the field's entry in the class docstring.
"""

from __future__ import annotations

import dataclasses
import math

from keras_albert.cli import VOCABULARY_METADATA, parse_bool_or_auto
from keras_albert.training.precision import PRECISIONS
from keras_albert.validation import (
    require_any,
    require_bool,
    require_divisible,
    require_exclusive,
    require_given,
    require_int,
    require_number,
    require_one_of,
)

_VERBOSITY = {"choices": (0, 1, 2)}


@dataclasses.dataclass(frozen=True)
class PretrainingOptions:
    """Everything one pretraining run needs (`keras_albert.pretraining.driver.pretrain`).

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
        poly_power: the exponent of the polynomial decay from step 0 to `train_steps` (1:
            linear), as the original's `--poly_power`.
        start_warmup_step: the step the linear warmup starts at (the original's
            `--start_warmup_step`, for continued pretraining); the rate is 0 before it.
        optimizer: "lamb" (ALBERT's pretraining optimizer) or "adamw" (the original's other
            choice: decoupled decay, LayerNorm parameters and biases excluded); both clip the
            summed gradient to global norm 1.
        weight_decay_rate: the optimizer's decay (LayerNorm parameters and biases excluded).
        sentence_order_loss_weight: the SOP loss's weight in the total loss; 1.0 is the
            original's plain sum.
        strategy: a `build_strategy` name (auto, cpu, one_device, mirrored, multi_worker with
            TF_CONFIG set, tpu).
        tpu_address: for the "tpu" strategy: a Cloud TPU name, "local" on a TPU VM, or
            "grpc://host:port".
        precision: float32, mixed_bfloat16, mixed_float16 (with dynamic loss scaling) or auto
            (mixed_bfloat16 on a CPU with AVX512-BF16 or AMX, else as the default); by default
            the device's: mixed_bfloat16 on TPU, mixed_float16 on GPU, float32 on CPU. The
            weights stay float32 (checkpoints do not depend on it: a run may resume in
            another precision).
        dynamic_masking: mask anew every pass in-graph instead of using the records' masks;
            needs `vocabulary`.
        vocabulary: the tokenizer's vocabulary file: a SentencePiece model (30k-clean.model) or a
            WordPiece vocabulary (vocab_chinese.txt, one token per line);
            the one the data was made with (dynamic masking: word starts, special tokens).
        lowercase: the tokenizer lowercases (as the data tool did); recorded in run.json when
            false, for fine-tuning and the export.
        strip_accents: the tokenizer drops combining marks (as the data tool did); recorded in
            run.json when false.
        masked_lm_prob: dynamic masking: the share of tokens to predict.
        max_ngram: dynamic masking: the longest masked n-gram.
        sequence_length: the records' sequence length, to check against them; by default
            whatever the records hold.
        max_predictions_per_sequence: prediction slots per sequence; by default the records'
            count. Without dynamic masking it must equal the records' count.
        steps_per_execution: train steps per `tf.function` call.
        jit_compile: auto, true or false: XLA for the train step (auto: on GPUs and TPUs).
        remat: recompute each application of the shared transformer block in the backward
            pass instead of keeping its activations (gradient checkpointing,
            `AlbertBackbone(remat=True)`): less memory for a second forward pass through the
            blocks; the same gradients.
        log_every_steps: the steps of a stretch, each ending in one log: progress line,
            TensorBoard, history row.
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
        verbose: 0: no progress lines; 1 or 2: one per stretch (step, rate, time left).
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
    poly_power: float = 1.0
    start_warmup_step: int = 0
    optimizer: str = "lamb"
    weight_decay_rate: float = 0.01
    sentence_order_loss_weight: float = 1.0
    strategy: str = "auto"
    tpu_address: str | None = None
    precision: str | None = None
    dynamic_masking: bool = False
    vocabulary: str | None = dataclasses.field(default=None, metadata=VOCABULARY_METADATA)
    lowercase: bool = True
    strip_accents: bool = True
    masked_lm_prob: float = 0.15
    max_ngram: int = 3
    sequence_length: int | None = None
    max_predictions_per_sequence: int | None = None
    steps_per_execution: int = 1
    jit_compile: bool | str = dataclasses.field(
        default="auto", metadata={"parse": parse_bool_or_auto}
    )
    remat: bool = False
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
        require_bool("remat", self.remat)
        require_int("warmup_steps", self.warmup_steps, 0, optional=True)
        for name in ("eval_steps", "eval_every_steps", "max_predictions_per_sequence"):
            require_int(name, getattr(self, name), 1, optional=True)
        require_int("sequence_length", self.sequence_length, 3, optional=True)
        require_exclusive(preset=self.preset, config=self.config)
        require_any(preset=self.preset, config=self.config, init_checkpoint=self.init_checkpoint)
        why = "checkpoints and evaluations happen at the end of a stretch of log_every_steps"
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
                "vocabulary", self.vocabulary,
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
        require_one_of("precision", self.precision, (None, *PRECISIONS))
        require_one_of("optimizer", self.optimizer, ("lamb", "adamw"))
        require_number("poly_power", self.poly_power, 0, exclusive_minimum=True)
        require_int("start_warmup_step", self.start_warmup_step, 0)

    @property
    def resolved_warmup_steps(self) -> int:
        if self.warmup_steps is None:
            return int(math.ceil(0.025 * self.train_steps))
        return self.warmup_steps
