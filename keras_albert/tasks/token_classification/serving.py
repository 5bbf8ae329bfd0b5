"""The named-entity SavedModel: a text in, a tag for every word out.

Signatures of `TokenClassificationServingModule` (an `AlbertTokenClassifier`):

- `serving_default`: `text` (`tf.string [batch]`) → per word, padded to the batch's most
  words `max_words`. The words are `keras_albert.text.offsets.words_with_offsets` of the text
  (after invalid UTF-8 became U+FFFD): its whitespace split (Python `str.split()`) for
  SentencePiece; for WordPiece (the Chinese releases) BERT's basic tokenization, the
  whitespace split with every CJK ideograph and every punctuation character a word of its
  own, so that unspaced Chinese is tagged character by character, as the character-per-line
  CoNLL files it is trained on.
  `words` (`string [batch, max_words]`, the text's own substrings; padding ""), `word_start`,
  `word_end` (`int32`, the word's `[start, end)` character span in the text: code points,
  i.e. Python `str` indices; padding -1), `tags` (`string`, the model's label names; padding
  ""), `probabilities` (`float32 [batch, max_words, num_classes]`, softmax at the word's first
  piece; padding 0), and `num_words` (`int32 [batch]`). A word past the packed length (its
  first piece beyond `max_sequence_length - 2`) is tagged "O" with probabilities 0, as the
  evaluation does.
- `serve_token_ids`: `token_ids`, `segment_ids`, `padding_mask` → `logits`
  (`float32 [batch, seq, num_classes]`).

Word → piece alignment is `keras_albert.tasks.token_classification.features.encode_words` (each word
tokenized on its own, its first piece carries its tag), in the graph; the batch is padded to
its longest.
"""

from __future__ import annotations

import tensorflow as tf

from keras_albert.serving.saved_model import SERVE_TOKEN_IDS, SERVING_DEFAULT
from keras_albert.serving.task_serving import (
    TaskServingModule,
)
from keras_albert.tasks.token_classification.features import OUTSIDE, encode_words
from keras_albert.tasks.token_classification.model import AlbertTokenClassifier
from keras_albert.text.offsets import words_with_offsets_graph

WARMUP_TEXTS = ("Jane Austen lived in Bath .", "", "@user loves New York 🗽")


class TokenClassificationServingModule(TaskServingModule):
    """Serving endpoints of an `AlbertTokenClassifier` (see the module docstring).

    Args:
        model: an `AlbertTokenClassifier` (its `labels` name the tags; else "0", "1", ...).
        tokenizer: its `AlbertTokenizer`.
        max_sequence_length: packed length; default the model's limit.
    """

    task = "token_classification"

    def __init__(self, model, tokenizer, max_sequence_length=None):
        if not isinstance(model, AlbertTokenClassifier):
            raise TypeError(
                f"`model` must be an AlbertTokenClassifier. Received: model={type(model).__name__}"
            )
        super().__init__(model, tokenizer, max_sequence_length)
        labels = model.labels or [str(index) for index in range(model.num_classes)]
        self.labels = tuple(labels)
        self._finish()

    def _build_endpoints(self) -> dict:
        return self.text_endpoints(self.tag)

    def token_outputs(self, inputs: dict) -> dict:
        return {"logits": tf.cast(self.call_model(inputs), tf.float32)}  # (batch, seq, tags)

    def pack(self, words: tf.RaggedTensor) -> dict:
        encoded = encode_words(self.tokenizer, words, self.max_sequence_length)
        positions = encoded.pop("word_positions")
        longest = tf.maximum(tf.reduce_max(tf.reduce_sum(encoded["padding_mask"], axis=1)), 2)
        return {name: value[:, :longest] for name, value in encoded.items()}, positions

    def tag(self, text: tf.Tensor) -> dict:
        split = words_with_offsets_graph(self.tokenizer, text)
        inputs, positions = self.pack(split["words"])
        logits = tf.cast(self.call_model(inputs), tf.float32)
        probabilities = tf.nn.softmax(logits, axis=-1)  # (batch, seq, labels)
        flat_positions = positions.flat_values
        kept = flat_positions >= 0
        rows = tf.cast(positions.value_rowids(), tf.int32)
        gathered = tf.gather_nd(
            probabilities, tf.stack([rows, tf.maximum(flat_positions, 0)], axis=1)
        )  # (num_words, labels)
        word_probabilities = tf.where(kept[:, tf.newaxis], gathered, 0.0)
        index = tf.argmax(gathered, axis=-1, output_type=tf.int32)
        names = tf.gather(tf.constant(self.labels), index)
        names = tf.where(kept, names, OUTSIDE)
        return {
            "words": split["words"].to_tensor(""),
            "word_start": tf.cast(split["starts"].to_tensor(-1), tf.int32),
            "word_end": tf.cast(split["ends"].to_tensor(-1), tf.int32),
            "tags": positions.with_flat_values(names).to_tensor(""),
            "probabilities": positions.with_flat_values(word_probabilities).to_tensor(0.0),
            "num_words": tf.cast(positions.row_lengths(), tf.int32),
        }

    def warmup_inputs(self) -> list[tuple[str, dict]]:
        texts = list(WARMUP_TEXTS) + [" ".join(["word"] * self.max_sequence_length)]
        result = []
        for batch_size in (1, 2, 4, 8):
            batch = tf.constant([texts[i % len(texts)] for i in range(batch_size)]).numpy()
            result.append((SERVING_DEFAULT, {"text": batch}))
            words = words_with_offsets_graph(self.tokenizer, tf.constant(batch))["words"]
            inputs, _ = self.pack(words)
            result.append((SERVE_TOKEN_IDS, {k: v.numpy() for k, v in inputs.items()}))
        return result
