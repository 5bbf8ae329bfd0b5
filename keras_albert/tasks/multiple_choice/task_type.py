"""The multiple-choice task type's record (`keras_albert.tasks.task_type.TaskType`)."""

from keras_albert.tasks.multiple_choice import defaults
from keras_albert.tasks.multiple_choice.model import AlbertMultipleChoice
from keras_albert.tasks.multiple_choice.options import (
    MultipleChoiceOptions,
    MultipleChoiceServingOptions,
)
from keras_albert.tasks.task_type import CheckpointNames, ForeignHead, TaskType

# The head's names in Hugging Face's `AlbertForMultipleChoice` and the original `run_race`
# (`run_classifier`'s names, `output_weights` [1, H]).
CHECKPOINT_NAMES = CheckpointNames(
    hf_architecture="AlbertForMultipleChoice",
    hf_head=ForeignHead(
        (("logits/kernel", "classifier.weight", True), ("logits/bias", "classifier.bias", False))
    ),
    hf_config=lambda model: {"classifier_dropout_prob": model.dropout},
    tf1_heads=(
        ForeignHead(
            (("logits/kernel", "output_weights", True), ("logits/bias", "output_bias", False))
        ),
    ),
)

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
    checkpoint_names=CHECKPOINT_NAMES,
    preprocessor="keras_albert.tasks.multiple_choice.preprocessor:AlbertMultipleChoicePreprocessor",
)
