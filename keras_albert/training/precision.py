"""What a training run's `precision` may be, for both drivers and their tools.

Stdlib only, so that the option dataclasses and the CLIs can check the value without loading
TensorFlow; `strategy.choose_precision_policy` says what each one means. The precisions a
SavedModel is served in are another list (`keras_albert.export.precision.SERVING_PRECISIONS`).
"""

# None (not listed): the device's default.
PRECISIONS = ("float32", "mixed_bfloat16", "mixed_float16", "auto")
