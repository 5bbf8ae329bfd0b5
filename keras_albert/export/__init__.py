"""SavedModel export for TF Serving: string-in endpoints, versioned layout, warmup, configs."""

from keras_albert.export.modules import (
    MultipleChoiceServingModule,
    QuestionAnsweringServingModule,
    TokenClassificationServingModule,
    export_saved_model,
    serving_module,
)
from keras_albert.export.saved_model import AlbertServingModule
from keras_albert.export.serving_layout import (
    BatchingParameters,
    export_checkpoint,
    export_for_serving,
    next_version,
    write_version,
)

__all__ = [
    "AlbertServingModule",
    "BatchingParameters",
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
