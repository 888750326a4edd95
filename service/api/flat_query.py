"""Query parameters made from a table of flat fields (``schemas.flat``), for Litestar.

``accepts_query(body, fields)`` gives a handler written as ``(self, ..., **query)`` one
keyword parameter per field the query string offers, typed and limited as the body is at the
field's path, so Litestar parses, validates and documents them as if they were written out.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Annotated, Any, TypeVar

import msgspec
from litestar.params import QueryParameter

from service.api.openapi_docs import NON_NEGATIVE, POSITIVE
from service.api.schemas.flat import NAMES_MAX_CHARS, NO_DEFAULT, FlatField, field_type

F = TypeVar("F", bound=Callable[..., Any])


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


def accepts_query(body: type[msgspec.Struct], fields: Sequence[FlatField]) -> Callable[[F], F]:
    """Replace the handler's ``**query`` by the query parameters of ``fields`` (in order,
    before its other keyword parameters); the handler receives them in ``query``."""

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
        return fn

    return decorate
