"""Run as `python fill_mask_without_tensorflow_run.py WORK_DIR MODEL TEXTS_JSON` without
TensorFlow and KERAS_BACKEND=jax: loads the `.keras` `AlbertMaskedLM` MODEL with its
preprocessor (the tokenizer's Python path) and prints, as one JSON object, whether TensorFlow
was loaded and the logits of `predict` on the texts."""

import json
import sys

import keras
import numpy as np

import keras_albert  # noqa: F401 (registers the models and the preprocessors)
from keras_albert.tasks.fill_mask.preprocessor import AlbertMaskedLMPreprocessor

model = keras.saving.load_model(sys.argv[2])
texts = json.loads(sys.argv[3])
assert isinstance(model.preprocessor, AlbertMaskedLMPreprocessor)
logits = model.predict(texts, batch_size=2, verbose=0)
print(
    json.dumps(
        {
            "tensorflow_loaded": sys.modules.get("tensorflow") is not None,
            "tokenizer": type(model.preprocessor.tokenizer).__name__,
            "mask_positions": model.preprocessor(texts)["mask_positions"].tolist(),
            "logits": np.asarray(logits, "float64").tolist(),
        }
    )
)
