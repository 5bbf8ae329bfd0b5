"""The multiple-choice task type's own options: `MultipleChoiceOptions` (fine-tuning) and
`MultipleChoiceServingOptions` (the export). Defaults from `defaults.py`."""

from __future__ import annotations

import dataclasses

from keras_albert.tasks.multiple_choice import defaults
from keras_albert.validation import require_int, require_positive_int


@dataclasses.dataclass(frozen=True)
class MultipleChoiceOptions:
    """A RACE fine-tuning's own options (`--dataset race`).

    Args:
        max_qa_length: tokens of question + option kept (their last ones).
    """

    max_qa_length: int = defaults.MAX_QA_LENGTH

    def __post_init__(self):
        require_positive_int("max_qa_length", self.max_qa_length)


@dataclasses.dataclass(frozen=True)
class MultipleChoiceServingOptions:
    """The multiple-choice export's own options.

    Args:
        num_choices: options per question in a request.
        max_qa_length: the most tokens of the question + option segment.
    """

    num_choices: int = defaults.NUM_CHOICES
    max_qa_length: int = defaults.MAX_QA_LENGTH

    def __post_init__(self):
        require_int("num_choices", self.num_choices, 2)
        require_positive_int("max_qa_length", self.max_qa_length)
