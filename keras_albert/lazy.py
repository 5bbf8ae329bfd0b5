"""`lazy_names`: a package's public names, each imported from its module when first used (so
that importing one light module of the package does not load its heavy ones); and the one line
that says what needs TensorFlow where it is not installed (`require_tensorflow`)."""

import contextlib
import importlib
from collections.abc import Callable, Iterator, Mapping

# What the TensorFlow-only features import: TensorFlow, TF Text (the tokenizer's graph ops),
# the TF Serving protos (the export's warmup requests and client).
TENSORFLOW_MODULES = ("tensorflow", "tensorflow_text", "tensorflow_serving")
# The extra that installs them (setup.cfg), quoted for the shells that glob `[...]`.
TENSORFLOW_REQUIREMENT = '"keras-albert[tensorflow]"'


class TensorFlowMissingError(ImportError):
    """A feature that needs TensorFlow (or TF Text, TF Serving) was used without it."""


def tensorflow_missing(feature: str) -> TensorFlowMissingError:
    """The one-line error for `feature` (a public name) used without TensorFlow."""
    return TensorFlowMissingError(
        f"`{feature}` needs TensorFlow, which is not installed. "
        f"Install it with pip install {TENSORFLOW_REQUIREMENT}"
    )


def is_tensorflow_missing(error: ImportError) -> bool:
    """Whether `error` is the import of TensorFlow (or a module of its family) failing."""
    name = getattr(error, "name", None) or ""
    return name.split(".")[0] in TENSORFLOW_MODULES


@contextlib.contextmanager
def needs_tensorflow(feature: str) -> Iterator[None]:
    """Within it, an import of TensorFlow (or TF Text, TF Serving) that fails because it is not
    installed raises the one line of `tensorflow_missing(feature)`:

        with needs_tensorflow("AlbertTokenizer"):
            from keras_albert.text.tokenizer import AlbertTokenizer
    """
    try:
        yield
    except ImportError as error:
        if is_tensorflow_missing(error):
            raise tensorflow_missing(feature) from None
        raise


def require_tensorflow(feature: str):
    """`tensorflow`, imported; raises `tensorflow_missing(feature)` where it is not installed."""
    with needs_tensorflow(feature):
        return importlib.import_module("tensorflow")


def import_public(package: str, module: str, name: str):
    """`name` from `package.module` (or from `module` when it is a full `keras_albert.` name),
    with the one line of `needs_tensorflow(name)` if that module needs TensorFlow and it is
    not installed."""
    if not module.startswith("keras_albert."):
        module = f"{package}.{module}"
    with needs_tensorflow(name):
        return getattr(importlib.import_module(module), name)


def lazy_names(package: str, public: Mapping[str, str]) -> Callable[[str], object]:
    """The module `__getattr__` of `package` that imports `public[name]` (a module of the
    package) when `name` is first asked for."""

    def __getattr__(name: str):
        if name in public:
            return import_public(package, public[name], name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__
