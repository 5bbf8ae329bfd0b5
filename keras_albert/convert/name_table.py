"""Assigning checkpoint tensors to model weights through a declarative name table, loudly.

A table is a list of `Entry(weight_path, source_name, transpose)`. `assign_from_table`
checks, before changing any weight, that every table entry finds its weight and its
tensor with matching shapes, that every model weight is filled, and that every source
tensor is used exactly once, is an expected alias of another (tied weights), or matches an
ignore pattern. Any problem raises one `ValueError` listing all of them.
"""

import dataclasses
import re
from collections.abc import Iterable, Mapping

import numpy as np


@dataclasses.dataclass(frozen=True)
class Entry:
    weight_path: str  # Keras `variable.path`, e.g. "group_0_inner_0/attention/query/kernel"
    source_name: str  # the checkpoint's name, e.g. "albert.encoder....attention.query.weight"
    transpose: bool = False  # PyTorch Linear stores (out, in); Keras Dense (in, out)
    # The source's own shape when it differs from ours by a reshape only: keras-hub's attention
    # kernels are EinsumDense (hidden, heads, head_dim) where ours are Dense (hidden, hidden).
    # Never combined with `transpose`.
    source_shape: tuple[int, ...] | None = None


def assign_from_table(
    weights: Iterable,
    table: list[Entry],
    tensors: Mapping[str, np.ndarray],
    aliases: Mapping[str, str] | None = None,
    ignore_patterns: Iterable[str] = (),
    allow_uninitialized: Iterable[str] = (),
    source_description: str = "checkpoint",
) -> list[str]:
    """Sets each weight to its tensor; raises one error listing every mismatch.

    Returns the paths of the weights left as initialized (only those matching
    `allow_uninitialized`).

    Args:
        weights: the model's variables (`model.weights`).
        table: the entries mapping weight paths to source tensor names.
        tensors: source name → array.
        aliases: source name → the source name it must equal (tied tensors stored twice).
        ignore_patterns: regexes of source names deliberately not loaded (optimizer slots).
        allow_uninitialized: regexes of weight paths whose tensor may be absent.
        source_description: how errors name the source.
    """
    aliases = dict(aliases or {})
    by_path = {variable.path: variable for variable in weights}
    may_stay = [re.compile(pattern) for pattern in allow_uninitialized]
    problems = []
    assignments = []
    uninitialized = []
    used = set()
    for entry in table:
        variable = by_path.get(entry.weight_path)
        if variable is None:
            problems.append(f"the model has no weight {entry.weight_path!r}")
            continue
        if entry.source_name not in tensors:
            if any(pattern.search(entry.weight_path) for pattern in may_stay):
                uninitialized.append(entry.weight_path)
            else:
                problems.append(f"missing tensor {entry.source_name!r} (for {entry.weight_path})")
            continue
        if entry.source_name in used:
            problems.append(f"tensor {entry.source_name!r} is used twice")
        used.add(entry.source_name)
        value = np.asarray(tensors[entry.source_name])
        if entry.source_shape is not None:
            if tuple(value.shape) != tuple(entry.source_shape):
                problems.append(
                    f"shape mismatch for {entry.source_name!r}: {tuple(value.shape)}, but the "
                    f"table expects {tuple(entry.source_shape)}"
                )
                continue
            value = value.reshape(variable.shape)
        if entry.transpose:
            value = value.T
        if tuple(value.shape) != tuple(variable.shape):
            problems.append(
                f"shape mismatch for {entry.source_name!r}: {tuple(value.shape)}"
                f"{' after transpose' if entry.transpose else ''}, but {entry.weight_path} "
                f"is {tuple(variable.shape)}"
            )
            continue
        assignments.append((variable, value))

    filled = {entry.weight_path for entry in table}
    for path in sorted(set(by_path) - filled):
        problems.append(f"model weight {path!r} has no entry in the name table")

    for name, target in aliases.items():
        if name in tensors and target in tensors:
            used.add(name)
            if not np.array_equal(np.asarray(tensors[name]), np.asarray(tensors[target])):
                problems.append(f"tensor {name!r} must equal its tied twin {target!r}; it does not")
    ignore = [re.compile(pattern) for pattern in ignore_patterns]
    for name in sorted(set(tensors) - used):
        if not any(pattern.search(name) for pattern in ignore):
            problems.append(f"unused tensor {name!r} {tuple(np.shape(tensors[name]))}")

    if problems:
        raise ValueError(
            f"Cannot load the {source_description}: {len(problems)} problem(s):\n  - "
            + "\n  - ".join(problems)
        )
    for variable, value in assignments:
        variable.assign(value.astype(variable.dtype))
    return uninitialized


def read_from_table(weights: Iterable, table: list[Entry]) -> dict[str, np.ndarray]:
    """The inverse direction: source name → array, from the model's current weights."""
    by_path = {variable.path: variable for variable in weights}
    missing = [entry.weight_path for entry in table if entry.weight_path not in by_path]
    if missing:
        raise ValueError(f"`weights` must include every path of the table. Missing: {missing}")
    tensors = {}
    for entry in table:
        value = np.asarray(by_path[entry.weight_path].numpy())
        value = value.T if entry.transpose else value
        if entry.source_shape is not None:
            value = value.reshape(entry.source_shape)
        tensors[entry.source_name] = np.ascontiguousarray(value)
    return tensors
