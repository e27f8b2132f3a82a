"""Argument checks that public functions of every layer share, each raising an error that names
the argument."""

from __future__ import annotations


def check_positive_int(name: str, value: object) -> int:
    """`value` when it is an int of at least 1 (a bool is not an int here), else a ValueError
    naming `name`."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name}: must be a positive int, got {value!r}")
    return value


def require(value: object, cls: type, name: str) -> None:
    """Refuse an argument of the wrong type, naming it."""
    if not isinstance(value, cls):
        raise TypeError(f"{name}: expected {cls.__name__}, got {type(value).__name__}")
