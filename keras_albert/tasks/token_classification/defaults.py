"""NER's defaults, written once: the fine-tuning options and the driver read them from here
(imports nothing).

Hugging Face `run_ner`'s recipe (the original ALBERT has no tagging script).
"""

# Packed sentence length.
SEQUENCE_LENGTH = 128
# Learning rate 5e-5, batch 32, 3 epochs, no warmup.
RECIPE = {"learning_rate": 5e-5, "batch_size": 32, "epochs": 3, "warmup_ratio": 0.0}
