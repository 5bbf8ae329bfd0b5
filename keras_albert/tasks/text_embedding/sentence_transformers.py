"""The sentence-transformers directory, both ways, as far as it is the text embedder's: which
head a directory's `modules.json` and `1_Pooling/config.json` describe (`read_head`), and the
files beside the Hugging Face ALBERT directory that make one (`head_files`).

A sentence-transformers model directory (`SentenceTransformer.save`) is a Hugging Face model
directory (module 0, `Transformer`; `path` "" in `modules.json`: the directory itself) with
its modules listed in `modules.json`: here `Pooling` (`1_Pooling/config.json`: the mode) and,
optionally, `Normalize` (`2_Normalize`). The converters (`keras_albert.convert`) read and
write the Hugging Face part through `TaskType.checkpoint_format`; this module knows only the
sentence-transformers files (plain JSON: no import of sentence-transformers).
"""

from __future__ import annotations

import json
import os

from keras_albert.tasks.text_embedding import defaults

MODULES_FILE = "modules.json"
# The module types as every sentence-transformers release reads them (2.x wrote these names;
# 6.x maps them onto its new modules).
TRANSFORMER = "sentence_transformers.models.Transformer"
POOLING = "sentence_transformers.models.Pooling"
NORMALIZE = "sentence_transformers.models.Normalize"
# The pooling modes as `Pooling`'s legacy config spells them (2.x to 5.x; 6.x converts them).
_LEGACY_MODE_KEYS = {
    "cls": "pooling_mode_cls_token",
    "max": "pooling_mode_max_tokens",
    "mean": "pooling_mode_mean_tokens",
    "mean_sqrt_len_tokens": "pooling_mode_mean_sqrt_len_tokens",
    "weightedmean": "pooling_mode_weightedmean_tokens",
    "lasttoken": "pooling_mode_lasttoken",
}


def _module_kind(module_type: str) -> str:
    # "sentence_transformers.models.Pooling" (2.x) or
    # "sentence_transformers.sentence_transformer.modules.pooling.Pooling" (6.x): the class.
    return module_type.rsplit(".", 1)[-1]


def _pooling_mode(config: dict, path: str) -> str:
    mode = config.get("pooling_mode")
    if mode is None:  # the legacy flags, as sentence-transformers reads them: the first set
        modes = [name for name, key in _LEGACY_MODE_KEYS.items() if config.get(key)]
        mode = modes if len(modes) != 1 else modes[0]
        mode = mode or "mean"
    if isinstance(mode, list) and len(mode) == 1:
        mode = mode[0]
    if mode not in defaults.POOLING_MODES:
        raise ValueError(
            f"`pooling_mode` must be one of {', '.join(defaults.POOLING_MODES)} (one mode) to "
            f"read {path}. Received: pooling_mode={mode!r}"
        )
    return mode


def read_head(directory: str | os.PathLike) -> tuple[str, dict] | None:
    """`(the Hugging Face directory of module 0, the embedder's head options)` of a
    sentence-transformers directory, or None when `directory` is not one (no `modules.json`).

    Raises:
        ValueError: a module list other than Transformer → Pooling (→ Normalize), or a
            pooling mode the embedder does not have; the message names the file.
    """
    directory = os.fspath(directory)
    modules_path = os.path.join(directory, MODULES_FILE)
    if not os.path.isfile(modules_path):
        return None
    with open(modules_path, encoding="utf-8") as file:
        modules = sorted(json.load(file), key=lambda module: module.get("idx", 0))
    kinds = [_module_kind(module.get("type", "")) for module in modules]
    if kinds not in (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"]):
        raise ValueError(
            f"`modules` must be Transformer, Pooling and optionally Normalize to read "
            f"{modules_path} as an AlbertTextEmbedder. Received: modules={kinds}"
        )
    pooling_path = os.path.join(directory, modules[1].get("path", ""), "config.json")
    with open(pooling_path, encoding="utf-8") as file:
        pooling = _pooling_mode(json.load(file), pooling_path)
    transformer = os.path.normpath(os.path.join(directory, modules[0].get("path", "")))
    return transformer, {"pooling": pooling, "normalize": len(kinds) == 3}


def head_files(model, vocabulary: bytes, lowercase: bool, strip_accents: bool) -> dict:
    """The files (relative path → bytes) that make the Hugging Face ALBERT directory of
    `model.backbone` a sentence-transformers directory of `model` (an `AlbertTextEmbedder`):
    the module list, the pooling and normalization modules, the Transformer module's config
    and the Hugging Face tokenizer (the SentencePiece model and its normalization)."""
    config = model.backbone.albert_config
    modules = [{"idx": 0, "name": "0", "path": "", "type": TRANSFORMER}]
    modules.append({"idx": 1, "name": "1", "path": "1_Pooling", "type": POOLING})
    if model.normalize:
        modules.append({"idx": 2, "name": "2", "path": "2_Normalize", "type": NORMALIZE})
    pooling = {"word_embedding_dimension": config.hidden_dim}
    pooling.update({key: mode == model.pooling for mode, key in _LEGACY_MODE_KEYS.items()})
    files = {
        MODULES_FILE: modules,
        "1_Pooling/config.json": pooling,
        "sentence_bert_config.json": {
            "max_seq_length": config.max_sequence_length,
            "do_lower_case": False,  # the tokenizer lowercases (its own `do_lower_case`)
        },
        "config_sentence_transformers.json": {"similarity_fn_name": "cosine"},
        "tokenizer_config.json": {
            "tokenizer_class": "AlbertTokenizer",
            "do_lower_case": lowercase,
            "keep_accents": not strip_accents,
            "model_max_length": config.max_sequence_length,
        },
    }
    if model.normalize:
        files["2_Normalize/config.json"] = {}
    encoded = {path: json.dumps(value, indent=2).encode() for path, value in files.items()}
    return {**encoded, "spiece.model": vocabulary}
