"""`lazy_names`: a package's public names, each imported from its module when first used (so
that importing one light module of the package does not load its heavy ones)."""

import importlib
from collections.abc import Callable, Mapping


def lazy_names(package: str, public: Mapping[str, str]) -> Callable[[str], object]:
    """The module `__getattr__` of `package` that imports `public[name]` (a module of the
    package) when `name` is first asked for."""

    def __getattr__(name: str):
        if name in public:
            return getattr(importlib.import_module(f"{package}.{public[name]}"), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__
