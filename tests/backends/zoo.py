"""Every model class of keras_albert, tiny, with its inputs and a few fine-tuning batches: the
same on every backend (NumPy seeds), so that TensorFlow's process and the JAX and PyTorch
subprocesses (`backend_run.py`) build, feed and train the same models. Imports no TensorFlow."""

import keras
import numpy as np

from keras_albert import (
    AlbertBackbone,
    AlbertClassifier,
    AlbertMaskedLM,
    AlbertMultipleChoice,
    AlbertPretrainer,
    AlbertQuestionAnswerer,
    AlbertTokenClassifier,
)
from keras_albert.pretraining.objective import compile_pretrainer
from keras_albert.training.lamb import Lamb
from keras_albert.training.schedule import WarmupPolynomialDecay
from tests import tiny

TINY = {**tiny.TINY, "dropout": 0.0}  # dropout 0: the backends draw other masks
BATCH_SIZE, SEQUENCE_LENGTH, NUM_MASKED, NUM_CHOICES, NUM_BATCHES = 4, 12, 3, 2, 3


def backbone(**changes) -> AlbertBackbone:
    return AlbertBackbone(**{**TINY, **changes})


# name → builder; every class, every sharing, groups × inner repetitions, both answerabilities.
MODELS = {
    "backbone_sharing_all": lambda: backbone(),
    "backbone_sharing_none": lambda: backbone(sharing="none"),
    "backbone_sharing_attention": lambda: backbone(sharing="attention"),
    "backbone_sharing_ffn": lambda: backbone(sharing="ffn"),
    "backbone_groups": lambda: backbone(num_layers=4, num_groups=2, num_inner_repetitions=2),
    "pretrainer": lambda: AlbertPretrainer(backbone()),
    "masked_lm": lambda: AlbertMaskedLM(backbone()),
    "classifier": lambda: AlbertClassifier(backbone(), num_classes=3, dropout=0.0),
    "token_classifier": lambda: AlbertTokenClassifier(backbone(), num_classes=5, dropout=0.0),
    "question_answerer": lambda: AlbertQuestionAnswerer(backbone(), dropout=0.0),
    "question_answerer_answer_class": lambda: AlbertQuestionAnswerer(
        backbone(), answerability="answer_class", dropout=0.0
    ),
    "multiple_choice": lambda: AlbertMultipleChoice(backbone(), dropout=0.0),
}
# The models `fit` trains a few steps on every backend (the pretrainer: MLM + SOP); the token
# classifier and the null-span answerer add nothing these heads do not (a dense layer on the
# sequence output), and each fit costs seconds of first-use compilation on JAX.
TRAINED = ("pretrainer", "classifier", "question_answerer_answer_class", "multiple_choice")


def build(name: str) -> keras.Model:
    """The model `name`, with every weight drawn at random (not LayerNorm's ones and zeros)."""
    keras.utils.set_random_seed(0)
    model = MODELS[name]()
    randomize(model)
    return model


def randomize(model: keras.Model) -> None:
    """Every weight of `model` drawn at random, the same on every backend."""
    rng = np.random.default_rng(1)
    for weight in model.weights:
        if "seed_generator" not in weight.path:
            weight.assign(rng.normal(0.0, 0.3, weight.shape).astype(weight.dtype))


def encoder_inputs(rng, batch_size=BATCH_SIZE) -> dict:
    """[CLS] a [SEP] b [SEP] then padding of varying length, segment ids 0 then 1."""
    lengths = rng.integers(SEQUENCE_LENGTH // 2, SEQUENCE_LENGTH + 1, size=batch_size)
    lengths[0] = SEQUENCE_LENGTH
    padding_mask = (np.arange(SEQUENCE_LENGTH)[None, :] < lengths[:, None]).astype("int32")
    token_ids = rng.integers(5, TINY["vocabulary_size"], size=(batch_size, SEQUENCE_LENGTH))
    token_ids[:, 0] = 2
    segment_ids = np.zeros_like(padding_mask)
    for row, length in enumerate(lengths):
        segment_ids[row, length // 2 : length] = 1
    return {
        "token_ids": (token_ids * padding_mask).astype("int32"),
        "segment_ids": segment_ids,
        "padding_mask": padding_mask,
    }


def examples(name: str, seed: int = 0, batch_size: int = BATCH_SIZE) -> tuple:
    """(x, y, sample_weight) of `batch_size` examples for `name` (y None for backbones)."""
    rng = np.random.default_rng(seed)
    x = encoder_inputs(rng, batch_size)
    lengths = x["padding_mask"].sum(1)
    y = sample_weight = None
    if name in ("pretrainer", "masked_lm"):
        x["mask_positions"] = np.stack(
            [np.sort(rng.choice(np.arange(1, n), NUM_MASKED, replace=False)) for n in lengths]
        ).astype("int32")
        y = {
            "mlm_logits": rng.integers(5, TINY["vocabulary_size"], (batch_size, NUM_MASKED)),
            "sop_logits": rng.integers(0, 2, batch_size),
        }
        # The last prediction slot of every other row is padding.
        weights = np.ones((batch_size, NUM_MASKED), "float32")
        weights[::2, -1] = 0.0
        sample_weight = {"mlm_logits": weights, "sop_logits": np.ones(batch_size, "float32")}
    elif name == "classifier":
        y = rng.integers(0, 3, batch_size)
    elif name == "token_classifier":
        y = rng.integers(0, 5, (batch_size, SEQUENCE_LENGTH))
    elif name.startswith("question_answerer"):
        # `AlbertQuestionAnswerer.training_targets`'s (x, y) of either answerability.
        # Answers in the context (segment 1), where the answer-class head looks for them.
        starts = rng.integers(lengths // 2, lengths - 2).astype("int32")  # ends before [SEP]
        if name == "question_answerer":
            y = {"start_logits": starts, "end_logits": starts + 1}
        else:
            x["start_positions"] = starts  # teacher forcing of the end given the start
            y = {
                "start_log_probs": starts,
                "end_log_probs": starts + 1,
                "cls_logits": rng.integers(0, 2, batch_size).astype("float32"),
            }
    elif name == "multiple_choice":
        choices = [encoder_inputs(rng, batch_size) for _ in range(NUM_CHOICES)]
        x = {key: np.stack([c[key] for c in choices], axis=1) for key in x}
        y = rng.integers(0, NUM_CHOICES, batch_size)
    if name == "masked_lm":
        y = sample_weight = None
    return x, y, sample_weight


def inference_inputs(name: str) -> dict:
    """The forward pass's inputs (without labels; the answer-class head without
    `start_positions`, i.e. its beam of candidates)."""
    x, _, _ = examples(name, seed=100)
    x.pop("start_positions", None)
    return x


def training_batches(name: str) -> tuple:
    """`NUM_BATCHES` batches of `BATCH_SIZE`, concatenated (fit them unshuffled)."""
    parts = [examples(name, seed=10 + i) for i in range(NUM_BATCHES)]

    def concatenate(*arrays):
        return np.concatenate(arrays)

    return tuple(
        None
        if parts[0][k] is None
        else keras.tree.map_structure(concatenate, *[p[k] for p in parts])
        for k in range(3)
    )


def optimizer() -> Lamb:
    """ALBERT's LAMB on ALBERT's schedule (warmup then linear decay)."""
    return Lamb(WarmupPolynomialDecay(0.01, warmup_steps=1, total_steps=10))


# Three steps of a tiny model. On JAX `jax.jit` of the train step is the cheaper way (the four
# models' fits: 19 s jitted, 36 s op by op); on TensorFlow `tf.function` without XLA; on
# PyTorch eager (`torch.compile` would take minutes on a CPU).
JIT_COMPILE = keras.backend.backend() == "jax"


def compile_for_training(name: str, model: keras.Model) -> None:
    if name == "pretrainer":
        compile_pretrainer(model, optimizer(), jit_compile=JIT_COMPILE)
        return
    if name.startswith("question_answerer"):
        model.compile(optimizer=optimizer(), jit_compile=JIT_COMPILE, **model.training_loss())
        return
    model.compile(
        optimizer=optimizer(),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        jit_compile=JIT_COMPILE,
    )


class BatchLosses(keras.callbacks.Callback):
    """The `loss` log after every batch (Keras's running mean over the epoch)."""

    def __init__(self):
        super().__init__()
        self.losses = []

    def on_train_batch_end(self, batch, logs=None):
        self.losses.append(float(logs["loss"]))


def fit_losses(name: str, model: keras.Model) -> list[float]:
    """Compiles `model` and fits it on `training_batches(name)`; the per-batch losses."""
    compile_for_training(name, model)
    x, y, sample_weight = training_batches(name)
    recorder = BatchLosses()
    model.fit(
        x,
        y,
        sample_weight=sample_weight,
        batch_size=BATCH_SIZE,
        epochs=1,
        shuffle=False,
        verbose=0,
        callbacks=[recorder],
    )
    return recorder.losses


def to_numpy(tree) -> dict:
    """A model's outputs as a flat dict of NumPy arrays ("output" for a single tensor)."""
    if not isinstance(tree, dict):
        tree = {"output": tree}
    return {key: keras.ops.convert_to_numpy(value) for key, value in tree.items()}


# The export's classifier: the vocabulary of tests/data/30k-clean.model (the tokenizer).
EXPORT_VOCABULARY_SIZE, EXPORT_SEQUENCE_LENGTH = 30000, 32


def export_classifier() -> AlbertClassifier:
    keras.utils.set_random_seed(2)
    return AlbertClassifier(
        backbone(
            vocabulary_size=EXPORT_VOCABULARY_SIZE, max_sequence_length=EXPORT_SEQUENCE_LENGTH
        ),
        num_classes=2,
        dropout=0.0,
    )


# Backbones whose gradients with `remat=True` must be those without, on every backend: with
# dropout (the recomputation must draw the forward pass's masks), groups, a half shared, LoRA
# (frozen kernels), and mixed precision over two passes (the shared weights' gradients are
# summed in bfloat16, `cast_once`: over three, the order of the sum, and so its rounding,
# is not the same with and without remat).
REMAT_CASES = {
    "float32": dict(dropout=0.1),
    "groups": dict(dropout=0.1, num_layers=4, num_groups=2, num_inner_repetitions=2),
    "sharing_attention": dict(dropout=0.1, sharing="attention"),
    "lora": dict(dropout=0.1, lora_rank=2),
    "mixed_bfloat16": dict(dropout=0.1, num_layers=2, dtype="mixed_bfloat16"),
}


def remat_pair(lora_rank: int | None = None, **changes) -> tuple[AlbertBackbone, AlbertBackbone]:
    """A backbone of random weights (`lora_rank`: with random adapters) and its copy with
    `remat=True`: the same weights and dropout seeds."""
    pair = []
    for remat in (False, True):
        keras.utils.set_random_seed(0)  # the dropout layers' seeds
        model = backbone(remat=remat, **changes)
        if lora_rank is not None:
            model.enable_lora(lora_rank)
        randomize(model)
        pair.append(model)
    return tuple(pair)


def gradient_function(model: AlbertBackbone, inputs: dict, jit_compile: bool | None = False):
    """A function of no arguments returning the gradients, with respect to
    `model.trainable_variables`, of a fixed random projection of the backbone's outputs in a
    training call (dropout on), on any backend (on JAX op by op; on TensorFlow traced, with
    XLA if `jit_compile`, or eagerly if it is None)."""
    rng = np.random.default_rng(3)
    batch_size, sequence_length = inputs["token_ids"].shape
    hidden_dim = model.albert_config.hidden_dim
    sequence_projection = keras.ops.convert_to_tensor(
        rng.normal(size=(batch_size, sequence_length, hidden_dim)), "float32"
    )
    pooled_projection = keras.ops.convert_to_tensor(
        rng.normal(size=(batch_size, hidden_dim)), "float32"
    )

    def loss(outputs):
        return keras.ops.sum(
            keras.ops.cast(outputs["sequence_output"], "float32") * sequence_projection
        ) + keras.ops.sum(keras.ops.cast(outputs["pooled_output"], "float32") * pooled_projection)

    backend = keras.backend.backend()
    if backend == "jax":
        import jax

        def value(trainable):
            non_trainable = [v.value for v in model.non_trainable_variables]
            outputs, _ = model.stateless_call(trainable, non_trainable, inputs, training=True)
            return loss(outputs)

        return lambda: jax.grad(value)([v.value for v in model.trainable_variables])
    if backend == "tensorflow":
        import tensorflow as tf

        def step():
            with tf.GradientTape() as tape:
                value = loss(model(inputs, training=True))
            return tape.gradient(value, model.trainable_variables)

        return step if jit_compile is None else tf.function(step, jit_compile=jit_compile)

    def step():  # PyTorch
        for variable in model.trainable_variables:
            variable.value.grad = None
        loss(model(inputs, training=True)).backward()
        return [variable.value.grad for variable in model.trainable_variables]

    return step


def remat_difference(jit_compile: bool | None = False, **case) -> float:
    """The largest difference between the gradients of `remat_pair(**case)`'s two backbones:
    over the weights, the norm of a weight's difference relative to the norm of its gradient,
    or to a thousandth of the largest gradient norm if that is larger (the key projection's
    bias has a gradient of zero in exact arithmetic: the softmax is unchanged by a constant
    added to a row's scores; its rounding noise has no scale of its own)."""
    inputs = encoder_inputs(np.random.default_rng(0))
    gradients = []
    for model in remat_pair(**case):
        function = gradient_function(model, inputs, jit_compile)
        keras.utils.set_random_seed(4)  # PyTorch's dropout draws from its global generator
        gradients.append(function())
    # A weight the remat model's tape lost has None (TensorFlow) for gradient.
    assert all(g is not None for model_gradients in gradients for g in model_gradients)
    gradients = [
        [keras.ops.convert_to_numpy(g).astype("float32") for g in model_gradients]
        for model_gradients in gradients
    ]
    floor = 1e-3 * max(np.linalg.norm(g) for g in gradients[0])
    # np.max, not max: a NaN is the answer, not skipped.
    return float(
        np.max(
            [
                np.linalg.norm(r - p) / max(np.linalg.norm(p), floor)
                for p, r in zip(*gradients, strict=True)
            ]
        )
    )
