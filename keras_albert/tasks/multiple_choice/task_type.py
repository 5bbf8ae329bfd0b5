"""The multiple-choice task type's record (`keras_albert.tasks.task_type.TaskType`)."""

from keras_albert.models import AlbertMultipleChoice
from keras_albert.tasks.multiple_choice import defaults
from keras_albert.tasks.multiple_choice.options import (
    MultipleChoiceOptions,
    MultipleChoiceServingOptions,
)
from keras_albert.tasks.task_type import TaskType

TASK_TYPE = TaskType(
    name="multiple_choice",
    description="reading comprehension with one right option: RACE",
    model_class=AlbertMultipleChoice,
    build_model=lambda backbone, num_classes, **head: AlbertMultipleChoice(backbone, **head),
    defaults=defaults,
    datasets=("race",),
    options=MultipleChoiceOptions,
    finetuning_task="keras_albert.tasks.multiple_choice.task:MultipleChoiceTask",
    serving_module="keras_albert.tasks.multiple_choice.serving:MultipleChoiceServingModule",
    export_options=MultipleChoiceServingOptions,
    preprocessor="keras_albert.tasks.multiple_choice.preprocessor:AlbertMultipleChoicePreprocessor",
)
