"""Catalog endpoints: GPUs, price history, price ingest, catalog summary."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Any

from litestar import Controller, Request, Response, get, post, put
from litestar.di import NamedDependency
from litestar.params import PathParameter, QueryParameter
from litestar.status_codes import HTTP_200_OK, HTTP_201_CREATED

from service.api.auth import admin_guard
from service.api.headers import catalog_headers
from service.api.openapi_docs import NON_NEGATIVE, json_body, problems, success
from service.api.schemas.catalog import (
    CatalogOut,
    GpuListOut,
    GpuOut,
    GpuSpecIn,
    GpuWriteOut,
    IngestOut,
    PriceBatchIn,
    PricePageOut,
)
from service.domain.catalog import (
    GPU_ID_PATTERN,
    MEMORY_GB_MAX,
    NAME_MAX_LENGTH,
    PRICE_PAGE_MAX,
    PRICE_PAGE_SIZE,
    SLUG_MAX_LENGTH,
    TOKEN_MAX_LENGTH,
    PriceQuery,
)
from service.domain.errors import InvalidInput
from service.domain.moments import WINDOW, to_utc
from service.domain.vocabulary import PriceKindName
from service.usecases.catalog import CatalogService, GpuFilter

CURSOR_MAX_LENGTH = 256


_ISO_DATETIME = re.compile(r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}")


def _require_iso_datetime(name: str, raw: str | None) -> None:
    """Moments in query strings are ISO 8601 date-times, as documented; the framework would
    also read a bare number as a Unix timestamp, which nobody writing ``until=0`` means."""
    if raw is not None and not _ISO_DATETIME.match(raw):
        raise InvalidInput(
            f"{name} must be an ISO 8601 date-time with a zone, e.g. 2026-06-01T00:00:00Z",
            field=name,
        )


class CatalogController(Controller):
    path = "/v1"
    tags = ("catalog",)

    @get(
        "/gpus",
        operation_id="listGpus",
        responses={
            **success(
                GpuListOut, "gpu_list", "GPUs with their cheapest on-demand price per provider."
            ),
            **problems(400, 422, 503),
        },
        summary="List GPUs with current on-demand prices",
    )
    async def list_gpus(
        self,
        catalog: NamedDependency[CatalogService],
        vendor: Annotated[
            str | None,
            QueryParameter(max_length=SLUG_MAX_LENGTH, description="e.g. NVIDIA, AMD, Intel"),
        ] = None,
        min_memory_gb: Annotated[
            float | None,
            QueryParameter(
                ge=0,
                schema_extra=NON_NEGATIVE,
                le=MEMORY_GB_MAX,
                description="Memory per card at least this many GB.",
            ),
        ] = None,
        has_nvlink: Annotated[
            bool | None,
            QueryParameter(
                description="Only cards with (true) or without (false) a scale-up link."
            ),
        ] = None,
        form_factor: Annotated[
            str | None,
            QueryParameter(max_length=TOKEN_MAX_LENGTH, description="SXM, PCIe, OAM ..."),
        ] = None,
    ) -> Response[GpuListOut]:
        """All GPUs in the catalog, filtered, each with its cheapest current on-demand price per
        provider (USD per GPU-hour)."""
        result = await catalog.list_gpus(
            GpuFilter(
                vendor=vendor,
                min_memory_gb=min_memory_gb,
                has_nvlink=has_nvlink,
                form_factor=form_factor,
            )
        )
        body = GpuListOut(
            catalog_revision=result.revision,
            count=len(result.gpus),
            gpus=[GpuOut.from_listing(g) for g in result.gpus],
        )
        return Response(body, headers=catalog_headers(result.revision, result.stale))

    @get(
        "/gpus/{gpu_id:str}",
        operation_id="getGpu",
        responses={**success(GpuOut, "gpu", "One GPU."), **problems(400, 404, 422, 503)},
        summary="One GPU by id or alias",
    )
    async def get_gpu(
        self,
        catalog: NamedDependency[CatalogService],
        gpu_id: Annotated[
            str,
            PathParameter(
                max_length=NAME_MAX_LENGTH, description="GPU id or alias (case-insensitive)."
            ),
        ],
    ) -> Response[GpuOut]:
        """One GPU by id or alias. An unknown name answers 404 with the closest ids."""
        result = await catalog.get_gpu(gpu_id)
        return Response(
            GpuOut.from_listing(result.listing),
            headers=catalog_headers(result.revision, result.stale),
        )

    @put(
        "/gpus/{gpu_id:str}",
        operation_id="putGpu",
        responses={
            **success(GpuWriteOut, "gpu_write", "Replaced."),
            **success(GpuWriteOut, "gpu_write", "Created.", status=201),
            **problems(400, 401, 403, 409, 413, 415, 422, 429, 503),
        },
        summary="Create or replace a GPU spec (admin)",
        guards=[admin_guard],
        status_code=HTTP_200_OK,
        security=[{"bearerAuth": []}],
    )
    async def put_gpu(
        self,
        catalog: NamedDependency[CatalogService],
        gpu_id: Annotated[
            str,
            QueryParameter(pattern=GPU_ID_PATTERN, description="Lowercase slug, e.g. h100-sxm."),
        ],
        data: Annotated[GpuSpecIn, json_body("gpu_spec", "A GPU spec")],
    ) -> Response[GpuWriteOut]:
        """Creates the GPU (201) or replaces its whole spec (200); bumps the catalog revision."""
        spec = data.to_domain(gpu_id)
        result = await catalog.put_gpu(spec)
        detail = await catalog.get_gpu(gpu_id)
        body = GpuWriteOut(
            created=result.created,
            catalog_revision=result.revision,
            gpu=GpuOut.from_listing(detail.listing),
        )
        return Response(
            body,
            status_code=HTTP_201_CREATED if result.created else HTTP_200_OK,
            headers=catalog_headers(result.revision, False),
        )

    @get(
        "/gpus/{gpu_id:str}/prices",
        operation_id="listGpuPrices",
        responses={
            **success(PricePageOut, "prices", "Observations, newest first."),
            **problems(400, 404, 422, 503),
        },
        summary="Price history of one GPU",
    )
    async def list_prices(
        self,
        catalog: NamedDependency[CatalogService],
        request: Request[Any, Any, Any],
        gpu_id: Annotated[
            str, PathParameter(max_length=NAME_MAX_LENGTH, description="GPU id or alias.")
        ],
        provider: Annotated[str | None, QueryParameter(max_length=SLUG_MAX_LENGTH)] = None,
        region: Annotated[str | None, QueryParameter(max_length=SLUG_MAX_LENGTH)] = None,
        kind: Annotated[PriceKindName | None, QueryParameter(description="Pricing kind.")] = None,
        since: Annotated[
            datetime | None,
            QueryParameter(description=f"Observed at or after (ISO 8601 with zone, {WINDOW})."),
        ] = None,
        until: Annotated[
            datetime | None,
            QueryParameter(description=f"Observed at or before (ISO 8601 with zone, {WINDOW})."),
        ] = None,
        limit: Annotated[
            int, QueryParameter(ge=1, le=PRICE_PAGE_MAX, description="Page size.")
        ] = PRICE_PAGE_SIZE,
        cursor: Annotated[
            str | None,
            QueryParameter(
                max_length=CURSOR_MAX_LENGTH, description="`next_cursor` of the previous page."
            ),
        ] = None,
    ) -> PricePageOut:
        """Observations newest first, filtered; follow `next_cursor` for the next page."""
        for name in ("since", "until"):
            _require_iso_datetime(name, request.query_params.get(name))
        query = PriceQuery(
            provider=provider,
            region=region,
            kind=kind,
            since=to_utc(since, "since") if since is not None else None,
            until=to_utc(until, "until") if until is not None else None,
            limit=limit,
            cursor=cursor,
        )
        resolved, page = await catalog.price_history(gpu_id, query)
        return PricePageOut.from_domain(resolved, page)

    @get(
        "/catalog",
        operation_id="getCatalog",
        responses={
            **success(CatalogOut, "catalog", "Revision and counts."),
            **problems(400, 503),
        },
        summary="Catalog revision and counts",
    )
    async def summary(self, catalog: NamedDependency[CatalogService]) -> CatalogOut:
        """Current revision, counts and the newest price observation."""
        return CatalogOut.from_domain(await catalog.summary())


class PriceIngestController(Controller):
    """Mounted on its own router so it can accept larger bodies than the rest of the API."""

    path = "/v1"
    tags = ("catalog",)

    @post(
        "/prices",
        operation_id="ingestPrices",
        responses={
            **success(IngestOut, "ingest", "Counts and the catalog revision."),
            **problems(400, 401, 403, 404, 413, 415, 422, 429, 503),
        },
        summary="Bulk-ingest price observations (admin)",
        guards=[admin_guard],
        status_code=HTTP_200_OK,
        security=[{"bearerAuth": []}],
        opt={"ingest": True},
    )
    async def ingest_prices(
        self,
        catalog: NamedDependency[CatalogService],
        data: Annotated[PriceBatchIn, json_body("price_batch", "One observation")],
    ) -> Response[IngestOut]:
        """Up to 10,000 observations, all or nothing, idempotent on (gpu, provider, region,
        kind, instance type, observed_at). Answers counts and the new catalog revision."""
        points = [o.to_domain(i) for i, o in enumerate(data.observations)]
        result = await catalog.ingest(points)
        return Response(
            IngestOut.from_domain(result), headers=catalog_headers(result.revision, False)
        )
