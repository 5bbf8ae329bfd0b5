"""Hub names: a checkpoint on the Hugging Face Hub (`hf://owner/name`, optionally
`@revision`) or on Kaggle Models (`kaggle://owner/model/framework/variation`, optionally
`/version`: keras-hub's preset handles), downloaded by the hub's own library into its own cache
(reused; `HF_HUB_CACHE` / `HF_HOME`, `KAGGLEHUB_CACHE`) and read as the local directory it
becomes (`local_source`).

`huggingface_hub` and `kagglehub` (`pip install keras-albert[hub]`) are imported only when a hub
name is given: a local source neither imports nor downloads anything.
"""

import importlib
import os
import re

from keras_albert.convert.formats import CheckpointNotFoundError

HF_SCHEME = "hf://"
KAGGLE_SCHEME = "kaggle://"
HUB_SCHEMES = (HF_SCHEME, KAGGLE_SCHEME)
# What to install for each hub's library.
HUB_LIBRARIES = {HF_SCHEME: "huggingface_hub", KAGGLE_SCHEME: "kagglehub"}


def is_hub_name(source) -> bool:
    return isinstance(source, str) and source.startswith(HUB_SCHEMES)


def local_source(source: str | os.PathLike) -> str:
    """The local path of `source`: a hub name's directory in its hub's cache (downloaded there
    first where it is not cached), any other source as it is."""
    source = os.fspath(source)
    if source.startswith(HF_SCHEME):
        return _hugging_face_snapshot(source)
    if source.startswith(KAGGLE_SCHEME):
        return _kaggle_model(source)
    return source


def _import_hub_library(source: str):
    scheme = next(scheme for scheme in HUB_SCHEMES if source.startswith(scheme))
    name = HUB_LIBRARIES[scheme]
    try:
        return importlib.import_module(name)
    except ImportError as error:
        if (getattr(error, "name", None) or "").split(".")[0] != name:
            raise
        raise ImportError(
            f"`{scheme}` names need {name}, which is not installed. Install it with "
            f'pip install {name} (or pip install "keras-albert[hub]"). Received: source={source!r}'
        ) from None


def _one_line(error: Exception) -> str:
    return " ".join(str(error).split())


# --- The Hugging Face Hub ----------------------------------------------------------------------

_HF_NAME = re.compile(r"^hf://(?P<repo_id>[^/@\s]+/[^/@\s]+)(?:@(?P<revision>[^@\s]+))?$")


def _hugging_face_snapshot(source: str) -> str:
    match = _HF_NAME.match(source)
    if match is None:
        raise ValueError(
            "`source` must be a Hugging Face Hub name hf://owner/name or "
            f"hf://owner/name@revision. Received: source={source!r}"
        )
    repo_id, revision = match["repo_id"], match["revision"]
    huggingface_hub = _import_hub_library(source)
    errors = importlib.import_module("huggingface_hub.errors")
    try:
        return huggingface_hub.snapshot_download(repo_id, revision=revision)
    except errors.HFValidationError as error:
        raise ValueError(
            f"`source` must name a Hugging Face Hub repository: {_one_line(error)} "
            f"Received: source={source!r}"
        ) from None
    except errors.LocalEntryNotFoundError:
        # Offline (HF_HUB_OFFLINE=1, or the Hub unreachable) and not in the cache.
        cache = importlib.import_module("huggingface_hub.constants").HF_HUB_CACHE
        raise CheckpointNotFoundError(
            f"Checkpoint not found: {repo_id}{'@' + revision if revision else ''} is not in "
            f"huggingface_hub's cache ({cache}) and the Hub cannot be reached (HF_HUB_OFFLINE="
            f"{os.environ.get('HF_HUB_OFFLINE', 'unset')}): download it once online (unset "
            f"HF_HUB_OFFLINE, or hf download {repo_id}). Received: source={source!r}"
        ) from None
    except (errors.RepositoryNotFoundError, errors.RevisionNotFoundError) as error:
        raise CheckpointNotFoundError(
            f"Checkpoint not found: the Hugging Face Hub has no {repo_id}"
            f"{'@' + revision if revision else ''} ({type(error).__name__}; a private or gated "
            f"one needs hf auth login). Received: source={source!r}"
        ) from None


# --- Kaggle Models -----------------------------------------------------------------------------

_KAGGLE_HANDLE = re.compile(r"^kaggle://(?P<handle>[^/\s]+(?:/[^/\s]+){3})(?:/(?P<version>\d+))?$")


def _kaggle_model(source: str) -> str:
    match = _KAGGLE_HANDLE.match(source)
    if match is None:
        raise ValueError(
            "`source` must be a Kaggle Models handle kaggle://owner/model/framework/variation, "
            f"optionally /version (e.g. kaggle://keras/albert/keras/albert_base_en_uncased/3). "
            f"Received: source={source!r}"
        )
    kagglehub = _import_hub_library(source)
    handle = source.removeprefix(KAGGLE_SCHEME)
    try:
        return kagglehub.model_download(handle)
    except Exception as error:  # kagglehub's own and its HTTP client's errors alike
        cached = _cached_kaggle_versions(match["handle"])
        hint = (
            f"the cached versions ({', '.join(map(str, cached))}) load without network, e.g. "
            f"{KAGGLE_SCHEME}{match['handle']}/{cached[-1]}"
            if cached and match["version"] is None
            else "check the handle on kaggle.com/models, or download it once with network access"
        )
        raise CheckpointNotFoundError(
            f"Checkpoint not found: kagglehub cannot download {handle} ({type(error).__name__}: "
            f"{_one_line(error)}); {hint}. Received: source={source!r}"
        ) from None


def _cached_kaggle_versions(handle: str) -> list[int]:
    """The versions of `handle` (owner/model/framework/variation) complete in kagglehub's cache:
    kagglehub marks each with `<version>.complete` beside its `<version>/` directory (and, for
    an unversioned handle, asks Kaggle for the latest version before it looks in the cache)."""
    cache = importlib.import_module("kagglehub.config").get_cache_folder()
    directory = os.path.join(cache, "models", *handle.split("/"))
    if not os.path.isdir(directory):
        return []
    versions = {name.removesuffix(".complete") for name in os.listdir(directory)}
    return sorted(
        int(version)
        for version in versions
        if version.isdigit()
        and os.path.isdir(os.path.join(directory, version))
        and os.path.isfile(os.path.join(directory, f"{version}.complete"))
    )
