"""Fill-mask's defaults, written once: the Python API, the export options and the serving module
read them from here (imports nothing)."""

# Tokens proposed per mask (Hugging Face's fill-mask pipeline gives 5).
TOP_K = 5
# Texts per model call of `fill_mask` (the Python API).
BATCH_SIZE = 32
# Masks a text may hold in `AlbertMaskedLM.predict` on texts (the preprocessor's
# `mask_selection_length`, keras-hub's name): every text's output is this many rows of
# `vocabulary_size` logits (about 1 MB a text for a 30,000-piece vocabulary).
MASK_SELECTION_LENGTH = 8
