"""Model Garden's ALBERT (tf-models-official, on tf_keras), the TensorFlow implementation TPU
users run: built to an `AlbertConfig`, given an `AlbertBackbone`'s weights, and its pretraining
step. The peer of `encoder_forward.py` and `pretraining_step.py`, and what
tests/models/test_model_garden_parity.py holds equal to ours.

tf-models-official 2.20.0 pins tensorflow 2.20: `tools/run.sh test` installs it without its
dependencies; of those, `official.nlp.modeling` and the LAMB need tf-keras, gin-config and
tensorflow-text (the test extra). It uses `tf_keras` directly, so `TF_USE_LEGACY_KERAS` stays
unset and Keras 3 is untouched. `official.nlp.tasks` imports tensorflow_datasets, so the
pretraining step is `MaskedLMTask.train_step` restated here from its parts: `BertPretrainerV2`
with the task's default `next_sentence` `ClassificationHead` (our SOP head), the task's loss
(the weighted mean MLM cross-entropy plus the mean sentence-order cross-entropy, in float32)
and Model Garden's LAMB.
"""

import contextlib

import numpy as np
import tensorflow as tf
import tf_keras
from official.modeling import activations
from official.modeling.optimization.lamb import LAMB
from official.nlp.modeling import layers, models, networks

from keras_albert import AlbertBackbone
from keras_albert.config import AlbertConfig
from keras_albert.convert.model_garden import model_garden_table


@contextlib.contextmanager
def global_policy(policy: str):
    """tf_keras's global dtype policy while Model Garden's layers are built (its
    `performance.set_mixed_precision_policy`): its models take no `dtype` argument."""
    previous = tf_keras.mixed_precision.global_policy()
    tf_keras.mixed_precision.set_global_policy(policy)
    try:
        yield
    finally:
        tf_keras.mixed_precision.set_global_policy(previous)


def albert_encoder(config: AlbertConfig, policy: str = "float32") -> networks.AlbertEncoder:
    """`AlbertEncoder` of `config`'s architecture (one shared block, the tanh GELU: the only
    kind it builds), with dict outputs, under the tf_keras dtype `policy`."""
    if (config.num_groups, config.num_inner_repetitions) != (1, 1):
        raise ValueError(
            "Model Garden's AlbertEncoder shares one block across all layers: `config` must "
            f"have num_groups=1 and num_inner_repetitions=1. Received: num_groups="
            f"{config.num_groups}, num_inner_repetitions={config.num_inner_repetitions}"
        )
    if config.activation != "gelu_approximate":
        raise ValueError(
            "Model Garden's AlbertEncoder is built here with its tanh GELU: `config` must have "
            f'activation="gelu_approximate". Received: activation={config.activation!r}'
        )
    with global_policy(policy):
        return networks.AlbertEncoder(
            vocab_size=config.vocabulary_size,
            embedding_width=config.embedding_dim,
            hidden_size=config.hidden_dim,
            num_layers=config.num_layers,
            num_attention_heads=config.num_heads,
            max_sequence_length=config.max_sequence_length,
            type_vocab_size=config.num_segments,
            intermediate_size=config.intermediate_dim,
            activation=activations.gelu,
            dropout_rate=config.dropout,
            attention_dropout_rate=config.attention_dropout,
            dict_outputs=True,
        )


def copy_weights(backbone: AlbertBackbone, encoder: networks.AlbertEncoder) -> None:
    """`encoder`'s variables ← `backbone`'s weights, through the converter's table for Model
    Garden's variable names read backwards (each entry used once, each variable set once);
    attention kernels reshaped to its EinsumDense `(hidden, heads, head_dim)`."""
    config = backbone.albert_config
    ours = {weight.path: weight for weight in backbone.weights}
    theirs = {variable.name.rsplit(":", 1)[0]: variable for variable in encoder.weights}
    # (Model Garden has no projection when E = H: such a backbone fails the name check.)
    table = model_garden_table(config, with_mlm=False)
    names = [entry.source_name for entry in table]
    if sorted(names) != sorted(theirs):
        only_theirs, only_table = sorted(set(theirs) - set(names)), sorted(set(names) - set(theirs))
        raise ValueError(
            f"Model Garden's variables and the table differ: only in the encoder {only_theirs}, "
            f"only in the table {only_table}"
        )
    for entry in table:
        variable = theirs[entry.source_name]
        value = np.asarray(ours[entry.weight_path].numpy(), "float32")
        variable.assign(value.reshape(variable.shape).astype(variable.dtype.as_numpy_dtype))


def encoder_inputs(x: dict) -> dict:
    """Model Garden's input names for our `token_ids`, `segment_ids`, `padding_mask` (and
    `mask_positions` when there)."""
    names = {"token_ids": "input_word_ids", "segment_ids": "input_type_ids",
             "padding_mask": "input_mask", "mask_positions": "masked_lm_positions"}  # fmt: skip
    return {names[key]: tf.constant(value, tf.int32) for key, value in x.items() if key in names}


def pretrainer(config: AlbertConfig, policy: str = "float32") -> models.BertPretrainerV2:
    """`BertPretrainerV2` over `albert_encoder(config, policy)` as `MaskedLMTask` builds it:
    the tied MLM head (GELU, TruncatedNormal(0.02)) and the `next_sentence` head (a tanh dense
    of `hidden_dim` on [CLS], then 2 logits), dropout as `config`."""
    encoder = albert_encoder(config, policy)
    with global_policy(policy):
        model = models.BertPretrainerV2(
            encoder_network=encoder,
            mlm_activation=activations.gelu,
            mlm_initializer=tf_keras.initializers.TruncatedNormal(stddev=0.02),
            classification_heads=[
                layers.ClassificationHead(
                    inner_dim=config.hidden_dim,
                    num_classes=2,
                    dropout_rate=config.dropout,
                    name="next_sentence",
                )
            ],
        )
        # Built here, by a first call: the MLM head makes its layers when first called, and
        # they take the policy in force then.
        ids = tf.constant([[2, 3]], tf.int32)
        model(encoder_inputs({"token_ids": ids, "segment_ids": ids * 0, "padding_mask": ids * 0 + 1,
                              "mask_positions": tf.constant([[1]], tf.int32)}))  # fmt: skip
    return model


def pretraining_step(model: models.BertPretrainerV2, learning_rate: float, jit_compile: bool):
    """`step(inputs, mask_ids, mask_weights, sentence_order_label) -> loss`, a `tf.function`:
    `MaskedLMTask.train_step` with its loss (see the module docstring) and Model Garden's LAMB
    (weight decay 0.01, LayerNorm and biases excluded: the original ALBERT's)."""
    optimizer = LAMB(
        learning_rate,
        weight_decay_rate=0.01,
        exclude_from_weight_decay=["LayerNorm", "layer_norm", "bias"],
    )

    @tf.function(jit_compile=jit_compile)
    def step(inputs, mask_ids, mask_weights, sentence_order_label):
        with tf.GradientTape() as tape:
            outputs = model(inputs, training=True)
            mlm_losses = tf_keras.losses.sparse_categorical_crossentropy(
                mask_ids, tf.cast(outputs["mlm_logits"], tf.float32), from_logits=True
            )
            mlm_loss = tf.math.divide_no_nan(
                tf.reduce_sum(mlm_losses * mask_weights), tf.reduce_sum(mask_weights)
            )
            sop_loss = tf.reduce_mean(
                tf_keras.losses.sparse_categorical_crossentropy(
                    sentence_order_label,
                    tf.cast(outputs["next_sentence"], tf.float32),
                    from_logits=True,
                )
            )
            loss = mlm_loss + sop_loss
        variables = model.trainable_variables
        gradients = tape.gradient(loss, variables)
        # The encoder's pooler is outside the loss (the task's head reads [CLS] itself): no
        # gradient, as in Model Garden's own step, where the optimizer skips it.
        pairs = zip(gradients, variables, strict=True)
        optimizer.apply_gradients([pair for pair in pairs if pair[0] is not None])
        return loss

    return step
