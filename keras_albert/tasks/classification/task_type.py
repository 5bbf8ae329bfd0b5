"""The classification task type's record (`keras_albert.tasks.task_type.TaskType`)."""

from keras_albert.tasks.classification import defaults
from keras_albert.tasks.classification.model import AlbertClassifier
from keras_albert.tasks.classification.options import ClassificationOptions
from keras_albert.tasks.classification.specs import TASKS
from keras_albert.tasks.task_type import CheckpointNames, ForeignHead, TaskType


def _hf_config(model: AlbertClassifier) -> dict:
    fields = {"num_labels": model.num_classes, "classifier_dropout_prob": model.dropout}
    if model.num_classes == 1:
        fields["problem_type"] = "regression"
    return fields


# The head's names in Hugging Face's `AlbertForSequenceClassification`, the original
# `run_classifier` (`output_weights` [num_classes, H], multiplied with transpose_b=True) and
# keras-hub's `AlbertTextClassifier`.
CHECKPOINT_NAMES = CheckpointNames(
    hf_architecture="AlbertForSequenceClassification",
    hf_head=ForeignHead(
        (("logits/kernel", "classifier.weight", True), ("logits/bias", "classifier.bias", False))
    ),
    hf_config=_hf_config,
    tf1_heads=(
        ForeignHead(
            (("logits/kernel", "output_weights", True), ("logits/bias", "output_bias", False))
        ),
    ),
    keras_hub_class="AlbertTextClassifier",
    keras_hub_head=ForeignHead(
        (("logits/kernel", "logits/kernel", False), ("logits/bias", "logits/bias", False))
    ),
)

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
    serving_module="keras_albert.tasks.classification.serving:ClassificationServingModule",
    preprocessor="keras_albert.tasks.classification.preprocessor:AlbertClassifierPreprocessor",
    checkpoint_names=CHECKPOINT_NAMES,
)
