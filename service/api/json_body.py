"""What a request must be before its JSON body or its parameters are decoded.

msgspec decodes JSON fast and strictly, but JSON itself allows things this service refuses,
each answered with a 4xx problem that names where:

- a ``Content-Type`` that is not JSON (``application/json`` or ``application/*+json``): 415.
  A request without one is read as JSON;
- nesting deeper than ``MAX_JSON_DEPTH`` arrays and objects: 400 (the decoder would otherwise
  recurse until Python's own limit);
- a key given twice in one object: 400 naming it (the decoder would keep the last one
  silently, so ``{"model": "a", "model": "b"}`` would plan ``b``);
- ``NaN``, ``Infinity`` or a number beyond the float range (``1e309``): 400 naming the field;
- the NUL character (U+0000) in any string or key, and in any query or path parameter: 422
  naming it (Postgres text cannot hold it and SQLite would store it, so it is refused
  everywhere).

The common case stays cheap: depth and duplicates are found by comparing the decoded value
with counts over the raw bytes, and only a body that fails a cheap test is parsed again, by
the standard library, to say exactly where.
"""

from __future__ import annotations

import json
import re
from collections import deque
from typing import Any
from urllib.parse import parse_qsl

import msgspec
from litestar import Request
from litestar.exceptions import ClientException, SerializationException
from litestar.status_codes import HTTP_415_UNSUPPORTED_MEDIA_TYPE

from service.domain.errors import InvalidInput

MAX_JSON_DEPTH = 32
"""Arrays and objects nested in a request body, the outermost counted as 1."""

_KEY = re.compile(rb'"\s*:')
_NUL_ESCAPE = b"\\u0000"
_DECODER = msgspec.json.Decoder()


def is_json_media_type(content_type: str) -> bool:
    """``application/json`` or a ``+json`` suffix type, parameters ignored."""
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or (
        media.startswith("application/") and media.endswith("+json")
    )


class JsonRequest(Request[Any, Any, Any]):
    """The service's request class: ``json()`` checks the body as the module docstring says."""

    async def json(self) -> Any:
        content_type = self.headers.get("content-type")
        if content_type and not is_json_media_type(content_type):
            raise ClientException(
                status_code=HTTP_415_UNSUPPORTED_MEDIA_TYPE,
                detail=f"Content-Type {content_type.split(';', 1)[0].strip()!r} is not JSON: "
                "send application/json",
                extra={"field": "Content-Type"},
            )
        return checked_json(await self.body())


def checked_json(body: bytes) -> Any:
    """``body`` decoded, or the 4xx the module docstring lists for it."""
    try:
        value = _DECODER.decode(body)
    except RecursionError:
        raise _too_deep() from None
    except msgspec.DecodeError as exc:
        where = _non_finite_number(body)
        if where is not None:
            path, text = where
            raise ClientException(
                detail=f"{path or 'body'}: {text} is not a finite JSON number "
                "(NaN, Infinity and numbers beyond about 1.8e308 are refused)",
                extra={"field": path or "body"},
            ) from None
        raise SerializationException(str(exc)) from None
    if not isinstance(value, dict | list):
        return value
    deepest, keys = _shape(value, may_be_deep=body.count(b"[") + body.count(b"{") > MAX_JSON_DEPTH)
    if deepest > MAX_JSON_DEPTH:
        raise _too_deep()
    if keys != len(_KEY.findall(body)):  # a key given twice, or '":' inside a string
        duplicate = _duplicate_key(body)
        if duplicate is not None:
            path, key = duplicate
            raise ClientException(
                detail=f"{path}: key {key!r} is given twice in one JSON object",
                extra={"field": path},
            )
    if _NUL_ESCAPE in body:
        nul = _nul_path(value)
        if nul is not None:
            raise InvalidInput(f"{nul}: text must not contain NUL (U+0000)", field=nul)
    return value


async def refuse_nul_parameters(request: Request[Any, Any, Any]) -> None:
    """``before_request`` hook: 422 naming the query or path parameter that holds NUL."""
    raw_query: bytes = request.scope.get("query_string", b"")
    if b"%00" in raw_query:
        for name, text in parse_qsl(raw_query.decode("latin-1"), keep_blank_values=True):
            if "\x00" in text or "\x00" in name:
                raise InvalidInput(
                    f"query parameter {name!r} must not contain NUL (U+0000)", field=name
                )
    for name, value in request.path_params.items():
        if isinstance(value, str) and "\x00" in value:
            raise InvalidInput(f"{name} must not contain NUL (U+0000)", field=name)


def _too_deep() -> ClientException:
    return ClientException(
        detail=f"JSON nesting deeper than {MAX_JSON_DEPTH} levels", extra={"field": "body"}
    )


def _shape(value: dict[str, Any] | list[Any], *, may_be_deep: bool) -> tuple[int, int]:
    """``(deepest nesting, keys in all objects)``; depth is only measured when ``may_be_deep``
    (fewer brackets in the body than the limit cannot nest past it)."""
    keys = 0
    deepest = 1
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > deepest:
            deepest = depth
            if deepest > MAX_JSON_DEPTH:
                break
        if isinstance(node, dict):
            keys += len(node)
            children = node.values()
        else:
            children = node
        for child in children:
            if isinstance(child, dict | list) and (child or may_be_deep):
                stack.append((child, depth + 1))
    return (deepest if may_be_deep else 1), keys


class _Pairs(list[tuple[str, Any]]):
    """An object's members in order, as given (duplicates kept)."""


def _pairs_tree(body: bytes, **hooks: Any) -> Any:
    try:
        return json.loads(body, object_pairs_hook=_Pairs, **hooks)
    except (ValueError, RecursionError):
        return None


def _children(node: Any, path: str) -> list[tuple[str, Any]]:
    if isinstance(node, _Pairs):
        return [(f"{path}.{k}" if path else k, v) for k, v in node]
    if isinstance(node, list):
        return [(f"{path}[{i}]", v) for i, v in enumerate(node)]
    return []


def _duplicate_key(body: bytes) -> tuple[str, str] | None:
    """``(path of the object, key)`` of the first key given twice in one object."""
    queue: deque[tuple[str, Any]] = deque([("", _pairs_tree(body))])
    while queue:
        path, node = queue.popleft()
        if isinstance(node, _Pairs):
            seen: set[str] = set()
            for key, _ in node:
                if key in seen:
                    return (f"{path}.{key}" if path else key), key
                seen.add(key)
        queue.extend(_children(node, path))
    return None


class _NonFinite:
    def __init__(self, text: str) -> None:
        self.text = text


def _float_or_flag(text: str) -> float | _NonFinite:
    value = float(text)
    return value if value not in (float("inf"), float("-inf")) else _NonFinite(text)


def _non_finite_number(body: bytes) -> tuple[str, str] | None:
    """``(path, text)`` of the first NaN, Infinity or out-of-range number in ``body``."""
    tree = _pairs_tree(body, parse_constant=_NonFinite, parse_float=_float_or_flag)
    queue: deque[tuple[str, Any]] = deque([("", tree)])
    while queue:
        path, node = queue.popleft()
        if isinstance(node, _NonFinite):
            return path, node.text[:40]
        queue.extend(_children(node, path))
    return None


def _nul_path(value: Any) -> str | None:
    """The path of the first string or key holding NUL in a decoded body."""
    queue: deque[tuple[str, Any]] = deque([("", value)])
    while queue:
        path, node = queue.popleft()
        if isinstance(node, str):
            if "\x00" in node:
                return path or "body"
        elif isinstance(node, dict):
            for key, child in node.items():
                child_path = f"{path}.{key}" if path else key
                if "\x00" in key:
                    return child_path.replace("\x00", "\\u0000")
                queue.append((child_path, child))
        elif isinstance(node, list):
            queue.extend((f"{path}[{i}]", child) for i, child in enumerate(node))
    return None
