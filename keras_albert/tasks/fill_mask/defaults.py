"""Fill-mask's defaults, written once: the Python API, the export options and the serving module
read them from here (imports nothing)."""

# Tokens proposed per mask (Hugging Face's fill-mask pipeline gives 5).
TOP_K = 5
# Texts per model call of `fill_mask` (the Python API).
BATCH_SIZE = 32
