"""Strict query strings on every documented GET operation, checked before any parameter is read.

A query string may only name the parameters its operation declares (those of its signature,
its dependencies and its layers, as Litestar reads them; the flat ones come from the tables of
``schemas.plan_fields`` and ``schemas.estimate`` through ``flat_query``). Each refusal is an
RFC 9457 problem whose ``field`` is the parameter at fault:

- a name the operation does not take: 400, with the closest valid name in ``suggestions`` and
  the detail ("did you mean tpot_ms?"); a flat input only the POST body takes says so;
- a parameter given twice that is not a list (``qps=1&qps=2``): 400;
- a required parameter left out: 422, each missing one listed in ``errors``.

A typo would otherwise be dropped in silence (``tpot=50`` planned with no TPOT limit), and a
repeated value would be decided by the framework (first or last) without a word.
"""

from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

from litestar import Request, Response
from litestar.handlers import HTTPRouteHandler
from litestar.status_codes import HTTP_400_BAD_REQUEST, HTTP_422_UNPROCESSABLE_ENTITY

from service.api.errors import problem_response
from service.api.flat_query import QueryHints, query_hints
from service.api.json_body import refuse_nul_parameters

_SPEC_KEY = "gpuplan_strict_query"
_CLOSE_ENOUGH = 0.6
_LISTED_AT_MOST = 40


@dataclass(frozen=True, slots=True)
class QuerySpec:
    """The query parameters one operation takes: all of them (in declaration order), the
    required ones, the ones that may be repeated (lists) and the hints of its flat table."""

    names: tuple[str, ...]
    required: tuple[str, ...]
    repeatable: frozenset[str]
    hints: QueryHints


def _spec(request: Request[Any, Any, Any], handler: HTTPRouteHandler) -> QuerySpec:
    """The operation's ``QuerySpec``, worked out once per handler and kept in its ``opt``."""
    cached = handler.opt.get(_SPEC_KEY)
    if isinstance(cached, QuerySpec):
        return cached
    path_parameters: Mapping[str, Any] = dict.fromkeys(request.path_params)
    model = handler.create_kwargs_model(path_parameters=dict(path_parameters))
    order = list(handler.parsed_fn_signature.parameters)
    params = sorted(
        model.expected_query_params,
        key=lambda p: order.index(p.field_name) if p.field_name in order else len(order),
    )
    spec = QuerySpec(
        names=tuple(p.field_alias for p in params),
        required=tuple(p.field_alias for p in params if p.is_required),
        repeatable=frozenset(p.field_alias for p in params if p.is_sequence),
        hints=query_hints(handler.fn) or QueryHints(),
    )
    handler.opt[_SPEC_KEY] = spec
    return spec


def closest_name(name: str, spec: QuerySpec) -> str | None:
    """The parameter ``name`` most likely meant: the same name in another case or with dashes,
    another spelling of one (a body path, a CLI alias), or the nearest by similarity."""
    plain = name.strip().lower().replace("-", "_")
    if plain in spec.names:
        return plain
    if plain in spec.hints.aliases:
        return spec.hints.aliases[plain]
    candidates = [*spec.names, *spec.hints.aliases]
    close = difflib.get_close_matches(plain, candidates, n=1, cutoff=_CLOSE_ENOUGH)
    if not close:
        return None
    return spec.hints.aliases.get(close[0], close[0])


def _takes(spec: QuerySpec) -> str:
    if not spec.names:
        return "this operation takes no query parameters"
    shown = ", ".join(spec.names[:_LISTED_AT_MOST])
    return f"this operation takes {shown}"


def _unknown(name: str, spec: QuerySpec) -> tuple[str, str | None]:
    """(message, suggested name) for a parameter the operation does not take."""
    body_path = spec.hints.body_only.get(name)
    if body_path is not None:
        where = f"the body of {spec.hints.post}" if spec.hints.post else "the request body"
        return (
            f"{name!r} is not taken in the query string: send `{body_path}` in {where}",
            None,
        )
    suggestion = closest_name(name, spec)
    if suggestion is not None:
        return f"unknown query parameter {name!r}: did you mean {suggestion}?", suggestion
    return f"unknown query parameter {name!r}: {_takes(spec)}", None


def _problem(
    request: Request[Any, Any, Any],
    status: int,
    slug: str,
    title: str,
    items: list[tuple[str, str]],
    *,
    detail: str | None = None,
    suggestion: str | None = None,
) -> Response[dict[str, Any]]:
    """A problem naming the first of ``items`` (parameter, message) and listing them all in
    ``errors``; the detail is the first message unless given."""
    if detail is None:
        detail = items[0][1] + (f" (and {len(items) - 1} more)" if len(items) > 1 else "")
    return problem_response(
        request,
        status,
        slug=slug,
        title=title,
        detail=detail,
        field=items[0][0],
        suggestions=[suggestion] if suggestion else None,
        errors=[{"field": name, "message": message} for name, message in items],
    )


def query_problem(request: Request[Any, Any, Any]) -> Response[dict[str, Any]] | None:
    """The problem answering ``request``'s query string, or ``None`` when it is acceptable
    (or the operation is not a documented GET)."""
    handler = request.route_handler
    if (
        request.method != "GET"
        or not isinstance(handler, HTTPRouteHandler)
        or not handler.resolve_include_in_schema()
    ):
        return None
    spec = _spec(request, handler)
    raw: bytes = request.scope.get("query_string", b"")
    pairs = parse_qsl(raw.decode("utf-8", "replace"), keep_blank_values=True)
    counts = Counter(name for name, _ in pairs)  # in the order the client wrote them
    unknown = [name for name in counts if name not in spec.names]
    if unknown:
        found = [_unknown(name, spec) for name in unknown]
        items = [(name, message) for name, (message, _) in zip(unknown, found, strict=True)]
        return _problem(
            request, HTTP_400_BAD_REQUEST, "unknown-parameter", "Unknown query parameter", items,
            suggestion=found[0][1],
        )  # fmt: skip
    repeated = [n for n, c in counts.items() if c > 1 and n not in spec.repeatable]
    if repeated:
        items = [
            (n, f"query parameter {n!r} is given {counts[n]} times; give it once") for n in repeated
        ]
        return _problem(
            request, HTTP_400_BAD_REQUEST, "repeated-parameter", "Repeated query parameter", items
        )
    missing = [name for name in spec.required if name not in counts]
    if missing:
        items = [(n, f"missing required query parameter {n!r}") for n in missing]
        summary = f"missing required query parameters: {', '.join(missing)}"
        return _problem(
            request, HTTP_422_UNPROCESSABLE_ENTITY, "invalid-input", "Invalid input", items,
            detail=summary if len(missing) > 1 else None,
        )  # fmt: skip
    return None


async def check_parameters(request: Request[Any, Any, Any]) -> Response[dict[str, Any]] | None:
    """``before_request`` hook: NUL in a parameter (``refuse_nul_parameters``), then the
    query string's names (``query_problem``)."""
    await refuse_nul_parameters(request)
    return query_problem(request)
