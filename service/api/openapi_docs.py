"""What the OpenAPI document says beyond the types: problem responses per operation, and
request/response examples (real answers of the service; a test validates each against its
schema). The GPU examples are built from the bundled seed catalog when the document is built,
so they carry every ``GpuSpec`` field; the others are in ``service/api/examples/``, where the
estimate and plan answers are written by ``service.api_examples`` (``make openapi``) from the
service's answers to the request examples, and a test fails when they drift."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import msgspec
from litestar._openapi.schema_generation import SchemaCreator
from litestar._openapi.schema_generation.plugins.struct import StructSchemaPlugin
from litestar.datastructures import ResponseHeader
from litestar.enums import RequestEncodingType
from litestar.openapi.datastructures import ResponseSpec
from litestar.openapi.spec import Example, Operation, Schema
from litestar.openapi.spec.base import BaseSchemaObject
from litestar.params import Body
from litestar.typing import FieldDefinition

from service.api.errors import PROBLEM_JSON
from service.api.json_body import MAX_JSON_DEPTH
from service.api.schemas.catalog import GpuListOut, GpuOut, GpuWriteOut
from service.api.schemas.common import Problem
from service.usecases.seed_catalog import seed_listing

_DESCRIPTIONS = {
    400: (
        f"The body is not valid JSON, nests deeper than {MAX_JSON_DEPTH} levels, gives a key "
        "twice or holds "
        "NaN, Infinity or a number beyond the float range; or the query string names a "
        "parameter this operation does not take (`suggestions` holds the closest valid name) "
        "or gives one twice; `field` names where."
    ),
    401: "No `Authorization: Bearer <admin key>` header (writes only).",
    403: "The key is not an admin key, or writes are disabled.",
    404: (
        "An id or alias names nothing; `suggestions` lists the closest ids (an unknown model "
        "with none close: presets of its family or size, else the popular ones)."
    ),
    409: "The write conflicts with the catalog (an alias another GPU owns).",
    413: "The body is larger than this endpoint accepts.",
    415: "The body's Content-Type is not JSON (send application/json).",
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


def _seed_gpu(gpu_id: str) -> GpuOut:
    """A bundled GPU as ``GET /v1/gpus/{gpu_id}`` answers it on a freshly seeded catalog."""
    return GpuOut.from_listing(seed_listing(gpu_id))


_SEED_EXAMPLES: dict[str, Callable[[], msgspec.Struct]] = {
    "gpu": lambda: _seed_gpu("h100-sxm"),
    "gpu_list": lambda: GpuListOut(
        catalog_revision=1, count=2, gpus=[_seed_gpu("mi300x"), _seed_gpu("mi325x")]
    ),
    "gpu_write": lambda: GpuWriteOut(created=False, catalog_revision=3, gpu=_seed_gpu("h100-sxm")),
}
"""Examples built from the seed catalog (``service/data/gpus.csv`` and ``prices.csv``)."""


@cache
def example(name: str) -> Any:
    """The example body ``name``, wrapped to keep its nulls: built from the seed catalog for the
    GPU answers, else read from ``service/api/examples/<name>.json``."""
    build = _SEED_EXAMPLES.get(name)
    if build is not None:
        return Verbatim(json.loads(msgspec.json.encode(build())))  # the JSON the service sends
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
        415: "unsupported-media-type",
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

_ETAG_HEADER = ResponseHeader(
    name="ETag",
    description='The plan id, quoted ("..."); send it in If-None-Match for a 304.',
    documentation_only=True,
)
PRICE_AGE_HEADERS = [
    ResponseHeader(
        name="X-Prices-Age-Days",
        description=(
            "Days from the oldest price the fleet is costed at to today (UTC dates); absent "
            "without a fleet and for a plan pinned to a past `as_of`. Not part of the plan: "
            "the plan id names the same plan on every day."
        ),
        documentation_only=True,
    ),
    ResponseHeader(
        name="X-Prices-Stale",
        description=(
            "`true` when X-Prices-Age-Days is beyond GPUPLAN_PRICE_MAX_AGE_DAYS; the text "
            "rendering then opens with a warning. Import a current catalog before buying."
        ),
        documentation_only=True,
    ),
]
PLAN_HEADERS = [
    _ETAG_HEADER,
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
    *PRICE_AGE_HEADERS,
]
STORED_PLAN_HEADERS = [_ETAG_HEADER, *PRICE_AGE_HEADERS]


@cache
def _msgspec_component(struct: type) -> dict[str, Any]:
    """msgspec's own JSON Schema for ``struct`` (references point at components)."""
    _, components = msgspec.json.schema_components(
        [struct], ref_template="#/components/schemas/{name}"
    )
    return dict(components[struct.__name__])


class ExactStructSchemaPlugin(StructSchemaPlugin):
    """Component schemas for msgspec Structs that say exactly what msgspec enforces.

    Litestar's own conversion drops bounds whose value is falsy (``gt=0``, ``ge=0``) and every
    constraint on list items, dict keys and values and union members, so a schema-valid
    request could be refused. Litestar still registers the components (and their nested
    structs); their properties and required lists are replaced by msgspec's JSON Schema, which
    is the validator's own description. Request structs that refuse unknown fields also get
    ``additionalProperties: false``. (Subclasses a private Litestar class; the OpenAPI tests
    and the schema fuzz test pin the result.)"""

    def to_openapi_schema(
        self, field_definition: FieldDefinition, schema_creator: SchemaCreator
    ) -> Schema:
        schema = super().to_openapi_schema(field_definition, schema_creator)
        struct = field_definition.type_
        exact = _msgspec_component(struct)
        schema.properties = {
            name: Verbatim(prop)  # type: ignore[misc]
            for name, prop in exact.get("properties", {}).items()
        }
        schema.required = exact.get("required") or None
        config = getattr(struct, "__struct_config__", None)
        if config is not None and config.forbid_unknown_fields:
            schema.additional_properties = False
        return schema


FLAT_MEDIA_TYPE = "application/vnd.gpuplan.flat+json"


class PlanOperation(Operation):
    """A plan operation's 200 answer in its three renderings (``?format=`` or ``Accept``)."""

    def to_schema(self) -> dict[str, Any]:
        schema = super().to_schema()
        ok = schema.get("responses", {}).get("200")
        if ok is not None:
            content = ok.setdefault("content", {})
            content["text/plain"] = {
                "schema": {
                    "type": "string",
                    "description": "The plan as an aligned table for a terminal "
                    "(?format=text or Accept: text/plain).",
                }
            }
            content[FLAT_MEDIA_TYPE] = {
                "schema": {
                    "type": "object",
                    "additionalProperties": {"type": "string"},
                    "description": "Every value a string (?format=flat), for Terraform's "
                    "external data source: plan totals plus <field>_<i> for fleet line i.",
                },
                "example": example("plan_flat").value,
            }
        return schema


# Litestar leaves falsy bounds (gt=0, ge=0) out of parameter schemas; ``schema_extra`` puts them
# back (it is applied as given).
POSITIVE: dict[str, Any] = {"exclusive_minimum": 0}
NON_NEGATIVE: dict[str, Any] = {"minimum": 0}
