"""Wire types of the catalog endpoints and their conversions to and from domain values."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta

from service.api.schemas.common import (
    LongText,
    Slug,
    WireIn,
    WireOut,
    domain_values,
    with_fields_of,
)
from service.domain.catalog import (
    NAME_MAX_LENGTH,
    SLUG_MAX_LENGTH,
    CatalogSummary,
    GpuSpec,
    GpusPerInstance,
    IngestResult,
    PricePage,
    PricePoint,
    UsdPrice,
    observed_moment,
)
from service.domain.vocabulary import PriceKindName
from service.usecases.catalog import GpuListing


@with_fields_of(GpuSpec, omit=("id",))
class GpuSpecIn(WireIn, kw_only=True):
    """A GPU's datasheet spec (the id comes from the path): the ``GpuSpec`` fields with their
    limits and defaults (``service/domain/catalog.py``)."""

    def to_domain(self, gpu_id: str) -> GpuSpec:
        values: dict[str, Any] = msgspec.structs.asdict(self)
        values["aliases"] = tuple(dict.fromkeys(a.strip() for a in values["aliases"] if a.strip()))
        return GpuSpec(id=gpu_id, **values)


class ProviderPrice(WireOut, kw_only=True):
    provider: str
    region: str
    instance_type: str
    usd_per_gpu_hour: float
    observed_at: datetime


@with_fields_of(GpuSpec, output=True)
class GpuOut(WireOut, kw_only=True):
    """One GPU: every ``GpuSpec`` field (``has_nvlink`` included), then its cheapest current
    on-demand price per provider."""

    on_demand_prices: list[ProviderPrice]

    @classmethod
    def from_listing(cls, listing: GpuListing) -> GpuOut:
        return cls(
            **domain_values(listing.gpu),
            on_demand_prices=[
                ProviderPrice(
                    provider=p.provider,
                    region=p.region,
                    instance_type=p.instance_type,
                    usd_per_gpu_hour=p.usd,
                    observed_at=p.observed_at,
                )
                for p in listing.cheapest_on_demand.values()
            ],
        )


class GpuListOut(WireOut, kw_only=True):
    catalog_revision: int
    count: int
    gpus: list[GpuOut]


class GpuWriteOut(WireOut, kw_only=True):
    created: bool
    catalog_revision: int
    gpu: GpuOut


class PriceObservationIn(WireIn, kw_only=True):
    """One observed price. ``usd`` is per GPU-hour, or per card when ``kind`` is ``purchase``."""

    gpu: Annotated[str, Meta(min_length=1, max_length=64, description="GPU id or alias.")]
    provider: Slug
    region: Annotated[str, Meta(min_length=1, max_length=SLUG_MAX_LENGTH, examples=["us-east-1"])]
    kind: PriceKindName
    usd: UsdPrice
    instance_type: Annotated[str, Meta(min_length=1, max_length=NAME_MAX_LENGTH)] = "unspecified"
    gpus_per_instance: GpusPerInstance = 1
    observed_at: Annotated[
        datetime,
        Meta(
            tz=True,
            description="When the price was observed (with zone; from 2000 to 2100-01-01 UTC).",
        ),
    ]
    source: LongText = ""

    def to_domain(self, index: int) -> PricePoint:
        observed_at = observed_moment(self.observed_at, f"observations[{index}].observed_at")
        return PricePoint(
            gpu_id=self.gpu,
            provider=self.provider,
            region=self.region.strip(),
            kind=self.kind,
            usd=self.usd,
            instance_type=self.instance_type.strip(),
            gpus_per_instance=self.gpus_per_instance,
            observed_at=observed_at,
            source=self.source,
        )


class PriceBatchIn(WireIn, kw_only=True):
    observations: Annotated[
        list[PriceObservationIn],
        Meta(
            min_length=1, max_length=10_000, description="1 to 10,000 observations, all or nothing."
        ),
    ]


class IngestOut(WireOut, kw_only=True):
    inserted: int
    already_present: int
    catalog_revision: int

    @classmethod
    def from_domain(cls, result: IngestResult) -> IngestOut:
        return cls(
            inserted=result.inserted,
            already_present=result.already_present,
            catalog_revision=result.revision,
        )


class PriceOut(WireOut, kw_only=True):
    gpu: str
    provider: str
    region: str
    kind: PriceKindName
    usd: float
    unit: Literal["gpu_hour", "card"]
    instance_type: str
    gpus_per_instance: int
    observed_at: datetime
    ingested_at: datetime | None
    source: str

    @classmethod
    def from_domain(cls, p: PricePoint) -> PriceOut:
        return cls(
            gpu=p.gpu_id,
            provider=p.provider,
            region=p.region,
            kind=p.kind,
            usd=p.usd,
            unit="card" if p.kind == "purchase" else "gpu_hour",
            instance_type=p.instance_type,
            gpus_per_instance=p.gpus_per_instance,
            observed_at=p.observed_at,
            ingested_at=p.ingested_at,
            source=p.source,
        )


class PricePageOut(WireOut, kw_only=True):
    gpu: str
    items: list[PriceOut]
    next_cursor: str | None

    @classmethod
    def from_domain(cls, gpu_id: str, page: PricePage) -> PricePageOut:
        return cls(
            gpu=gpu_id,
            items=[PriceOut.from_domain(p) for p in page.items],
            next_cursor=page.next_cursor,
        )


class CatalogOut(WireOut, kw_only=True):
    catalog_revision: int
    updated_at: datetime
    gpus: int
    price_points: int
    offers: int
    providers: int
    newest_observed_at: datetime | None
    newest_ingested_at: datetime | None

    @classmethod
    def from_domain(cls, s: CatalogSummary) -> CatalogOut:
        return cls(
            catalog_revision=s.revision,
            updated_at=s.updated_at,
            gpus=s.gpus,
            price_points=s.price_points,
            offers=s.offers,
            providers=s.providers,
            newest_observed_at=s.newest_observed_at,
            newest_ingested_at=s.newest_ingested_at,
        )
