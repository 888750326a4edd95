"""Base wire types. Inputs refuse unknown fields; limits and units live in ``Meta`` so they reach
the OpenAPI schema (and so the generated clients)."""

from __future__ import annotations

from typing import Annotated

import msgspec
from msgspec import Meta


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
        pattern=r"^[a-z0-9][a-z0-9._-]{0,63}$",
        description="Lowercase identifier: letters, digits, '.', '_' or '-' (at most 64).",
    ),
]
Name = Annotated[str, Meta(min_length=1, max_length=128)]
LongText = Annotated[str, Meta(max_length=2000)]

# Output units, so the schema (and generated clients) say what each number means.
UsdPerHour = Annotated[float, Meta(description="USD per hour.")]
UsdPerMonth = Annotated[float, Meta(description="USD per month (730 hours).")]
ReqPerS = Annotated[float, Meta(description="Requests per second.")]
Millis = Annotated[float, Meta(description="Milliseconds.")]
Gigabytes = Annotated[float, Meta(description="Gigabytes (10^9 bytes).")]
Share = Annotated[float, Meta(description="Fraction between 0 and 1.")]
