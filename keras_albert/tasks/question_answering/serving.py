"""The question-answering SavedModel: (question, context) strings in, the answer text out.

Signatures of `QuestionAnsweringServingModule` (an `AlbertQuestionAnswerer`):

- `serving_default`: `question`, `context` (`tf.string [batch]`) →
  `answer` (`string [batch]`, an exact substring of the caller's context), `answer_start`,
  `answer_end` (`int32 [batch]`, character offsets into the context: code points, i.e. Python
  `str` indices), `score` (`float32`, the best span's score: start + end logit, or start +
  end log-prob for the answer-class head), `null_odds` (`float32`: null score − best span
  score, or the smallest `cls_logits` of the answer-class head) and `no_answer_probability`
  (`float32`, sigmoid of `null_odds`).
- `serve_token_ids`: packed windows `token_ids`, `segment_ids`, `padding_mask`
  (`int32 [windows, seq]`) → `start_logits`, `end_logits` (null span) or the answer-class
  head's outputs.

In the graph, as `keras_albert.tasks.question_answering.features` + `postprocess` do in Python: the
context is tokenized with character offsets (`text.offsets`), the question cut to `max_query_length`
tokens, the context cut into windows `[CLS] question [SEP] window [SEP]` of at most
`max_sequence_length` tokens, `doc_stride` tokens apart; each window's max-context flags are
computed; then the `n_best_size` best starts × ends per window, kept when both are context
tokens, start ≤ end, at most `max_answer_length` tokens, the start's max-context window and the
text not empty, and the best over all windows of the question wins (ties: the earlier window,
then the better start, then the better end, as Python's stable sort). A question without any
valid span gets `answer` "", offsets 0, `score` -inf, `null_odds` +inf. With
`null_score_threshold`, a question whose `null_odds` exceeds it gets `answer` "" (offsets 0).
"""

from __future__ import annotations

import tensorflow as tf

from keras_albert.serving.saved_model import SERVE_TOKEN_IDS, SERVING_DEFAULT
from keras_albert.serving.task_serving import (
    TaskServingModule,
    concrete,
    same_batch_size,
    string_spec,
    token_specs,
)
from keras_albert.tasks.question_answering import defaults as squad_defaults
from keras_albert.tasks.question_answering.model import AlbertQuestionAnswerer
from keras_albert.tasks.question_answering.windows import offsets_sentencepiece, question_windows
from keras_albert.text.offsets import trimmed_span
from keras_albert.validation import require_number, require_positive_int

WARMUP_EXAMPLES = (
    ("Who wrote it?", "The book was written by Jane Austen in 1813."),
    ("", ""),
)


class QuestionAnsweringServingModule(TaskServingModule):
    """Serving endpoints of an `AlbertQuestionAnswerer` (see the module docstring).

    Args:
        model: an `AlbertQuestionAnswerer`.
        tokenizer: its `AlbertTokenizer`.
        max_sequence_length: window length; default the model's limit.
        doc_stride: context tokens between window starts.
        max_query_length: question tokens kept.
        n_best_size: starts and ends considered per window.
        max_answer_length: longest answer in tokens.
        null_score_threshold: answer "" when `null_odds` exceeds it (the default is the one
            fine-tuning evaluates and picks `best.keras` with); None: always the best span
            (for a SQuAD v1.1 model, which never learned to abstain).

    The defaults are SQuAD's (`keras_albert.tasks.question_answering.defaults`).
    """

    task = "question_answering"

    def __init__(
        self,
        model,
        tokenizer,
        max_sequence_length=None,
        doc_stride=squad_defaults.DOC_STRIDE,
        max_query_length=squad_defaults.MAX_QUERY_LENGTH,
        n_best_size=squad_defaults.N_BEST_SIZE,
        max_answer_length=squad_defaults.MAX_ANSWER_LENGTH,
        null_score_threshold=squad_defaults.NULL_SCORE_THRESHOLD,
    ):
        if not isinstance(model, AlbertQuestionAnswerer):
            raise TypeError(
                f"`model` must be an AlbertQuestionAnswerer. Received: model={type(model).__name__}"
            )
        super().__init__(model, tokenizer, max_sequence_length)
        for name, value in (
            ("doc_stride", doc_stride),
            ("max_query_length", max_query_length),
            ("n_best_size", n_best_size),
            ("max_answer_length", max_answer_length),
        ):
            require_positive_int(name, value)
        if null_score_threshold is not None:
            require_number("null_score_threshold", null_score_threshold)
        if self.max_sequence_length < max_query_length + 4:
            raise ValueError(
                "`max_sequence_length` must leave room for [CLS], the question, two [SEP] and "
                f"one context token: at least max_query_length + 4 = {max_query_length + 4}. "
                f"Received: max_sequence_length={self.max_sequence_length}"
            )
        self.doc_stride = doc_stride
        self.max_query_length = max_query_length
        self.n_best_size = n_best_size
        self.max_answer_length = max_answer_length
        self.null_score_threshold = null_score_threshold
        self.answer_class = model.answerability == "answer_class"
        # Narrowest window the answer-class head's top-k needs.
        self._min_width = (
            max(model.num_start_candidates, model.num_end_candidates) if self.answer_class else 2
        )
        if self._min_width > self.max_sequence_length:
            raise ValueError(
                "`max_sequence_length` must be at least the head's candidates "
                f"({self._min_width}). Received: max_sequence_length={self.max_sequence_length}"
            )
        self.offsets_sentencepiece = offsets_sentencepiece(tokenizer)
        self._finish()

    # ----------------------------------------------------------------------------------------

    def _build_endpoints(self) -> dict:
        def serve_text(question, context):
            inputs = same_batch_size(SERVING_DEFAULT, question=question, context=context)
            return self.answer(**inputs)

        def serve_token_ids(token_ids, segment_ids, padding_mask):
            inputs = self.checked_token_inputs(token_ids, segment_ids, padding_mask)
            return self.token_outputs(inputs)

        return {
            SERVING_DEFAULT: concrete(
                serve_text, question=string_spec(None), context=string_spec(None)
            ),
            SERVE_TOKEN_IDS: concrete(serve_token_ids, **token_specs()),
        }

    def token_outputs(self, inputs: dict) -> dict:
        outputs = self.call_model(inputs)
        return {name: value for name, value in outputs.items()}

    def windows(self, question: tf.Tensor, context: tf.Tensor) -> dict:
        """The packed windows of `[batch]` questions and contexts, with their bookkeeping
        (`keras_albert.tasks.question_answering.windows.question_windows`)."""
        return question_windows(
            self.tokenizer,
            self.offsets_sentencepiece,
            question,
            context,
            sequence_length=self.max_sequence_length,
            doc_stride=self.doc_stride,
            max_query_length=self.max_query_length,
            min_width=self._min_width,
        )

    def answer(self, question: tf.Tensor, context: tf.Tensor) -> dict:
        """`serving_default`'s outputs for `[batch]` questions and contexts."""
        windows = self.windows(question, context)
        outputs = self.token_outputs(windows["inputs"])
        batch_size = tf.size(question, tf.int64)
        example = windows["example"]
        if self.answer_class:
            starts = tf.cast(outputs["start_top_index"], tf.int64)  # (F, k1)
            ends = tf.cast(outputs["end_top_index"], tf.int64)  # (F, k1 * k2)
            num_ends = self.model.num_end_candidates
            start = tf.repeat(starts, num_ends, axis=1)  # (F, k1 * k2), row i * k2 + j
            end = ends
            start_score = tf.repeat(outputs["start_top_log_probs"], num_ends, axis=1)
            end_score = outputs["end_top_log_probs"]
            null = tf.math.unsorted_segment_min(
                tf.cast(outputs["cls_logits"], tf.float64), example, batch_size
            )
        else:
            start_logits, end_logits = outputs["start_logits"], outputs["end_logits"]
            k = tf.minimum(self.n_best_size, tf.shape(start_logits)[1])
            top_start = tf.math.top_k(start_logits, k)
            top_end = tf.math.top_k(end_logits, k)
            # Pairs in Python's order: start rank, then end rank.
            start = tf.repeat(tf.cast(top_start.indices, tf.int64), k, axis=1)  # (F, k * k)
            end = tf.tile(tf.cast(top_end.indices, tf.int64), [1, k])
            start_score = tf.repeat(top_start.values, k, axis=1)
            end_score = tf.tile(top_end.values, [1, k])
            window_null = tf.cast(start_logits[:, 0] + end_logits[:, 0], tf.float64)
            null = tf.math.unsorted_segment_min(window_null, example, batch_size)

        token_starts = tf.gather(windows["token_starts"], start, batch_dims=1)
        token_ends = tf.gather(windows["token_ends"], end, batch_dims=1)
        end_is_context = tf.gather(windows["token_starts"], end, batch_dims=1) >= 0
        max_context = tf.gather(windows["max_context"], start, batch_dims=1)
        valid = (
            (token_starts >= 0)
            & end_is_context
            & max_context
            & (end >= start)
            & (end - start + 1 <= self.max_answer_length)
        )
        tokens = windows["tokens"]
        row_base = tf.gather(tokens["row_starts"], example)[:, tf.newaxis]
        non_space = tf.where(~tokens["is_space"])[:, 0]
        begin, stop, nonempty = trimmed_span(
            non_space, token_starts + row_base, tf.maximum(token_ends, token_starts) + row_base
        )
        valid &= nonempty
        score = tf.cast(start_score, tf.float64) + tf.cast(end_score, tf.float64)
        score = tf.where(valid, score, tf.constant(-float("inf"), tf.float64))

        # The best valid pair of each question; ties go to the first in (window, pair) order.
        pairs = tf.shape(score, out_type=tf.int64)[1]
        flat_score = tf.reshape(score, [-1])
        flat_example = tf.repeat(example, pairs)
        best_score = tf.math.unsorted_segment_max(flat_score, flat_example, batch_size)
        order = tf.range(tf.size(flat_score, tf.int64))
        is_best = tf.reshape(valid, [-1]) & (flat_score == tf.gather(best_score, flat_example))
        chosen = tf.math.unsorted_segment_min(
            tf.where(is_best, order, tf.int64.max), flat_example, batch_size
        )
        found = chosen < tf.int64.max
        safe = tf.where(found, chosen, 0)

        def pick(values):
            flat = tf.reshape(values - row_base, [-1])
            return tf.where(found, tf.gather(tf.concat([flat, [0]], 0), safe), 0)

        answer_start, answer_end = pick(begin), pick(stop)
        best_score = tf.where(found, best_score, -float("inf"))
        if self.answer_class:
            null_odds = null  # the smallest answerability logit, as the original
        else:
            null_odds = tf.where(found, null - best_score, float("inf"))
        if self.null_score_threshold is not None:
            answered = null_odds <= self.null_score_threshold
            answer_start = tf.where(answered, answer_start, 0)
            answer_end = tf.where(answered, answer_end, 0)
        text = tokens["text"]
        answer = tf.strings.substr(
            text,
            tf.cast(answer_start, tf.int32),
            tf.cast(answer_end - answer_start, tf.int32),
            unit="UTF8_CHAR",
        )
        return {
            "answer": answer,
            "answer_start": tf.cast(answer_start, tf.int32),
            "answer_end": tf.cast(answer_end, tf.int32),
            "score": tf.cast(best_score, tf.float32),
            "null_odds": tf.cast(null_odds, tf.float32),
            "no_answer_probability": tf.cast(tf.sigmoid(null_odds), tf.float32),
        }

    def warmup_inputs(self) -> list[tuple[str, dict]]:
        long_context = " ".join(["word"] * (2 * self.max_sequence_length))
        examples = list(WARMUP_EXAMPLES) + [("which word?", long_context)]
        result = []
        for batch_size in (1, 2, 4, 8):
            rows = [examples[i % len(examples)] for i in range(batch_size)]
            inputs = {
                "question": tf.constant([q for q, _ in rows]).numpy(),
                "context": tf.constant([c for _, c in rows]).numpy(),
            }
            result.append((SERVING_DEFAULT, inputs))
            packed = self.windows(tf.constant(inputs["question"]), tf.constant(inputs["context"]))
            result.append((SERVE_TOKEN_IDS, {k: v.numpy() for k, v in packed["inputs"].items()}))
        return result
