"""SavedModel export for TF Serving: string-in endpoints, versioned layout, warmup, configs;
and TFLite and TF-Hub exports.

What an export is, is one `ExportSpec` (`keras_albert.export.spec`); what it starts from, a
model and tokenizer or a `CheckpointSource` (`export_checkpoint`, every format).
"""

from keras_albert.export.checkpoint import CheckpointSource, export_checkpoint
from keras_albert.export.modules import export_saved_model, serving_module
from keras_albert.export.serving_layout import export_for_serving, next_version, write_version
from keras_albert.export.spec import BatchingParameters, ExportSpec
from keras_albert.serving.saved_model import AlbertServingModule
from keras_albert.tasks.multiple_choice.serving import MultipleChoiceServingModule
from keras_albert.tasks.question_answering.serving import QuestionAnsweringServingModule
from keras_albert.tasks.token_classification.serving import TokenClassificationServingModule

__all__ = [
    "AlbertServingModule",
    "BatchingParameters",
    "CheckpointSource",
    "ExportSpec",
    "MultipleChoiceServingModule",
    "QuestionAnsweringServingModule",
    "TokenClassificationServingModule",
    "export_checkpoint",
    "export_for_serving",
    "export_saved_model",
    "next_version",
    "serving_module",
    "write_version",
]
