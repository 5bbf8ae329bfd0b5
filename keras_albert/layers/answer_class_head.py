"""`AnswerClassHead`: the original ALBERT SQuAD v2.0 head (start, conditioned end, no-answer)."""

import keras
from keras import ops

from keras_albert.layers.dropout import ReplicaDropout
from keras_albert.layers.gather import gather_positions
from keras_albert.layers.layer_norm import LayerNorm
from keras_albert.layers.logits import logits_dense

# The original masks with `logits * (1 - p_mask) - 1e30 * p_mask`.
_MASKED = -1e30


@keras.saving.register_keras_serializable(package="keras_albert")
class AnswerClassHead(keras.layers.Layer):
    """Span and answerability head of google-research/albert `squad_utils.create_v2_model`.

    - start: dense(1) over every position, invalid positions masked, log-softmax;
    - end, given a start s: dense(H, tanh) over [h_i ; h_s] → LayerNorm → dense(1), masked,
      log-softmax. `start_positions` (the gold starts, in training) choose s, and the beam is
      not searched (`end_top_*` are zeros); without them the `num_start_candidates` best starts
      are each expanded to their `num_end_candidates` best ends (beam search), and
      `end_log_probs` is conditioned on the best start;
    - answerability: dense(H, tanh) over [Σ_i softmax(start)_i h_i ; h_[CLS]] → dropout →
      dense(1, no bias) = `cls_logits` (positive = no answer).

    Inputs: `sequence_output` (batch, seq, H), `segment_ids` and `padding_mask` (batch, seq) of
    `[CLS] question [SEP] context [SEP]`, optionally `start_positions` (batch,) int. Only [CLS]
    and the context (segment 1 before the final [SEP]) may start or end a span, as the
    original's `p_mask`.
    Outputs (float32, indices int32): `start_log_probs`, `end_log_probs` (batch, seq);
    `start_top_log_probs`, `start_top_index` (batch, k_start); `end_top_log_probs`,
    `end_top_index` (batch, k_start * k_end), row i * k_end + j = j-th end of i-th start;
    `cls_logits` (batch,).

    Args:
        hidden_dim: int, H.
        num_start_candidates: int, starts kept at inference (5 in the original).
        num_end_candidates: int, ends kept per start (5).
        dropout: float, dropout in the answerability branch (0.1).
        initializer_range: float, stddev of the truncated-normal kernel initializer.
        layer_norm_epsilon: float, of the end branch's LayerNorm (TF1 contrib's 1e-12).

    Example:
    >>> import numpy as np
    >>> from keras_albert.layers.answer_class_head import AnswerClassHead
    >>> head = AnswerClassHead(hidden_dim=8)
    >>> segment_ids = np.array([[0, 0, 0, 1, 1, 1, 1, 1, 1, 0]] * 2)
    >>> outputs = head(np.random.rand(2, 10, 8), segment_ids, segment_ids[:, ::-1] * 0 + 1)
    >>> tuple(outputs["end_top_index"].shape)
    (2, 25)

    Reference: Lan et al., 2020, arXiv:1909.11942; google-research/albert `squad_utils.py`.
    """

    def __init__(
        self,
        hidden_dim,
        num_start_candidates=5,
        num_end_candidates=5,
        dropout=0.1,
        initializer_range=0.02,
        layer_norm_epsilon=1e-12,
        **kwargs,
    ):
        super().__init__(**kwargs)
        for name, value in (
            ("hidden_dim", hidden_dim),
            ("num_start_candidates", num_start_candidates),
            ("num_end_candidates", num_end_candidates),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"`{name}` must be a positive integer. Received: {name}={value!r}")
        if not 0 <= dropout < 1:
            raise ValueError(f"`dropout` must be a float in [0, 1). Received: dropout={dropout!r}")
        self.hidden_dim = hidden_dim
        self.num_start_candidates = num_start_candidates
        self.num_end_candidates = num_end_candidates
        self.dropout = dropout
        self.initializer_range = initializer_range
        self.layer_norm_epsilon = layer_norm_epsilon

        def dense(units, name, activation):
            return keras.layers.Dense(
                units,
                activation=activation,
                kernel_initializer=keras.initializers.TruncatedNormal(stddev=initializer_range),
                dtype=self.dtype_policy,
                name=name,
            )

        self.start_dense = logits_dense(1, initializer_range, "start_logits_dense")
        self.end_dense_0 = dense(hidden_dim, "end_logits_dense_0", activation="tanh")
        self.end_layer_norm = LayerNorm(
            epsilon=layer_norm_epsilon, dtype="float32", name="end_logits_layer_norm"
        )
        self.end_dense_1 = logits_dense(1, initializer_range, "end_logits_dense_1")
        self.answer_dense_0 = dense(hidden_dim, "answer_class_dense_0", activation="tanh")
        self.answer_dropout = ReplicaDropout(dropout, name="answer_class_dropout")
        self.answer_dense_1 = logits_dense(
            1, initializer_range, "answer_class_dense_1", use_bias=False
        )

    def build(
        self,
        sequence_output_shape,
        segment_ids_shape=None,
        padding_mask_shape=None,
        start_positions_shape=None,
    ):
        hidden = sequence_output_shape[-1]
        self.start_dense.build(sequence_output_shape)
        self.end_dense_0.build((None, None, 2 * hidden))
        self.end_layer_norm.build((None, None, self.hidden_dim))
        self.end_dense_1.build((None, None, self.hidden_dim))
        self.answer_dense_0.build((None, 2 * hidden))
        self.answer_dense_1.build((None, self.hidden_dim))
        self.built = True

    def _end_log_probs(self, sequence, start_features, invalid):
        # sequence (batch, seq, H); start_features (batch, k, H) → (batch, k, seq).
        seq_length = ops.shape(sequence)[1]
        num = ops.shape(start_features)[1]
        tiled_sequence = ops.broadcast_to(
            sequence[:, None], (ops.shape(sequence)[0], num, seq_length, ops.shape(sequence)[2])
        )
        tiled_start = ops.broadcast_to(start_features[:, :, None], ops.shape(tiled_sequence))
        hidden = self.end_dense_0(ops.concatenate([tiled_sequence, tiled_start], axis=-1))
        hidden = self.end_layer_norm(ops.cast(hidden, "float32"))
        logits = ops.squeeze(self.end_dense_1(hidden), -1)  # float32 (layers/logits.py)
        logits = ops.where(invalid[:, None], _MASKED, logits)
        return ops.log_softmax(logits, axis=-1)

    def call(self, sequence_output, segment_ids, padding_mask, start_positions=None, training=None):
        invalid = ops.logical_not(span_positions(segment_ids, padding_mask))  # (batch, seq)
        start_logits = ops.squeeze(self.start_dense(sequence_output), -1)  # float32
        start_logits = ops.where(invalid, _MASKED, start_logits)
        start_log_probs = ops.log_softmax(start_logits, axis=-1)  # (batch, seq)

        start_top_log_probs, start_top_index = ops.top_k(start_log_probs, self.num_start_candidates)
        batch = ops.shape(start_log_probs)[0]
        num_pairs = self.num_start_candidates * self.num_end_candidates
        if start_positions is None:
            beam_features = gather_positions(sequence_output, start_top_index)  # (batch, k, H)
            beam_end = self._end_log_probs(sequence_output, beam_features, invalid)  # (b, k, seq)
            end_top_log_probs, end_top_index = ops.top_k(beam_end, self.num_end_candidates)
            end_top_log_probs = ops.reshape(end_top_log_probs, (batch, num_pairs))
            end_top_index = ops.reshape(end_top_index, (batch, num_pairs))
            end_log_probs = beam_end[:, 0]
        else:
            # Training: the end given the gold start only; no beam (as the original's graph).
            positions = ops.reshape(ops.cast(start_positions, "int32"), (-1, 1))
            gold_features = gather_positions(sequence_output, positions)  # (batch, 1, H)
            end_log_probs = self._end_log_probs(sequence_output, gold_features, invalid)[:, 0]
            end_top_log_probs = ops.zeros((batch, num_pairs), "float32")
            end_top_index = ops.zeros((batch, num_pairs), "int32")

        start_probs = ops.cast(ops.softmax(start_logits, axis=-1), sequence_output.dtype)
        start_feature = ops.einsum("bl,blh->bh", start_probs, sequence_output)
        cls_feature = sequence_output[:, 0]
        answer = self.answer_dense_0(ops.concatenate([start_feature, cls_feature], axis=-1))
        answer = self.answer_dropout(answer, training=training)
        cls_logits = ops.squeeze(self.answer_dense_1(answer), -1)  # float32
        return {
            "start_log_probs": start_log_probs,
            "end_log_probs": end_log_probs,
            "start_top_log_probs": start_top_log_probs,
            "start_top_index": ops.cast(start_top_index, "int32"),
            "end_top_log_probs": end_top_log_probs,
            "end_top_index": ops.cast(end_top_index, "int32"),
            "cls_logits": cls_logits,
        }

    def compute_output_spec(
        self, sequence_output, segment_ids, padding_mask, start_positions=None, training=None
    ):
        batch, seq = sequence_output.shape[0], sequence_output.shape[1]
        k, pairs = self.num_start_candidates, self.num_start_candidates * self.num_end_candidates

        def spec(shape, dtype="float32"):
            return keras.KerasTensor(shape, dtype=dtype)

        return {
            "start_log_probs": spec((batch, seq)),
            "end_log_probs": spec((batch, seq)),
            "start_top_log_probs": spec((batch, k)),
            "start_top_index": spec((batch, k), "int32"),
            "end_top_log_probs": spec((batch, pairs)),
            "end_top_index": spec((batch, pairs), "int32"),
            "cls_logits": spec((batch,)),
        }

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "hidden_dim": self.hidden_dim,
                "num_start_candidates": self.num_start_candidates,
                "num_end_candidates": self.num_end_candidates,
                "dropout": self.dropout,
                "initializer_range": self.initializer_range,
                "layer_norm_epsilon": self.layer_norm_epsilon,
            }
        )
        return config


def span_positions(segment_ids, padding_mask):
    """Where a span may start or end: [CLS] and the context (segment 1, real, before the final
    [SEP], which is the last real position). (batch, seq) bool."""
    real = ops.cast(padding_mask, "int32")
    positions = ops.arange(ops.shape(real)[1], dtype="int32")[None, :]
    last = ops.sum(real, axis=1, keepdims=True) - 1
    context = ops.logical_and(
        ops.equal(segment_ids, 1), ops.logical_and(real > 0, positions < last)
    )
    return ops.logical_or(context, ops.equal(positions, 0))
