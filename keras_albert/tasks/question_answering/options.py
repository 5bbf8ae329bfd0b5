"""The question-answering task type's own options: `QuestionAnsweringOptions` (fine-tuning)
and `QuestionAnsweringServingOptions` (the export). Defaults from `defaults.py`."""

from __future__ import annotations

import dataclasses

from keras_albert.cli import parse_float_or_none
from keras_albert.tasks.question_answering import defaults
from keras_albert.tasks.question_answering.model import ANSWERABILITY
from keras_albert.validation import require_number, require_one_of, require_positive_int


@dataclasses.dataclass(frozen=True)
class QuestionAnsweringOptions:
    """A SQuAD fine-tuning's own options (`--dataset squad_v1` or `squad_v2`).

    Args:
        answerability: squad_v2: "null_span" (the [CLS] span scores "no answer") or
            "answer_class" (the original ALBERT v2 head); squad_v1 is always "null_span".
        doc_stride: context tokens between the starts of successive windows.
        max_query_length: question tokens kept.
        max_answer_length: the longest answer span, in tokens.
    """

    answerability: str = dataclasses.field(
        default=defaults.ANSWERABILITY, metadata={"aliases": ("--squad-answerability",)}
    )
    doc_stride: int = defaults.DOC_STRIDE
    max_query_length: int = defaults.MAX_QUERY_LENGTH
    max_answer_length: int = defaults.MAX_ANSWER_LENGTH

    def __post_init__(self):
        require_one_of("answerability", self.answerability, ANSWERABILITY)
        for name in ("doc_stride", "max_query_length", "max_answer_length"):
            require_positive_int(name, getattr(self, name))


@dataclasses.dataclass(frozen=True)
class QuestionAnsweringServingOptions:
    """The question-answering export's own options.

    Args:
        doc_stride: context tokens between window starts.
        max_query_length: question tokens kept.
        n_best_size: starts and ends considered per window.
        max_answer_length: longest answer, in tokens.
        null_score_threshold: answer "" when null_odds exceeds it (the threshold fine-tuning
            evaluates SQuAD v2.0 with); "none": always the best span (a SQuAD v1.1 model).
    """

    doc_stride: int = defaults.DOC_STRIDE
    max_query_length: int = defaults.MAX_QUERY_LENGTH
    n_best_size: int = defaults.N_BEST_SIZE
    max_answer_length: int = defaults.MAX_ANSWER_LENGTH
    null_score_threshold: float | None = dataclasses.field(
        default=defaults.NULL_SCORE_THRESHOLD, metadata={"parse": parse_float_or_none}
    )

    def __post_init__(self):
        for name in ("doc_stride", "max_query_length", "n_best_size", "max_answer_length"):
            require_positive_int(name, getattr(self, name))
        require_number("null_score_threshold", self.null_score_threshold, optional=True)
