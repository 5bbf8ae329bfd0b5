"""The fill-mask task type's record (see `keras_albert.tasks.task_type`)."""

from keras_albert.models import AlbertPretrainer
from keras_albert.tasks.fill_mask import defaults
from keras_albert.tasks.fill_mask.model import AlbertMaskedLM, masked_lm_from
from keras_albert.tasks.fill_mask.options import FillMaskServingOptions
from keras_albert.tasks.task_type import TaskType

TASK_TYPE = TaskType(
    name="fill_mask",
    description="the most probable tokens for each [MASK] of a text (a masked LM, not fine-tuned)",
    model_class=AlbertMaskedLM,
    build_model=lambda backbone, num_classes, **head: AlbertMaskedLM(backbone, **head),
    # A pretrainer's masked LM keeps the pretrainer's head (weights shared, not copied).
    from_model=lambda model: masked_lm_from(model) if isinstance(model, AlbertPretrainer) else None,
    defaults=defaults,
    serving_module="keras_albert.tasks.fill_mask.serving:FillMaskServingModule",
    export_options=FillMaskServingOptions,
    preprocessor="keras_albert.tasks.fill_mask.preprocessor:AlbertMaskedLMPreprocessor",
)
