"""Only `pretraining/data/records.py` (and the `convert/` tables) spell the original record names.

`export/tfhub.py` is exempt too: it speaks Model Garden's TF-Hub interface, whose input names
(`input_mask`, `masked_lm_positions`) are a foreign format's, as the `convert/` tables'.

The original ALBERT TFRecords name their features `input_ids`, `input_mask`,
`masked_lm_positions`, ...; everything past the schema module speaks our names (`token_ids`,
`padding_mask`, `mask_positions`, `sentence_order_label`). `segment_ids` and `token_boundary`
are our names too and are not checked.
"""

import os
import pathlib
import re

PACKAGE = os.path.join(pathlib.Path(__file__).resolve().parents[3], "keras_albert")
ORIGINAL_NAMES = (
    "input_ids",
    "input_mask",
    "masked_lm_positions",
    "masked_lm_ids",
    "masked_lm_weights",
    "next_sentence_labels",
)
SCHEMA = os.path.join("pretraining", "data", "records.py")
EXEMPT_FOLDERS = ("convert",)
EXEMPT_MODULES = (os.path.join("export", "tfhub.py"),)


def modules():
    for root, _, names in os.walk(PACKAGE):
        for name in sorted(names):
            if name.endswith(".py"):
                path = os.path.join(root, name)
                yield os.path.relpath(path, PACKAGE), path


def test_original_feature_names_are_spelled_only_in_the_schema_module():
    pattern = re.compile(r"\b(" + "|".join(ORIGINAL_NAMES) + r")\b")
    offenders = {}
    for relative, path in modules():
        if relative in (SCHEMA, *EXEMPT_MODULES) or relative.split(os.sep)[0] in EXEMPT_FOLDERS:
            continue
        with open(path, encoding="utf-8") as handle:
            found = sorted(set(pattern.findall(handle.read())))
        if found:
            offenders[relative] = found
    assert offenders == {}


def test_the_schema_module_spells_every_original_name():
    with open(os.path.join(PACKAGE, SCHEMA), encoding="utf-8") as handle:
        text = handle.read()
    assert [name for name in ORIGINAL_NAMES if f'"{name}"' not in text] == []
