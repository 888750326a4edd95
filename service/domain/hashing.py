"""Hashes of frozen dataclasses computed once per object.

The performance model memoises on values (``lru_cache`` keyed by the model, the deployment
and the calibration), so the same objects are hashed many times per plan. A generated
dataclass ``__hash__`` re-hashes every field each time; :func:`field_hash` computes the same
kind of hash (over the fields that take part in equality) once, for a class to store in a
``_hash`` field (``init=False, compare=False, repr=False``) set in ``__post_init__`` and
return from ``__hash__``. Equality is unchanged.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any


def field_hash(obj: Any) -> int:
    """Hash of the fields of dataclass ``obj`` that take part in equality."""
    return hash(tuple(getattr(obj, f.name) for f in fields(obj) if f.compare and f.name != "_hash"))
