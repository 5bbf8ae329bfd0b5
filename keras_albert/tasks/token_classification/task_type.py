"""The token-classification task type's record (`keras_albert.tasks.task_type.TaskType`)."""

from keras_albert.tasks.task_type import CheckpointNames, ForeignHead, TaskType
from keras_albert.tasks.token_classification import defaults
from keras_albert.tasks.token_classification.model import AlbertTokenClassifier


def _hf_config(model: AlbertTokenClassifier) -> dict:
    fields = {"num_labels": model.num_classes, "classifier_dropout_prob": model.dropout}
    if model.labels is not None:
        fields["id2label"] = dict(enumerate(model.labels))
        fields["label2id"] = {label: i for i, label in enumerate(model.labels)}
    return fields


def _hf_head_options(hf_config: dict) -> dict:
    """The tag `labels` of a Hugging Face config (`id2label`), unless they are HF's `LABEL_<i>`."""
    id2label = hf_config.get("id2label")
    if not id2label:
        return {}
    labels = [id2label.get(str(i), id2label.get(i)) for i in range(len(id2label))]
    if any(label is None for label in labels) or labels == [
        f"LABEL_{i}" for i in range(len(labels))
    ]:
        return {}
    return {"labels": labels}


# The head's names in Hugging Face's `AlbertForTokenClassification` (no pooler); the original
# code has no token classification head, nor keras-hub.
CHECKPOINT_NAMES = CheckpointNames(
    hf_architecture="AlbertForTokenClassification",
    hf_head=ForeignHead(
        (("logits/kernel", "classifier.weight", True), ("logits/bias", "classifier.bias", False))
    ),
    hf_pooler=False,
    hf_config=_hf_config,
    hf_head_options=_hf_head_options,
)

TASK_TYPE = TaskType(
    name="token_classification",
    description="a tag per word, e.g. named entities: CoNLL files (WNUT 2017, CoNLL-2003)",
    model_class=AlbertTokenClassifier,
    build_model=lambda backbone, num_classes, **head: AlbertTokenClassifier(
        backbone, num_classes=num_classes, **head
    ),
    count="num_classes",
    defaults=defaults,
    datasets=("ner",),
    finetuning_task="keras_albert.tasks.token_classification.task:TokenClassificationTask",
    serving_module=(
        "keras_albert.tasks.token_classification.serving:TokenClassificationServingModule"
    ),
    checkpoint_names=CHECKPOINT_NAMES,
    preprocessor=(
        "keras_albert.tasks.token_classification.preprocessor:AlbertTokenClassifierPreprocessor"
    ),
)
