"""The fill-mask export's own options (`TaskType.export_options`): the arguments of
`FillMaskServingModule` beyond those every export has, one flag each."""

from __future__ import annotations

import dataclasses

from keras_albert.tasks.fill_mask import defaults
from keras_albert.validation import require_positive_int


@dataclasses.dataclass(frozen=True)
class FillMaskServingOptions:
    """Options of `FillMaskServingModule` beyond those every export has.

    Args:
        top_k: tokens proposed per mask (the served outputs' last dimension).
    """

    top_k: int = defaults.TOP_K

    def __post_init__(self):
        require_positive_int("top_k", self.top_k)
