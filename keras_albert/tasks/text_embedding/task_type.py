"""The text-embedding task type's record (`keras_albert.tasks.task_type.TaskType`)."""

from keras_albert.tasks.task_type import CheckpointFormat, TaskType
from keras_albert.tasks.text_embedding import defaults
from keras_albert.tasks.text_embedding.model import AlbertTextEmbedder
from keras_albert.tasks.text_embedding.options import TextEmbeddingOptions

TASK_TYPE = TaskType(
    name="text_embedding",
    description="one vector per text (sentence embeddings), as sentence-transformers models",
    model_class=AlbertTextEmbedder,
    build_model=lambda backbone, num_classes, **head: AlbertTextEmbedder(backbone, **head),
    defaults=defaults,
    datasets=("stsb_embedding", "sentence_pairs"),
    options=TextEmbeddingOptions,
    finetuning_task="keras_albert.tasks.text_embedding.task:TextEmbeddingTask",
    serving_module="keras_albert.tasks.text_embedding.serving:TextEmbeddingServingModule",
    checkpoint_format=CheckpointFormat(
        name="sentence_transformers",
        read_head="keras_albert.tasks.text_embedding.sentence_transformers:read_head",
        head_files="keras_albert.tasks.text_embedding.sentence_transformers:head_files",
    ),
    preprocessor=("keras_albert.tasks.text_embedding.preprocessor:AlbertTextEmbedderPreprocessor"),
)
