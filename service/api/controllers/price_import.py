"""``POST /v1/prices/import``: a cloud provider's price catalog file, as the raw request body.

    curl -X POST 'localhost:8000/v1/prices/import?cloud=aws' \\
      -H "Authorization: Bearer $KEY" -H 'Content-Type: text/csv' \\
      --data-binary @service/data/skypilot/aws/vms.csv

The body is the file itself (``text/csv``; ``text/plain`` and ``application/octet-stream`` are
read the same way), so ``curl --data-binary @file`` is the whole client. Mounted on the ingest
router: bodies up to ``GPUPLAN_MAX_INGEST_BODY_BYTES`` (413 beyond).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any

from litestar import Controller, Request, Response, post
from litestar.di import NamedDependency
from litestar.exceptions import ClientException
from litestar.openapi.datastructures import ResponseSpec
from litestar.openapi.spec import Example, OpenAPIMediaType, Operation, RequestBody, Schema
from litestar.openapi.spec.enums import OpenAPIType
from litestar.params import QueryParameter
from litestar.status_codes import HTTP_200_OK, HTTP_415_UNSUPPORTED_MEDIA_TYPE

from service.api.auth import admin_guard
from service.api.errors import PROBLEM_JSON
from service.api.headers import catalog_headers
from service.api.openapi_docs import problems, success
from service.api.schemas.common import Problem
from service.api.schemas.price_import import PriceImportOut
from service.domain.errors import InvalidInput
from service.domain.price_import import IMPORT_FORMATS, ImportFormat, SkyPilotCloud
from service.usecases.price_import import CLOUDS, SOURCE_LABEL_MAX, PriceImportService

CSV_MEDIA_TYPES = ("text/csv", "text/plain", "application/octet-stream")
_ISO_DATETIME = re.compile(r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}")
_EXAMPLE_CSV = (
    "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,Price,SpotPrice,"
    "Region,AvailabilityZone\n"
    "g6e.xlarge,L40S,1.0,4.0,32.0,\"{'Gpus': [{'Name': 'L40S', 'Manufacturer': 'NVIDIA', "
    "'Count': 1, 'MemoryInfo': {'SizeInMiB': 45776}}], 'TotalGpuMemoryInMiB': 45776}\","
    "1.861,0.6521,us-east-1,use1-az1\n"
)


@dataclass
class CsvBodyOperation(Operation):
    """The operation's request body: the CSV file (Litestar documents only decoded bodies)."""

    def __post_init__(self) -> None:
        self.request_body = RequestBody(
            required=True,
            description=(
                "One cloud's SkyPilot catalog `vms.csv` (catalogs/v7/<cloud>/vms.csv), as the raw "
                "body: `curl --data-binary @vms.csv -H 'Content-Type: text/csv'`."
            ),
            content={
                media: OpenAPIMediaType(
                    schema=Schema(type=OpenAPIType.STRING),
                    examples={"aws": Example(summary="Two AWS zones", value=_EXAMPLE_CSV)}
                    if media == "text/csv"
                    else None,
                )
                for media in CSV_MEDIA_TYPES
            },
        )


def _not_csv_problem() -> dict[int, ResponseSpec]:
    detail = "The body's Content-Type is not CSV (send text/csv)."
    return {
        415: ResponseSpec(
            data_container=Problem,
            generate_examples=False,
            description=detail,
            media_type=PROBLEM_JSON,
            examples=[
                Example(
                    summary=detail,
                    value={
                        "type": "https://gpuplan.dev/problems/unsupported-media-type",
                        "title": "Unsupported media type",
                        "status": 415,
                        "detail": "Content-Type 'application/json' is not CSV: send the file "
                        "as text/csv",
                    },
                )
            ],
        )
    }


def _body_text(request: Request[Any, Any, Any], body: bytes) -> str:
    content_type = request.headers.get("content-type")
    media = (content_type or "").split(";", 1)[0].strip().lower()
    if media and media not in CSV_MEDIA_TYPES:
        hint = (
            " (send the file itself as the body: curl --data-binary @vms.csv)"
            if media.startswith("multipart/")
            else ""
        )
        raise ClientException(
            status_code=HTTP_415_UNSUPPORTED_MEDIA_TYPE,
            detail=f"Content-Type {media!r} is not CSV: send the file as text/csv{hint}",
            extra={"field": "Content-Type"},
        )
    if not body.strip():
        raise InvalidInput("the body is empty: send the catalog file as the body", field="body")
    try:
        return body.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InvalidInput(
            f"the body is not UTF-8 text ({exc.reason} at byte {exc.start})", field="body"
        ) from None


class PriceImportController(Controller):
    """Mounted on the ingest router (larger bodies than the rest of the API)."""

    path = "/v1"
    tags = ("catalog",)

    @post(
        "/prices/import",
        operation_id="importPriceCatalog",
        operation_class=CsvBodyOperation,
        responses={
            **success(PriceImportOut, "price_import", "What the file gave and what was written."),
            **problems(400, 401, 403, 413, 422, 429, 503),
            **_not_csv_problem(),
        },
        summary="Import a cloud's price catalog file (admin)",
        guards=[admin_guard],
        status_code=HTTP_200_OK,
        security=[{"bearerAuth": []}],
        opt={"ingest": True},
    )
    async def import_catalog(
        self,
        request: Request[Any, Any, Any],
        price_import: NamedDependency[PriceImportService],
        cloud: Annotated[
            SkyPilotCloud,
            QueryParameter(
                description=f"The cloud the file prices: {', '.join(CLOUDS)}.",
                examples=[Example(summary="AWS", value="aws")],
            ),
        ],
        format: Annotated[  # the query parameter is named format
            ImportFormat,
            QueryParameter(description=f"Source format: {', '.join(IMPORT_FORMATS)}."),
        ] = "skypilot",
        observed_at: Annotated[
            datetime | None,
            QueryParameter(
                description="When the prices were read (ISO 8601 with zone). Default: now, or "
                "the date an earlier import of the same file was given (so it inserts nothing).",
                examples=[Example(summary="A morning read", value="2026-12-01T06:00:00Z")],
            ),
        ] = None,
        source: Annotated[
            str | None,
            QueryParameter(
                max_length=SOURCE_LABEL_MAX,
                description="Provenance text every observation's source starts with "
                "(default: format, cloud and the file's SHA-256).",
            ),
        ] = None,
    ) -> Response[PriceImportOut]:
        """One cloud's SkyPilot `vms.csv` as offers: zones merged into one offer per region
        (lowest price), whole instances priced per GPU-hour with their GPU count, spot kept as
        `spot`, GCP host and accelerator prices added, the source's known defects handled;
        every row left out or adjusted is counted by reason. All or nothing; idempotent."""
        raw = request.query_params.get("observed_at")
        if raw is not None and not _ISO_DATETIME.match(raw):
            raise InvalidInput(
                "observed_at must be an ISO 8601 date-time with a zone, e.g. 2026-12-01T06:00:00Z",
                field="observed_at",
            )
        text = _body_text(request, await request.body())
        result = await price_import.import_catalog(
            text, fmt=format, cloud=cloud, observed_at=observed_at, source=source
        )
        return Response(
            PriceImportOut.from_domain(format, result),
            headers=catalog_headers(result.revision, False),
        )
