"""Query parameters made from a table of flat fields (``schemas.flat``), for Litestar.

``accepts_query(body, fields)`` gives a handler written as ``(self, ..., **query)`` one
keyword parameter per field the query string offers, typed and limited as the body is at the
field's path, so Litestar parses, validates and documents them as if they were written out.
The same table gives the strict query-string check (``strict_query``) its hints: a field's
other spellings (its body path, its CLI aliases) point to its query parameter, and a field the
query string does not offer points to the POST body that takes it.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, TypeVar

import msgspec
from litestar.params import QueryParameter

from service.api.openapi_docs import NON_NEGATIVE, POSITIVE
from service.api.schemas.flat import NAMES_MAX_CHARS, NO_DEFAULT, FlatField, field_type

F = TypeVar("F", bound=Callable[..., Any])
_HINTS_ATTRIBUTE = "gpuplan_query_hints"


@dataclass(frozen=True, slots=True)
class QueryHints:
    """What a query string's unknown names most likely meant: ``aliases`` maps another spelling
    of a query parameter (a body path, a CLI alias) to it; ``body_only`` maps a flat input the
    query string does not offer to the body path that takes it, in ``post`` (e.g.
    ``POST /v1/plans``)."""

    aliases: Mapping[str, str] = field(default_factory=dict)
    body_only: Mapping[str, str] = field(default_factory=dict)
    post: str | None = None


def _hints(fields: Sequence[FlatField], post: str | None) -> QueryHints:
    aliases: dict[str, str] = {}
    body_only: dict[str, str] = {}
    for f in fields:
        if not f.query:
            body_only[f.name] = f.path
            continue
        for other in (f.path, *f.cli_aliases):
            if other != f.name:
                aliases[other.replace("-", "_")] = f.name
    return QueryHints(aliases, body_only, post)


def query_hints(fn: Callable[..., Any]) -> QueryHints | None:
    """The hints ``accepts_query`` left on a handler function (``None`` on others)."""
    hints = getattr(fn, _HINTS_ATTRIBUTE, None)
    return hints if isinstance(hints, QueryHints) else None


def _parameter(body: type[msgspec.Struct], field: FlatField) -> tuple[inspect.Parameter, Any]:
    """The keyword parameter for ``field`` and its annotation."""
    if field.shape == "names":
        kind: Any = str | None
        marker = QueryParameter(max_length=NAMES_MAX_CHARS, description=field.help)
        default: Any = None
    else:
        spec = field_type(body, field)
        limits = dict(spec.limits)
        extra = None
        if limits.get("gt") == 0:
            extra = POSITIVE  # Litestar drops a zero bound; the schema states it again
        elif limits.get("ge") == 0:
            extra = NON_NEGATIVE
        marker = QueryParameter(description=field.help, schema_extra=extra, **limits)
        kind = spec.base
        default = spec.default
        if field.required:
            default = inspect.Parameter.empty
        elif default is None or default is NO_DEFAULT:
            kind, default = spec.base | None, None
    annotation = Annotated[kind, marker]
    parameter = inspect.Parameter(
        field.name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation
    )
    return parameter, annotation


def accepts_query(
    body: type[msgspec.Struct], fields: Sequence[FlatField], *, post: str | None = None
) -> Callable[[F], F]:
    """Replace the handler's ``**query`` by the query parameters of ``fields`` (in order,
    before its other keyword parameters); the handler receives them in ``query``. ``post``
    names the operation whose body takes every field (for the hints of ``query_hints``)."""

    def decorate(fn: F) -> F:
        signature = inspect.signature(fn)
        own = [p for p in signature.parameters.values() if p.kind is not p.VAR_KEYWORD]
        leading = [p for p in own if p.default is p.empty]
        trailing = [p.replace(kind=p.KEYWORD_ONLY) for p in own if p.default is not p.empty]
        generated = [_parameter(body, f) for f in fields if f.query]
        handler: Any = fn
        handler.__signature__ = signature.replace(
            parameters=[*leading, *(p for p, _ in generated), *trailing]
        )
        annotations = {**fn.__annotations__, **{p.name: a for p, a in generated}}
        annotations.pop("query", None)
        handler.__annotations__ = annotations
        setattr(handler, _HINTS_ATTRIBUTE, _hints(fields, post))
        return fn

    return decorate
