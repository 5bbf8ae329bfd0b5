"""SavedModel export for TF Serving: string-in endpoints, versioned layout, warmup, configs;
and TFLite, TF-Hub and ONNX exports.

What an export is, is one `ExportSpec` (`keras_albert.export.spec`); what it starts from, a
model and tokenizer or a `CheckpointSource` (`export_checkpoint`, every format).
"""

from keras_albert.lazy import lazy_names

# Where each public name lives; imported when first used, so that without TensorFlow (every
# export writes a TensorFlow format) `import keras_albert.export` works and a name says in one
# line what it needs. Every task type's serving module (`TaskType.serving_module`) is here,
# typed out because reading `TASK_TYPES` would import the models (Keras):
# tests/test_api.py checks the two agree.
_PUBLIC = {
    "AlbertServingModule": "keras_albert.serving.saved_model",
    "BatchingParameters": "spec",
    "CheckpointSource": "checkpoint",
    "ClassificationServingModule": "keras_albert.tasks.classification.serving",
    "ExportSpec": "spec",
    "FillMaskServingModule": "keras_albert.tasks.fill_mask.serving",
    "MultipleChoiceServingModule": "keras_albert.tasks.multiple_choice.serving",
    "QuestionAnsweringServingModule": "keras_albert.tasks.question_answering.serving",
    "TextEmbeddingServingModule": "keras_albert.tasks.text_embedding.serving",
    "TokenClassificationServingModule": "keras_albert.tasks.token_classification.serving",
    "export_checkpoint": "checkpoint",
    "export_for_serving": "serving_layout",
    "export_onnx": "onnx",
    "export_saved_model": "modules",
    "next_version": "serving_layout",
    "serving_module": "modules",
    "write_version": "serving_layout",
}
__all__ = sorted(_PUBLIC)

__getattr__ = lazy_names(__name__, _PUBLIC)
