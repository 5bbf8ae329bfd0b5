"""The question-answering task type's record (`keras_albert.tasks.task_type.TaskType`)."""

from keras_albert.models import AlbertQuestionAnswerer
from keras_albert.tasks.question_answering import defaults
from keras_albert.tasks.question_answering.options import (
    QuestionAnsweringOptions,
    QuestionAnsweringServingOptions,
)
from keras_albert.tasks.task_type import TaskType

TASK_TYPE = TaskType(
    name="question_answering",
    description="extractive question answering: SQuAD v1.1 and v2.0",
    model_class=AlbertQuestionAnswerer,
    build_model=lambda backbone, num_classes, **head: AlbertQuestionAnswerer(backbone, **head),
    defaults=defaults,
    datasets=("squad_v1", "squad_v2"),
    options=QuestionAnsweringOptions,
    finetuning_task="keras_albert.tasks.question_answering.task:QuestionAnsweringTask",
    serving_module="keras_albert.tasks.question_answering.serving:QuestionAnsweringServingModule",
    export_options=QuestionAnsweringServingOptions,
    preprocessor="keras_albert.tasks.question_answering.preprocessor:AlbertQuestionAnswererPreprocessor",
)
