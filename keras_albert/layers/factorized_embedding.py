"""ALBERT's factorized embedding: a small V×E table projected up to the hidden size."""

import keras
from keras import ops

from keras_albert.layers.dropout import ReplicaDropout
from keras_albert.layers.layer_norm import LayerNorm
from keras_albert.validation import require_positive_int, require_rate


@keras.saving.register_keras_serializable(package="keras_albert")
class FactorizedEmbedding(keras.layers.Layer):
    """Token + position + segment embeddings of width E, normalized, projected to width H.

    The vocabulary table is V×E with E much smaller than H, so it costs V·E + E·H parameters
    instead of V·H (Lan et al., 2020, "ALBERT", arXiv:1909.11942, section 3.1). The three
    embeddings are summed, then LayerNorm → dropout → dense E→H, as the original
    `embedding_postprocessor` + `embedding_hidden_mapping_in`.

    Args:
        vocabulary_size: int, V, rows of the token table.
        embedding_dim: int, E, width of the three embedding tables.
        hidden_dim: int, H, width after the projection.
        max_sequence_length: int, rows of the position table; longer inputs are an error.
        num_segments: int, rows of the segment table.
        dropout: float in [0, 1), applied after the LayerNorm.
        layer_norm_epsilon: float, LayerNorm epsilon (the original uses 1e-12).
        initializer_range: float, stddev of the truncated-normal initializer.

    Example:
    >>> from keras import ops
    >>> from keras_albert.layers.factorized_embedding import FactorizedEmbedding
    >>> layer = FactorizedEmbedding(vocabulary_size=10, embedding_dim=4, hidden_dim=8,
    ...                             max_sequence_length=6)
    >>> tuple(layer(ops.ones((2, 5), "int32"), ops.zeros((2, 5), "int32")).shape)
    (2, 5, 8)
    """

    def __init__(
        self,
        vocabulary_size,
        embedding_dim,
        hidden_dim,
        max_sequence_length=512,
        num_segments=2,
        dropout=0.0,
        layer_norm_epsilon=1e-12,
        initializer_range=0.02,
        **kwargs,
    ):
        super().__init__(**kwargs)
        require_positive_int("vocabulary_size", vocabulary_size)
        require_positive_int("embedding_dim", embedding_dim)
        require_positive_int("hidden_dim", hidden_dim)
        require_positive_int("max_sequence_length", max_sequence_length)
        require_positive_int("num_segments", num_segments)
        require_rate("dropout", dropout)
        self.vocabulary_size = vocabulary_size
        self.embedding_dim = embedding_dim
        self.hidden_dim = hidden_dim
        self.max_sequence_length = max_sequence_length
        self.num_segments = num_segments
        self.dropout = dropout
        self.layer_norm_epsilon = layer_norm_epsilon
        self.initializer_range = initializer_range

        initializer = keras.initializers.TruncatedNormal(stddev=initializer_range)
        self.token_embedding = keras.layers.Embedding(
            vocabulary_size,
            embedding_dim,
            embeddings_initializer=initializer,
            dtype=self.dtype_policy,
            name="token_embedding",
        )
        self.segment_embedding = keras.layers.Embedding(
            num_segments,
            embedding_dim,
            embeddings_initializer=initializer,
            dtype=self.dtype_policy,
            name="segment_embedding",
        )
        self.layer_norm = LayerNorm(
            epsilon=layer_norm_epsilon, dtype=self.dtype_policy, name="layer_norm"
        )
        self.dropout_layer = ReplicaDropout(dropout, dtype=self.dtype_policy, name="dropout")
        self.projection = keras.layers.Dense(
            hidden_dim,
            kernel_initializer=initializer,
            dtype=self.dtype_policy,
            name="projection",
        )

    def build(self, token_ids_shape, segment_ids_shape=None):
        self.token_embedding.build(token_ids_shape)
        self.segment_embedding.build(token_ids_shape)
        # A plain (max_sequence_length, E) table: positions are always 0..seq-1, so a slice
        # replaces the gather an Embedding layer would do.
        self.position_embeddings = self.add_weight(
            shape=(self.max_sequence_length, self.embedding_dim),
            initializer=keras.initializers.TruncatedNormal(stddev=self.initializer_range),
            name="position_embeddings",
        )
        embedded_shape = (*token_ids_shape, self.embedding_dim)
        self.layer_norm.build(embedded_shape)
        self.projection.build(embedded_shape)

    def call(self, token_ids, segment_ids, training=None):
        sequence_length = ops.shape(token_ids)[1]
        if isinstance(sequence_length, int) and sequence_length > self.max_sequence_length:
            raise ValueError(
                f"Received token_ids of length {sequence_length}, but this model has position "
                f"embeddings for at most max_sequence_length={self.max_sequence_length} tokens."
            )
        # (batch, seq, E) + (seq, E) broadcast over the batch.
        x = self.token_embedding(token_ids) + self.segment_embedding(segment_ids)
        x = x + ops.cast(self.position_embeddings[:sequence_length], x.dtype)
        x = self.layer_norm(x)
        x = self.dropout_layer(x, training=training)
        return self.projection(x)  # (batch, seq, H)

    @property
    def token_embeddings(self):
        """The V×E token table, shared with the tied masked-LM head."""
        return self.token_embedding.embeddings

    def compute_output_shape(self, token_ids_shape, segment_ids_shape=None):
        return (*token_ids_shape, self.hidden_dim)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "vocabulary_size": self.vocabulary_size,
                "embedding_dim": self.embedding_dim,
                "hidden_dim": self.hidden_dim,
                "max_sequence_length": self.max_sequence_length,
                "num_segments": self.num_segments,
                "dropout": self.dropout,
                "layer_norm_epsilon": self.layer_norm_epsilon,
                "initializer_range": self.initializer_range,
            }
        )
        return config
