"""One error table at the edge: every exception becomes an RFC 9457 problem document.

Domain and use-case errors know nothing of HTTP; ``PROBLEMS`` maps each class to a status and a
problem type. Validation failures name the offending field. Anything unmapped is logged with
its traceback and answered as a bare 500: no stack trace or internal detail leaves the process.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Any

from litestar import Request, Response
from litestar.exceptions import (
    HTTPException,
    NotAuthorizedException,
    PermissionDeniedException,
    ValidationException,
)
from litestar.status_codes import (
    HTTP_400_BAD_REQUEST,
    HTTP_404_NOT_FOUND,
    HTTP_409_CONFLICT,
    HTTP_422_UNPROCESSABLE_ENTITY,
    HTTP_500_INTERNAL_SERVER_ERROR,
    HTTP_503_SERVICE_UNAVAILABLE,
)

from service.domain.errors import Conflict, DomainError, InvalidInput, NotFound
from service.usecases.errors import ServiceUnavailable

log = logging.getLogger("gpuplan.api")

PROBLEM_JSON = "application/problem+json"
PROBLEM_BASE = "https://gpuplan.dev/problems/"
_AT_PATH = re.compile(r"\s*-\s*at `\$(?P<path>[^`]*)`")
_UNKNOWN_FIELD = re.compile(r"unknown field `(?P<name>[^`]+)`")
_STATUS_TITLES = {
    400: "Bad request",
    401: "Authentication required",
    403: "Forbidden",
    404: "Not found",
    405: "Method not allowed",
    406: "Not acceptable",
    409: "Conflict",
    413: "Request body too large",
    415: "Unsupported media type",
    422: "Invalid input",
    429: "Too many requests",
    500: "Internal server error",
    503: "Service unavailable",
}


@dataclass(frozen=True, slots=True)
class ProblemKind:
    status: int
    slug: str
    title: str


# The error table: domain / use-case class -> HTTP status and problem type.
PROBLEMS: dict[type[Exception], ProblemKind] = {
    NotFound: ProblemKind(HTTP_404_NOT_FOUND, "not-found", "Not found"),
    InvalidInput: ProblemKind(HTTP_422_UNPROCESSABLE_ENTITY, "invalid-input", "Invalid input"),
    Conflict: ProblemKind(HTTP_409_CONFLICT, "conflict", "Conflict"),
    ServiceUnavailable: ProblemKind(
        HTTP_503_SERVICE_UNAVAILABLE, "unavailable", "Service unavailable"
    ),
    DomainError: ProblemKind(HTTP_422_UNPROCESSABLE_ENTITY, "invalid-input", "Invalid input"),
}


def problem_kind(exc: Exception) -> ProblemKind | None:
    """The table entry of the most specific class ``exc`` is an instance of."""
    for cls in type(exc).__mro__:
        kind = PROBLEMS.get(cls)
        if kind is not None:
            return kind
    return None


def problem_response(
    request: Request[Any, Any, Any] | None,
    status: int,
    *,
    slug: str,
    title: str,
    detail: str,
    headers: dict[str, str] | None = None,
    **extra: Any,
) -> Response[dict[str, Any]]:
    body: dict[str, Any] = {
        "type": PROBLEM_BASE + slug,
        "title": title,
        "status": status,
        "detail": detail,
    }
    if request is not None:
        body["instance"] = request.url.path
        request_id = request.scope.get("state", {}).get("request_id")
        if request_id:
            body["request_id"] = request_id
    body.update({k: v for k, v in extra.items() if v is not None})
    return Response(body, status_code=status, media_type=PROBLEM_JSON, headers=headers)


def field_of(message: dict[str, Any]) -> str | None:
    """The dotted field path of one Litestar/msgspec validation message.

    Litestar moves msgspec's ``- at `$.path``` suffix into ``key``; an unknown field's own name
    is only in the message text, so it is appended to that path.
    """
    text = str(message.get("message", ""))
    match = _AT_PATH.search(text)
    path = match.group("path").lstrip(".") if match else str(message.get("key") or "")
    if path == "data" or path.startswith("data."):
        path = path[len("data.") :]  # Litestar's name for the whole body
    unknown = _UNKNOWN_FIELD.search(text)
    if unknown:
        path = f"{path}.{unknown.group('name')}" if path else unknown.group("name")
    return path or None


def _clean(message: str) -> str:
    return _AT_PATH.sub("", message).strip()


def handle_validation(
    request: Request[Any, Any, Any], exc: ValidationException
) -> Response[dict[str, Any]]:
    raw = exc.extra if isinstance(exc.extra, list) else []
    errors = [
        {"field": field_of(m) or "body", "message": _clean(str(m.get("message", "")))}
        for m in raw
        if isinstance(m, dict)
    ]
    if not errors:
        # Unparseable body: Litestar reports a JSON syntax error without a structured list.
        text = str(exc.detail)
        return problem_response(
            request,
            HTTP_400_BAD_REQUEST,
            slug="malformed-body",
            title="Malformed request body",
            detail=text
            if "JSON" in text or "decode" in text.lower()
            else "the body is not valid JSON",
            field="body",
        )
    first = errors[0]
    detail = f"{first['field']}: {first['message']}"
    if len(errors) > 1:
        detail += f" (and {len(errors) - 1} more)"
    return problem_response(
        request,
        HTTP_422_UNPROCESSABLE_ENTITY,
        slug="invalid-input",
        title="Invalid input",
        detail=detail,
        field=first["field"],
        errors=errors,
    )


def handle_domain(request: Request[Any, Any, Any], exc: Exception) -> Response[dict[str, Any]]:
    kind = problem_kind(exc)
    if kind is None:
        return handle_unexpected(request, exc)
    headers: dict[str, str] | None = None
    extra: dict[str, Any] = {}
    if isinstance(exc, ServiceUnavailable):
        headers = {"Retry-After": str(exc.retry_after_s)}
        detail = exc.why
    elif isinstance(exc, DomainError):
        detail = exc.message
        extra["field"] = exc.field
        if isinstance(exc, NotFound):
            extra["suggestions"] = list(exc.suggestions)
    else:
        detail = str(exc)
    return problem_response(
        request,
        kind.status,
        slug=kind.slug,
        title=kind.title,
        detail=detail,
        headers=headers,
        **extra,
    )


def handle_http(request: Request[Any, Any, Any], exc: HTTPException) -> Response[dict[str, Any]]:
    status = exc.status_code
    if status >= 500:
        return handle_unexpected(request, exc)
    headers = dict(exc.headers or {})
    if isinstance(exc, NotAuthorizedException):
        headers.setdefault("WWW-Authenticate", 'Bearer realm="gpuplan"')
    title = _STATUS_TITLES.get(status, "Error")
    slug = title.lower().replace(" ", "-")
    detail = str(exc.detail) if exc.detail else title
    if status == 413:
        detail = "the request body is larger than this endpoint accepts"
    if status == 429:
        detail = "too many writes from this client; retry after Retry-After seconds"
        headers.setdefault("Retry-After", headers.get("RateLimit-Reset", "60"))
    extra: dict[str, Any] = {}
    if isinstance(exc.extra, dict):
        extra.update({k: v for k, v in exc.extra.items() if k in {"field", "limit"}})
    return problem_response(
        request,
        status,
        slug=slug,
        title=title,
        detail=detail,
        headers=headers or None,
        **extra,
    )


def handle_unexpected(request: Request[Any, Any, Any], exc: Exception) -> Response[dict[str, Any]]:
    log.error(
        "unhandled error",
        exc_info=exc,
        extra={"event": "unhandled_error", "path": request.url.path},
    )
    return problem_response(
        request,
        HTTP_500_INTERNAL_SERVER_ERROR,
        slug="internal",
        title="Internal server error",
        detail="the server failed to answer; the error was logged with this request's id",
    )


EXCEPTION_HANDLERS: dict[type[Exception] | int, Any] = {
    ValidationException: handle_validation,
    NotAuthorizedException: handle_http,
    PermissionDeniedException: handle_http,
    HTTPException: handle_http,
    DomainError: handle_domain,
    ServiceUnavailable: handle_domain,
    Exception: handle_unexpected,
}
