"""The question-answering task type's record (`keras_albert.tasks.task_type.TaskType`)."""

from keras_albert.tasks.question_answering import defaults
from keras_albert.tasks.question_answering.model import AlbertQuestionAnswerer
from keras_albert.tasks.question_answering.options import (
    QuestionAnsweringOptions,
    QuestionAnsweringServingOptions,
)
from keras_albert.tasks.task_type import CheckpointNames, ForeignHead, TaskType

# (our AnswerClassHead sublayer, its variable scope in the original `squad_utils.create_v2_model`)
_ANSWER_CLASS_DENSE = (
    ("start_logits_dense", "start_logits/dense"),
    ("end_logits_dense_0", "end_logits/dense_0"),
    ("end_logits_dense_1", "end_logits/dense_1"),
    ("answer_class_dense_0", "answer_class/dense_0"),
)

# The null-span head's names in Hugging Face's `AlbertForQuestionAnswering` (no pooler) and the
# original `run_squad_v1` (`cls/squad/output_weights` [2, H]: row 0 scores starts, row 1 ends,
# multiplied with transpose_b=True); `run_squad_v2`'s answer-class head (its LayerNorm is TF1
# contrib's, `LayerNorm/gamma`, `LayerNorm/beta`).
CHECKPOINT_NAMES = CheckpointNames(
    hf_architecture="AlbertForQuestionAnswering",
    hf_head=ForeignHead(
        (
            ("span_logits/kernel", "qa_outputs.weight", True),
            ("span_logits/bias", "qa_outputs.bias", False),
        ),
        options={"answerability": "null_span"},
    ),
    hf_pooler=False,
    hf_config=lambda model: {"num_labels": 2},  # qa_outputs: start and end
    tf1_heads=(
        ForeignHead(
            (
                ("span_logits/kernel", "cls/squad/output_weights", True),
                ("span_logits/bias", "cls/squad/output_bias", False),
            ),
            options={"answerability": "null_span"},
        ),
        ForeignHead(
            (
                (
                    "answer_class_head/answer_class_dense_1/kernel",
                    "answer_class/dense_1/kernel",
                    False,
                ),
                *(
                    (f"answer_class_head/{ours}/{variable}", f"{theirs}/{variable}", False)
                    for ours, theirs in _ANSWER_CLASS_DENSE
                    for variable in ("kernel", "bias")
                ),
                (
                    "answer_class_head/end_logits_layer_norm/gamma",
                    "end_logits/LayerNorm/gamma",
                    False,
                ),
                (
                    "answer_class_head/end_logits_layer_norm/beta",
                    "end_logits/LayerNorm/beta",
                    False,
                ),
            ),
            options={"answerability": "answer_class"},
        ),
    ),
)

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
    checkpoint_names=CHECKPOINT_NAMES,
    preprocessor="keras_albert.tasks.question_answering.preprocessor:AlbertQuestionAnswererPreprocessor",
)
