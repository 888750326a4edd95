"""Base wire types. Inputs refuse unknown fields; limits and units live in ``Meta`` so they reach
the OpenAPI schema (and so the generated clients).

``with_fields_of`` derives a wire type's fields from a domain dataclass, so a value defined once
in ``service/domain`` (``GpuSpec``) needs no restating here.
"""

from __future__ import annotations

import dataclasses
import functools
import operator
from collections.abc import Callable
from types import GenericAlias, UnionType
from typing import Annotated, Any, TypeVar, Union, cast, get_args, get_origin, get_type_hints

import msgspec
from msgspec import Meta

from service.domain.catalog import SLUG_MAX_LENGTH, SOURCE_MAX_LENGTH


class WireIn(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Base of every request body: unknown fields are an error naming the field."""


class WireOut(msgspec.Struct, kw_only=True):
    """Base of every response body."""


class Problem(WireOut, kw_only=True):
    """RFC 9457 problem details (``application/problem+json``)."""

    type: str
    title: str
    status: int
    detail: str
    instance: str | None = None
    request_id: str | None = None
    field: str | None = None
    suggestions: list[str] | None = None
    errors: list[dict[str, str]] | None = None


Slug = Annotated[
    str,
    Meta(
        pattern=rf"^[a-z0-9][a-z0-9._-]{{0,{SLUG_MAX_LENGTH - 1}}}$",
        description="Lowercase identifier: letters, digits, '.', '_' or '-' (at most 64).",
    ),
]
LongText = Annotated[str, Meta(max_length=SOURCE_MAX_LENGTH)]

# Output units, so the schema (and generated clients) say what each number means.
UsdPerHour = Annotated[float, Meta(description="USD per hour.")]
UsdPerMonth = Annotated[float, Meta(description="USD per month (730 hours).")]
ReqPerS = Annotated[float, Meta(description="Requests per second.")]
Millis = Annotated[float, Meta(description="Milliseconds.")]
Gigabytes = Annotated[float, Meta(description="Gigabytes (10^9 bytes).")]
Share = Annotated[float, Meta(description="Fraction between 0 and 1.")]

S = TypeVar("S", bound=msgspec.Struct)


def with_fields_of(
    source: type[Any], *, omit: tuple[str, ...] = (), output: bool = False
) -> Callable[[type[S]], type[S]]:
    """Class decorator: rebuild the decorated Struct with the fields of the domain dataclass
    ``source`` (in its order, less ``omit``) placed before the Struct's own fields.

    For a request body (``output=False``) the fields are those the dataclass constructor takes,
    with their ``Meta`` limits and descriptions and their defaults, so msgspec enforces the
    domain's limits at the edge and OpenAPI documents them. For a response body every field is
    taken, derived ones (``init=False``) too, with bare types (limits describe inputs) and no
    defaults (a response always carries each field).

    Static type checkers see the class as written (its own fields and methods); build instances
    from ``domain_values`` and convert with ``to_domain``-style methods that read
    ``msgspec.structs.asdict(self)``. Methods, the docstring and the struct options of the
    decorated class are kept.
    """

    def rebuild(cls: type[S]) -> type[S]:
        hints = get_type_hints(source, include_extras=True)
        derived: list[tuple[str, Any] | tuple[str, Any, Any]] = []
        for spec in dataclasses.fields(source):
            if spec.name in omit or not (output or spec.init):
                continue
            if output:
                derived.append((spec.name, _bare(hints[spec.name])))
            elif spec.default is not dataclasses.MISSING:
                derived.append((spec.name, hints[spec.name], spec.default))
            else:
                derived.append((spec.name, hints[spec.name]))
        own: list[tuple[str, Any] | tuple[str, Any, Any]] = []
        for item in msgspec.structs.fields(cls):
            if item.default is not msgspec.NODEFAULT:
                own.append((item.name, item.type, item.default))
            elif item.default_factory is not msgspec.NODEFAULT:
                own.append(
                    (item.name, item.type, msgspec.field(default_factory=item.default_factory))
                )
            else:
                own.append((item.name, item.type))
        namespace = {k: v for k, v in vars(cls).items() if _is_method(v)}
        namespace["__doc__"] = cls.__doc__
        namespace["__qualname__"] = cls.__qualname__
        config = cls.__struct_config__
        rebuilt = msgspec.defstruct(
            cls.__name__,
            derived + own,
            bases=cls.__bases__,
            module=cls.__module__,
            namespace=namespace,
            kw_only=True,
            frozen=config.frozen,
            forbid_unknown_fields=config.forbid_unknown_fields,
            omit_defaults=config.omit_defaults,
        )
        # The rebuilt class has every method and field of ``cls``, and more fields.
        return cast("type[S]", rebuilt)

    return rebuild


def domain_values(value: Any) -> dict[str, Any]:
    """Every field of a domain dataclass instance by name (shallow: no copies)."""
    return {spec.name: getattr(value, spec.name) for spec in dataclasses.fields(value)}


def _bare(hint: Any) -> Any:
    """``hint`` without its ``Annotated`` metadata, at every level."""
    origin = get_origin(hint)
    if origin is Annotated:
        return _bare(get_args(hint)[0])
    if origin in (Union, UnionType):
        return functools.reduce(operator.or_, (_bare(arg) for arg in get_args(hint)))
    if origin is tuple:
        return GenericAlias(tuple, tuple(a if a is Ellipsis else _bare(a) for a in get_args(hint)))
    return hint


def _is_method(value: object) -> bool:
    return callable(value) or isinstance(value, classmethod | staticmethod | property)
