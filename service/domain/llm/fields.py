"""Typed readers for the numbers in a user-supplied model object (``{"params_b": ...}`` or a
pasted ``config.json``).

Each reader validates one key and raises :class:`InvalidInput` naming the field
(``prefix + key``) when the value is not a positive finite number, or not a whole one where a
count is expected. Pure: no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from service.domain.errors import InvalidInput

__all__ = ["optional_int", "positive_float", "positive_int"]


def _positive_number(spec: Mapping[str, Any], key: str, prefix: str) -> int | float:
    """``spec[key]`` when it is a positive finite number (bools refused), else ``InvalidInput``."""
    value = spec[key]
    fname = f"{prefix}{key}"
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidInput(f"{fname} must be a number, got {value!r}", field=fname)
    if not math.isfinite(float(value)) or value <= 0:
        raise InvalidInput(f"{fname} must be a positive finite number, got {value!r}", field=fname)
    return value


def positive_float(spec: Mapping[str, Any], key: str, *, prefix: str = "") -> float:
    """A positive finite number from ``spec[key]``, as a float."""
    return float(_positive_number(spec, key, prefix))


def positive_int(spec: Mapping[str, Any], key: str, *, prefix: str = "") -> int:
    """A positive whole number from ``spec[key]`` (``7.0`` accepted as 7, ``7.5`` refused)."""
    value = _positive_number(spec, key, prefix)
    if float(value) != int(value):
        fname = f"{prefix}{key}"
        raise InvalidInput(f"{fname} must be a whole number, got {value!r}", field=fname)
    return int(value)


def optional_int(spec: Mapping[str, Any], key: str, *, prefix: str = "") -> int | None:
    """:func:`positive_int` of ``spec[key]``, or ``None`` when the key is absent or null."""
    if key not in spec or spec[key] is None:
        return None
    return positive_int(spec, key, prefix=prefix)
