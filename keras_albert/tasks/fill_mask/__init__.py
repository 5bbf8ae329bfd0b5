"""Fill-mask: text with one or more `[MASK]` in, per mask the most probable tokens out, as Hugging
Face's `pipeline("fill-mask")`; the first use of a pretrained (or converted) checkpoint.

`model.py` (`AlbertMaskedLM`, the model), `defaults.py` (every default), `features.py` (the
masked text → token ids and the filled texts, in Python and in the graph), `predict.py`
(`fill_mask`, the Python API), `options.py` (the export options), `serving.py`
(`FillMaskServingModule`, the string-in SavedModel) and `task_type.py` (the `TASK_TYPE` record).
"""
