"""The checks of the distributed package's settings: a count of 1 or more, a number of seconds above 0."""

from __future__ import annotations

from ..errors import UserError

__all__ = ["count", "seconds"]


def count(name: str, value: object) -> int:
    """``value`` if it is an int of 1 or more, else a ``UserError`` naming ``name``."""
    if type(value) is not int or value < 1:
        raise UserError(f"{name}: expected an int of 1 or more, got {value!r}")
    return value


def seconds_from_zero(name: str, value: object) -> float:
    """``value`` as a float if it is a number of seconds of 0 or more, else a ``UserError`` naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise UserError(f"{name}: expected a number of seconds >= 0, got {value!r}")
    return float(value)


def seconds(name: str, value: object) -> float:
    """``value`` as a float if it is a number of seconds above 0, else a ``UserError`` naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise UserError(f"{name}: expected a number of seconds > 0, got {value!r}")
    return float(value)
