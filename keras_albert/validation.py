"""Argument checks shared by configs and layers (stdlib only): errors name value and expectation."""

import numbers
import os

ACTIVATIONS = ("gelu_approximate", "gelu", "relu", "tanh", "silu")


def require_positive_int(name: str, value) -> None:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value <= 0:
        raise ValueError(f"`{name}` must be a positive integer. Received: {name}={value!r}")


def require_rate(name: str, value) -> None:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 <= value < 1:
        raise ValueError(f"`{name}` must be a float in [0, 1). Received: {name}={value!r}")


def require_divisible(
    name: str, value: int, divisor_name: str, divisor: int, *, reason: str = ""
) -> None:
    """`value % divisor == 0`; `reason` (why it must be) is added to the message."""
    if value % divisor != 0:
        why = f" ({reason})" if reason else ""
        raise ValueError(
            f"`{name}` must be divisible by `{divisor_name}`{why}. "
            f"Received: {name}={value}, {divisor_name}={divisor}"
        )


def require_one_of(name: str, value, allowed) -> None:
    if value not in allowed:
        raise ValueError(
            f"`{name}` must be one of {', '.join(map(repr, allowed))}. Received: {name}={value!r}"
        )


def require_int(name: str, value, minimum: int | None = None, *, optional: bool = False) -> None:
    """An integer (not a bool), at least `minimum` when given; `None` passes if `optional`."""
    if optional and value is None:
        return
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"`{name}` must be an integer. Received: {name}={value!r}")
    if minimum is not None and value < minimum:
        raise ValueError(f"`{name}` must be an integer >= {minimum}. Received: {name}={value!r}")


def require_number(
    name: str,
    value,
    minimum: float | None = None,
    maximum: float | None = None,
    *,
    exclusive_minimum: bool = False,
    optional: bool = False,
) -> None:
    """A real number (not a bool) in [minimum, maximum] (or (minimum, …] if exclusive)."""
    if optional and value is None:
        return
    low = "(" if exclusive_minimum else "["
    span = (
        f"{low}{'-inf' if minimum is None else minimum}, {'inf' if maximum is None else maximum}]"
    )
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"`{name}` must be a number in {span}. Received: {name}={value!r}")
    below = minimum is not None and (value <= minimum if exclusive_minimum else value < minimum)
    above = maximum is not None and value > maximum
    if below or above or value != value:  # value != value: NaN
        raise ValueError(f"`{name}` must be a number in {span}. Received: {name}={value!r}")


def require_file(name: str, path) -> None:
    """An existing file: "not found" when nothing is there, "not a file" for a directory."""
    if path is None or not os.path.exists(path):
        raise ValueError(f"`{name}` must be an existing file; not found. Received: {name}={path!r}")
    require_not_directory(name, path)


def require_not_directory(name: str, path, isdir=os.path.isdir) -> None:
    """A path where a file is expected, not a directory (`isdir`: e.g. `tf.io.gfile.isdir`, for
    paths on any file system TensorFlow registers)."""
    if path is not None and isdir(path):
        raise ValueError(f"`{name}` must be a file, not a directory. Received: {name}={path!r}")


def require_exclusive(**values) -> None:
    """At most one of the named values is given (not None)."""
    given = {name: value for name, value in values.items() if value is not None}
    if len(given) > 1:
        names = ", ".join(f"`{name}`" for name in values)
        received = ", ".join(f"{name}={value!r}" for name, value in given.items())
        raise ValueError(f"At most one of {names} must be given. Received: {received}")


def require_pattern(name: str, value) -> None:
    """A string that compiles as a Python regular expression."""
    import re

    try:
        re.compile(value)
    except (re.error, TypeError) as error:
        raise ValueError(
            f"`{name}` must be a regular expression ({error}). Received: {name}={value!r}"
        ) from None


def require_index(name: str, value, size: int) -> None:
    """An integer in [0, size): an id of a vocabulary of `size` entries, say."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or not 0 <= value < size:
        raise ValueError(f"`{name}` must be an integer in [0, {size}). Received: {name}={value!r}")


def require_bool(name: str, value) -> None:
    """`True` or `False` (not 0/1, not a string)."""
    if not isinstance(value, bool):
        raise ValueError(f"`{name}` must be a bool. Received: {name}={value!r}")


def require_given(name: str, value, when: str) -> None:
    """`value` is not None: `when` says in which case it is needed ("with `dynamic_masking`")."""
    if value is None:
        raise ValueError(f"`{name}` must be given {when}. Received: {name}=None")


def require_exactly_one(**values) -> None:
    """Exactly one of the named values is given (not None, not empty)."""
    given = {name: value for name, value in values.items() if value not in (None, "")}
    if len(given) != 1:
        names = ", ".join(f"`{name}`" for name in values)
        received = ", ".join(f"{name}={value!r}" for name, value in values.items())
        raise ValueError(f"Exactly one of {names} must be given. Received: {received}")


def require_any(**values) -> None:
    """At least one of the named values is given (not None)."""
    if all(value is None for value in values.values()):
        names = ", ".join(f"`{name}`" for name in values)
        received = ", ".join(f"{name}=None" for name in values)
        raise ValueError(f"One of {names} must be given. Received: {received}")
