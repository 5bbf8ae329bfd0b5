"""The text-embedding SavedModel: texts in, one vector each out.

Signatures of `TextEmbeddingServingModule` (an `AlbertTextEmbedder`):

- `serving_default`: `text` (`tf.string [batch]`) → `embeddings` (`float32 [batch,
  hidden_dim]`), what `AlbertTextEmbedder.predict` gives the same texts. A text longer than
  `max_sequence_length` tokens with [CLS] and [SEP] is truncated, as sentence-transformers and
  the embedder's preprocessor do (an embedding of the start of a long text is an answer; a
  failed request is not).
- `serve_token_ids`: `token_ids`, `segment_ids`, `padding_mask` (`int32 [batch, seq]`) →
  `embeddings`.

Each text is packed `[CLS] text [SEP]` by the tokenizer's packer (the ops of
`AlbertTextEmbedderPreprocessor`), the batch padded to its longest text: padding changes no
embedding (pooling reads the padding mask).
"""

from __future__ import annotations

import tensorflow as tf

from keras_albert.serving.task_serving import TaskServingModule
from keras_albert.tasks.text_embedding.model import AlbertTextEmbedder

WARMUP_TEXTS = (
    "A man is playing a guitar.",
    "The weather is lovely today.",
    "Empty",
)


class TextEmbeddingServingModule(TaskServingModule):
    """Serving endpoints of an `AlbertTextEmbedder` (see the module docstring).

    Args:
        model: an `AlbertTextEmbedder`.
        tokenizer: its `AlbertTokenizer`.
        max_sequence_length: packed length (longer texts are truncated); default the model's
            limit.
    """

    task = "text_embedding"

    def __init__(self, model, tokenizer, max_sequence_length=None):
        if not isinstance(model, AlbertTextEmbedder):
            raise TypeError(
                f"`model` must be an AlbertTextEmbedder. Received: model={type(model).__name__}"
            )
        super().__init__(model, tokenizer, max_sequence_length)
        self._finish()

    def _build_endpoints(self) -> dict:
        return self.text_endpoints(self.embed)

    def pack(self, text: tf.Tensor) -> dict:
        """`[CLS] text [SEP]` token inputs of a `[batch]` string tensor, padded to the longest."""
        packed = self.tokenizer.packer(self.max_sequence_length)((self.tokenizer(text),))
        mask = tf.cast(packed["padding_mask"], tf.int32)
        longest = tf.maximum(tf.reduce_max(tf.reduce_sum(mask, axis=1)), 2)
        return {
            "token_ids": packed["token_ids"][:, :longest],
            "segment_ids": packed["segment_ids"][:, :longest],
            "padding_mask": mask[:, :longest],
        }

    def token_outputs(self, inputs: dict) -> dict:
        return {"embeddings": tf.cast(self.call_model(inputs), tf.float32)}  # (batch, H)

    def embed(self, text: tf.Tensor) -> dict:
        return self.token_outputs(self.pack(text))

    def warmup_inputs(self) -> list[tuple[str, dict]]:
        texts = list(WARMUP_TEXTS) + [" ".join(["word"] * self.max_sequence_length)]
        return self.text_warmup_inputs(texts)
