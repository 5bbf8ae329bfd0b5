"""The token-classification task type's record (`keras_albert.tasks.task_type.TaskType`)."""

from keras_albert.models import AlbertTokenClassifier
from keras_albert.tasks.task_type import TaskType
from keras_albert.tasks.token_classification import defaults

TASK_TYPE = TaskType(
    name="token_classification",
    description="a tag per word, e.g. named entities: CoNLL files (WNUT 2017, CoNLL-2003)",
    model_class=AlbertTokenClassifier,
    build_model=lambda backbone, num_classes, **head: AlbertTokenClassifier(
        backbone, num_labels=num_classes, **head
    ),
    count="num_labels",
    defaults=defaults,
    datasets=("ner",),
    finetuning_task="keras_albert.tasks.token_classification.task:TokenClassificationTask",
    serving_module=(
        "keras_albert.tasks.token_classification.serving:TokenClassificationServingModule"
    ),
    preprocessor=(
        "keras_albert.tasks.token_classification.preprocessor:AlbertTokenClassifierPreprocessor"
    ),
)
