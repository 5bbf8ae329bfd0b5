"""The tokenizer beside a checkpoint: its vocabulary file (`find_vocabulary`,
`require_vocabulary`) and the normalization its run recorded (`resolve_normalization`)."""

import os

from keras_albert.convert.formats import RUN_FILES, detect_format
from keras_albert.convert.hubs import local_source
from keras_albert.convert.keras_hub import find_keras_hub_sentencepiece_model
from keras_albert.text.normalization import NORMALIZATION_DEFAULTS
from keras_albert.training.run_records import read_record, read_run_file
from keras_albert.validation import require_file, require_one_of

# WordPiece vocabularies as releases name them: the original Chinese ALBERT releases',
# Hugging Face's and brightmart/albert_zh's (and fine-tuning's copy of a WordPiece vocabulary).
WORDPIECE_VOCABULARY_NAMES = ("vocab_chinese.txt", "vocab.txt")


def find_vocabulary(source: str | os.PathLike | None) -> str | None:
    """The tokenizer's vocabulary file of a checkpoint, or `None`: the one named by the
    `run.json` beside it (`vocabulary`, or the older `sentencepiece_model`) where that file
    exists, else the only
    `*.model` file beside it (a release's `30k-clean.model`, HF's `spiece.model`, fine-tuning's
    `tokenizer.model`), else a WordPiece vocabulary beside it (`WORDPIECE_VOCABULARY_NAMES`:
    a Chinese release's `vocab_chinese.txt`, an HF directory's `vocab.txt`), or a keras-hub
    preset's `assets/tokenizer/vocabulary.spm`; in a TF-Hub SavedModel, the same files in its
    `assets/`; for a hub name, in its directory in the hub's cache. A preset name has none."""
    if source is None:
        return None
    source = local_source(source)
    if detect_format(source) == "preset":
        return None
    if detect_format(source) == "keras_hub":
        return find_keras_hub_sentencepiece_model(source)
    directory = source if os.path.isdir(source) else os.path.dirname(source)
    if detect_format(source) == "tfhub":
        directory = os.path.join(source, "assets")  # a SavedModel keeps its files there
        if not os.path.isdir(directory):
            return None
    recorded = (read_run_file(directory) or {}).get("vocabulary")
    if recorded and os.path.isfile(recorded):
        return recorded
    # A run's own copy (fine-tuning writes one: the directory is self-contained when the
    # recorded path is another machine's), or a release's file.
    beside = _vocabulary_beside(directory)
    return beside if beside is not None else recorded or None


def _vocabulary_beside(directory: str) -> str | None:
    models = sorted(name for name in os.listdir(directory or ".") if name.endswith(".model"))
    if models:
        return os.path.join(directory, models[0]) if len(models) == 1 else None
    for name in WORDPIECE_VOCABULARY_NAMES:
        if os.path.isfile(os.path.join(directory, name)):
            return os.path.join(directory, name)
    return None


# The name before WordPiece vocabularies: kept for code written against it.
find_sentencepiece_model = find_vocabulary


def require_vocabulary(
    source: str | os.PathLike | None,
    vocabulary: str | os.PathLike | None = None,
    source_name: str = "checkpoint",
) -> str:
    """`vocabulary` if given, else the one `find_vocabulary` finds beside `source`; one error
    when there is none (every entry point that starts from a checkpoint asks this)."""
    if vocabulary is None:
        vocabulary = find_vocabulary(source)
    if vocabulary is None:
        shown = None if source is None else os.fspath(source)
        raise ValueError(
            f"`vocabulary` must be given: none was found beside `{source_name}` or named by its "
            f"run.json. Received: vocabulary=None, {source_name}={shown!r}"
        )
    require_file("vocabulary", vocabulary)
    return os.fspath(vocabulary)


def resolve_normalization(
    source: str | os.PathLike | None,
    lowercase: bool | None = None,
    strip_accents: bool | None = None,
) -> dict[str, bool]:
    """The tokenizer's normalization for a checkpoint (`AlbertTokenizer`'s `lowercase` and
    `strip_accents`): each as given, else as the run that wrote the checkpoint recorded it in
    the `run.json` (pretraining) or `summary.json` (fine-tuning) beside it, else the default
    (`NORMALIZATION_DEFAULTS`: the original recipe's)."""
    recorded = {}
    source = None if source is None else local_source(source)
    if source is not None and detect_format(source) != "preset":
        directory = source if os.path.isdir(source) else os.path.dirname(source)
        for name in reversed(RUN_FILES):  # run.json wins, where it records a value
            found = read_record(directory, name) or {}
            recorded.update({key: value for key, value in found.items() if value is not None})
    given = {"lowercase": lowercase, "strip_accents": strip_accents}
    resolved = {}
    for name, default in NORMALIZATION_DEFAULTS.items():
        value = given[name] if given[name] is not None else recorded.get(name, default)
        require_one_of(name, value, (True, False))
        resolved[name] = value
    return resolved
