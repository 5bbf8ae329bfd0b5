"""A tokenizer factory for the Beam pipeline that records, in a file named by the process id,
which heavy modules the process that builds the tokenizer (a Beam worker) has imported."""

import json
import os
import sys

from keras_albert.text.python_tokenizer import PythonTokenizer

HEAVY_MODULES = ("tensorflow", "tensorflow_text", "keras")


def reporting_tokenizer(report_dir: str, **kwargs) -> PythonTokenizer:
    tokenizer = PythonTokenizer(**kwargs)
    loaded = {name: name in sys.modules for name in HEAVY_MODULES}
    with open(os.path.join(report_dir, f"{os.getpid()}.json"), "w") as handle:
        json.dump(loaded, handle)
    return tokenizer
