"""The fill-mask SavedModel: a text with masks in, per mask the most probable tokens out.

Signatures of `FillMaskServingModule` (an `AlbertMaskedLM`, or a pretrainer's masked-LM head):

- `serving_default`: `text` (`tf.string [batch]`, each holding "[MASK]" zero or more times) →
  per mask, in the order of the text, padded to the batch's most masks `max_masks`, the
  `top_k` (fixed at export, 5 by default) most probable tokens, most probable first:
  `token_ids` (`int32 [batch, max_masks, top_k]`; padding -1), `tokens` (`string`, the pieces,
  e.g. "▁blue"; padding ""), `probabilities` (`float32`, the softmax over the vocabulary;
  padding 0), `texts` (`string`, the text with that mask filled by that token and its other
  masks left as "[MASK]"; padding ""), and `num_masks` (`int32 [batch]`: row b's masks are
  `[:num_masks[b]]`). A text without a mask gets `num_masks` 0 (`fill_mask` gives it `[]`):
  an answer, not an error, so that it fails none of the batch's other texts. A text longer than
  `max_sequence_length` tokens with [CLS] and [SEP] fails the request with an error that gives
  its length (it is never truncated: a mask could be cut off).
- `serve_token_ids`: `token_ids`, `segment_ids`, `padding_mask` (`int32 [batch, seq]`, the
  masks given as the mask id) → `token_ids`, `tokens`, `probabilities` as above,
  `mask_positions` (`int32 [batch, max_masks]`, where each mask is; padding -1) and `num_masks`.

The text is split on "[MASK]", its parts tokenized and joined by the mask id, then packed as
`[CLS] text [SEP]` (`keras_albert.tasks.fill_mask.features`, whose Python side `fill_mask`
uses: the served answers equal it); the batch is padded to its longest text.
"""

from __future__ import annotations

import tensorflow as tf

from keras_albert.serving.saved_model import SERVING_DEFAULT
from keras_albert.serving.task_serving import (
    TaskServingModule,
)
from keras_albert.tasks.fill_mask import defaults
from keras_albert.tasks.fill_mask.features import (
    MaskedTextEncoder,
    mask_positions_graph,
    pack_texts_graph,
)
from keras_albert.tasks.fill_mask.model import masked_lm_from
from keras_albert.tasks.fill_mask.predict import check_top_k

WARMUP_TEXTS = (
    "The capital of France is [MASK].",
    "[MASK] [MASK] went to the market on Monday.",
    "A text without a mask.",
)


class FillMaskServingModule(TaskServingModule):
    """Serving endpoints of an `AlbertMaskedLM` (see the module docstring).

    Args:
        model: an `AlbertMaskedLM`, or an `AlbertPretrainer` (its masked-LM head is served).
        tokenizer: its `AlbertTokenizer`.
        max_sequence_length: the longest packed text; default the model's limit.
        top_k: tokens per mask (`keras_albert.tasks.fill_mask.defaults.TOP_K`).
    """

    task = "fill_mask"

    def __init__(self, model, tokenizer, max_sequence_length=None, top_k=defaults.TOP_K):
        model = masked_lm_from(model)
        super().__init__(model, tokenizer, max_sequence_length)
        check_top_k(top_k, model.backbone.albert_config.vocabulary_size)
        self.top_k = top_k
        self.encoder = MaskedTextEncoder(tokenizer)
        self.pieces = tuple(tokenizer.id_to_piece(i) for i in range(tokenizer.vocabulary_size))
        self._finish()

    def _build_endpoints(self) -> dict:
        return self.text_endpoints(self.fill)

    def pack(self, text: tf.Tensor) -> dict:
        """`[CLS] text [SEP]` token inputs of a `[batch]` string tensor, padded to the longest;
        an InvalidArgumentError naming the length when a text is too long (`pack_texts_graph`,
        the preprocessor's too)."""
        return pack_texts_graph(self.encoder, text, self.max_sequence_length, SERVING_DEFAULT)

    def predict(self, inputs: dict) -> dict:
        """The top-k tokens at the mask ids of packed token inputs (padded as documented)."""
        positions, num_masks = mask_positions_graph(
            inputs["token_ids"], inputs["padding_mask"], self.encoder.mask_id
        )  # (batch, max_masks), (batch,)
        logits = tf.cast(self.call_model({**inputs, "mask_positions": positions}), tf.float32)
        probabilities, token_ids = tf.math.top_k(tf.nn.softmax(logits, axis=-1), self.top_k)
        valid = tf.sequence_mask(num_masks, tf.shape(positions)[1])  # (batch, max_masks)
        candidate = tf.broadcast_to(valid[..., tf.newaxis], tf.shape(token_ids))
        return {
            "token_ids": tf.where(candidate, token_ids, -1),
            "tokens": tf.where(candidate, tf.gather(tf.constant(self.pieces), token_ids), ""),
            "probabilities": tf.where(candidate, probabilities, 0.0),
            "mask_positions": tf.where(valid, positions, -1),
            "num_masks": num_masks,
        }

    def fill(self, text: tf.Tensor) -> dict:
        outputs = self.predict(self.pack(text))
        texts = self.encoder.filled_texts_graph(text, outputs["tokens"])
        return {
            "token_ids": outputs["token_ids"],
            "tokens": outputs["tokens"],
            "probabilities": outputs["probabilities"],
            "texts": tf.where(tf.not_equal(outputs["token_ids"], -1), texts, ""),
            "num_masks": outputs["num_masks"],
        }

    def token_outputs(self, inputs: dict) -> dict:
        return self.predict(inputs)

    def warmup_inputs(self) -> list[tuple[str, dict]]:
        # The longest warmup text fills max_sequence_length with words after one mask.
        per_word = max(len(self.encoder.encode("word")), 1)
        words = (self.max_sequence_length - 3) // per_word
        texts = list(WARMUP_TEXTS) + ["[MASK] " + " ".join(["word"] * words)]
        return self.text_warmup_inputs(texts)
