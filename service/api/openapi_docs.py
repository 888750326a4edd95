"""What the OpenAPI document says beyond the types: problem responses per operation, and
request/response examples (real answers of the service, in ``service/api/examples/``; a test
validates each against its schema)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from litestar._openapi.schema_generation import SchemaCreator
from litestar._openapi.schema_generation.plugins.struct import StructSchemaPlugin
from litestar.datastructures import ResponseHeader
from litestar.enums import RequestEncodingType
from litestar.openapi.datastructures import ResponseSpec
from litestar.openapi.spec import Example, Schema
from litestar.openapi.spec.base import BaseSchemaObject
from litestar.params import Body
from litestar.typing import FieldDefinition

from service.api.errors import PROBLEM_JSON
from service.api.schemas.common import Problem

_DESCRIPTIONS = {
    400: "The body is not valid JSON.",
    401: "No `Authorization: Bearer <admin key>` header (writes only).",
    403: "The key is not an admin key, or writes are disabled.",
    404: "An id or alias names nothing; `suggestions` lists the closest ids.",
    409: "The write conflicts with the catalog (an alias another GPU owns).",
    413: "The body is larger than this endpoint accepts.",
    422: "A value is out of range, of the wrong type, unknown, or inconsistent; `field` names it.",
    429: "Too many writes from this client; retry after `Retry-After` seconds.",
    503: "A dependency is down or the planner is at capacity; retry after `Retry-After` seconds.",
}


@dataclass
class Verbatim(BaseSchemaObject):
    """An example value emitted exactly as given. Litestar drops ``None`` from every dict it
    serialises into the schema, which would turn a valid ``"reason": null`` example into one
    missing a required field; this object keeps the JSON as it is."""

    value: Any

    def to_schema(self) -> Any:
        return self.value


@cache
def example(name: str) -> Any:
    """The example body ``service/api/examples/<name>.json``, wrapped to keep its nulls."""
    text = resources.files("service.api").joinpath("examples", f"{name}.json").read_text()
    return Verbatim(json.loads(text))


def _problem_example(status: int) -> Any:
    base = dict(example("problem_422").value)
    if status == 404:
        return example("problem_404")
    if status == 422:
        return example("problem_422")
    return {
        "type": f"https://gpuplan.dev/problems/{_slug(status)}",
        "title": _slug(status).replace("-", " ").capitalize(),
        "status": status,
        "detail": _DESCRIPTIONS[status],
        "instance": base["instance"],
        "request_id": base["request_id"],
    }


def _slug(status: int) -> str:
    return {
        400: "malformed-body",
        401: "authentication-required",
        403: "forbidden",
        409: "conflict",
        413: "request-body-too-large",
        429: "too-many-requests",
        503: "unavailable",
    }[status]


def problems(*statuses: int) -> dict[int, ResponseSpec]:
    """RFC 9457 problem responses for ``statuses`` (``application/problem+json``)."""
    return {
        status: ResponseSpec(
            data_container=Problem,
            generate_examples=False,
            description=_DESCRIPTIONS[status],
            media_type=PROBLEM_JSON,
            examples=[Example(summary=_DESCRIPTIONS[status], value=_problem_example(status))],
        )
        for status in statuses
    }


def success(
    container: Any, name: str, description: str, status: int = 200
) -> dict[int, ResponseSpec]:
    """The success response with a real example body."""
    return {
        status: ResponseSpec(
            data_container=container,
            generate_examples=False,
            description=description,
            examples=[Example(summary=description, value=example(name))],
        )
    }


def json_body(name: str, summary: str) -> Any:
    """A ``Body`` marker for a JSON request with a real example (use in ``Annotated``)."""
    return Body(
        media_type=RequestEncodingType.JSON,
        examples=[Example(summary=summary, value=example(name))],
    )


NOT_MODIFIED = {
    304: ResponseSpec(
        data_container=None,
        generate_examples=False,
        description="Not modified: `If-None-Match` named this plan's id.",
    )
}

PLAN_HEADERS = [
    ResponseHeader(
        name="ETag",
        description='The plan id, quoted ("..."); send it in If-None-Match for a 304.',
        documentation_only=True,
    ),
    ResponseHeader(
        name="X-Cache",
        description="hit, miss or bypass (the plan cache was unreachable; solved anyway).",
        documentation_only=True,
    ),
    ResponseHeader(
        name="X-Catalog-Revision",
        description="Catalog revision the answer was computed at.",
        documentation_only=True,
    ),
    ResponseHeader(
        name="X-Catalog-Stale",
        description="`true` when the database is unreachable and the last loaded catalog answered.",
        documentation_only=True,
    ),
]


class ClosedStructSchemaPlugin(StructSchemaPlugin):
    """Litestar's msgspec schema, plus ``additionalProperties: false`` for request structs that
    refuse unknown fields (``forbid_unknown_fields``), so generated clients and fuzzers know an
    extra field is an error. (Subclasses a private Litestar class; the OpenAPI tests pin the
    result.)"""

    def to_openapi_schema(
        self, field_definition: FieldDefinition, schema_creator: SchemaCreator
    ) -> Schema:
        schema = super().to_openapi_schema(field_definition, schema_creator)
        config = getattr(field_definition.type_, "__struct_config__", None)
        if config is not None and config.forbid_unknown_fields:
            schema.additional_properties = False
        return schema
