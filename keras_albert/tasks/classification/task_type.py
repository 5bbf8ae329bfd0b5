"""The classification task type's record (`keras_albert.tasks.task_type.TaskType`)."""

from keras_albert.models import AlbertClassifier
from keras_albert.tasks.classification import defaults
from keras_albert.tasks.classification.options import ClassificationOptions
from keras_albert.tasks.classification.specs import TASKS
from keras_albert.tasks.task_type import TaskType

TASK_TYPE = TaskType(
    name="classification",
    description="sentence (pair) classification or regression: GLUE, or any CSV/TSV file",
    model_class=AlbertClassifier,
    build_model=lambda backbone, num_classes, **head: AlbertClassifier(
        backbone, num_classes=num_classes, **head
    ),
    count="num_classes",
    defaults=defaults,
    datasets=(*(spec.name for spec in TASKS.values()), "generic"),
    options=ClassificationOptions,
    finetuning_task="keras_albert.tasks.classification.task:ClassificationTask",
    serving_module="keras_albert.serving.saved_model:AlbertServingModule",
    preprocessor="keras_albert.tasks.classification.preprocessor:AlbertClassifierPreprocessor",
)
