"""Wire types of the catalog endpoints and their conversions to and from domain values."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Literal

import msgspec
from msgspec import Meta

from service.api.schemas.common import LongText, Name, Slug, WireIn, WireOut
from service.domain.catalog import GpuSpec, PricePoint, PricingKind
from service.domain.errors import InvalidInput
from service.domain.vocabulary import PriceKindName
from service.store.repositories import CatalogSummary, IngestResult, PricePage
from service.usecases.catalog import GpuListing

Tflops = (
    Annotated[
        float,
        Meta(ge=0, le=1e6, description="Dense peak tensor throughput, TFLOPS (null: unsupported)."),
    ]
    | None
)


class GpuSpecIn(WireIn, kw_only=True):
    """A GPU's datasheet spec (the id comes from the path)."""

    vendor: Name
    name: Name
    architecture: Annotated[
        str,
        Meta(
            min_length=1,
            max_length=128,
            description="Starts with the generation, e.g. 'Hopper (GH100)'.",
        ),
    ]
    launch_year: Annotated[int, Meta(ge=1990, le=2100)]
    memory_gb: Annotated[float, Meta(gt=0, le=100_000, description="Memory per card, GB.")]
    memory_type: Annotated[str, Meta(min_length=1, max_length=32, examples=["HBM3e"])]
    memory_bandwidth_gbps: Annotated[
        float, Meta(gt=0, le=1e6, description="Memory bandwidth per card, GB/s.")
    ]
    fp32_tflops: Tflops = None
    tf32_tflops: Tflops = None
    fp16_tflops: Tflops = None
    fp8_tflops: Tflops = None
    fp4_tflops: Tflops = None
    int8_tops: Tflops = None
    tdp_w: Annotated[float, Meta(gt=0, le=100_000, description="Board power, W.")] | None = None
    interconnect: Annotated[str, Meta(max_length=128)] = "PCIe"
    interconnect_bandwidth_gbps: Annotated[
        float,
        Meta(
            ge=0,
            le=1e6,
            description="Scale-up link per card, both directions, GB/s (0: PCIe only).",
        ),
    ] = 0.0
    nvlink_domain: Annotated[
        int, Meta(ge=1, le=4096, description="Most cards one tensor-parallel group may span.")
    ] = 1
    pcie_gen: Annotated[int, Meta(ge=1, le=8)] = 4
    form_factor: Annotated[str, Meta(min_length=1, max_length=32, examples=["SXM", "PCIe"])] = (
        "PCIe"
    )
    mig_instances: Annotated[int, Meta(ge=0, le=64)] = 0
    aliases: Annotated[list[Name], Meta(max_length=32)] = msgspec.field(default_factory=list)
    sources: Annotated[list[LongText], Meta(max_length=32)] = msgspec.field(default_factory=list)

    def to_domain(self, gpu_id: str) -> GpuSpec:
        return GpuSpec(
            id=gpu_id,
            vendor=self.vendor,
            name=self.name,
            architecture=self.architecture,
            launch_year=self.launch_year,
            memory_gb=self.memory_gb,
            memory_type=self.memory_type,
            memory_bandwidth_gbps=self.memory_bandwidth_gbps,
            fp32_tflops=self.fp32_tflops,
            tf32_tflops=self.tf32_tflops,
            fp16_tflops=self.fp16_tflops,
            fp8_tflops=self.fp8_tflops,
            fp4_tflops=self.fp4_tflops,
            int8_tops=self.int8_tops,
            tdp_w=self.tdp_w,
            interconnect=self.interconnect,
            interconnect_bandwidth_gbps=self.interconnect_bandwidth_gbps,
            nvlink_domain=self.nvlink_domain,
            pcie_gen=self.pcie_gen,
            form_factor=self.form_factor,
            mig_instances=self.mig_instances,
            aliases=tuple(dict.fromkeys(a.strip() for a in self.aliases if a.strip())),
            sources=tuple(self.sources),
        )


class ProviderPrice(WireOut, kw_only=True):
    provider: str
    region: str
    instance_type: str
    usd_per_gpu_hour: float
    observed_at: datetime


class GpuOut(WireOut, kw_only=True):
    id: str
    vendor: str
    name: str
    architecture: str
    launch_year: int
    memory_gb: float
    memory_type: str
    memory_bandwidth_gbps: float
    fp32_tflops: float | None
    tf32_tflops: float | None
    fp16_tflops: float | None
    fp8_tflops: float | None
    fp4_tflops: float | None
    int8_tops: float | None
    tdp_w: float | None
    interconnect: str
    interconnect_bandwidth_gbps: float
    has_nvlink: bool
    nvlink_domain: int
    pcie_gen: int
    form_factor: str
    mig_instances: int
    aliases: list[str]
    sources: list[str]
    on_demand_prices: list[ProviderPrice]

    @classmethod
    def from_listing(cls, listing: GpuListing) -> GpuOut:
        g = listing.gpu
        return cls(
            id=g.id,
            vendor=g.vendor,
            name=g.name,
            architecture=g.architecture,
            launch_year=g.launch_year,
            memory_gb=g.memory_gb,
            memory_type=g.memory_type,
            memory_bandwidth_gbps=g.memory_bandwidth_gbps,
            fp32_tflops=g.fp32_tflops,
            tf32_tflops=g.tf32_tflops,
            fp16_tflops=g.fp16_tflops,
            fp8_tflops=g.fp8_tflops,
            fp4_tflops=g.fp4_tflops,
            int8_tops=g.int8_tops,
            tdp_w=g.tdp_w,
            interconnect=g.interconnect,
            interconnect_bandwidth_gbps=g.interconnect_bandwidth_gbps,
            has_nvlink=g.has_nvlink,
            nvlink_domain=g.nvlink_domain,
            pcie_gen=g.pcie_gen,
            form_factor=g.form_factor,
            mig_instances=g.mig_instances,
            aliases=list(g.aliases),
            sources=list(g.sources),
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
    region: Annotated[str, Meta(min_length=1, max_length=64, examples=["us-east-1"])]
    kind: PriceKindName
    usd: Annotated[
        float, Meta(gt=0, le=10_000_000, description="USD per GPU-hour (per card for purchase).")
    ]
    instance_type: Annotated[str, Meta(min_length=1, max_length=128)] = "unspecified"
    gpus_per_instance: Annotated[
        int, Meta(ge=1, le=1024, description="GPUs in the priced instance.")
    ] = 1
    observed_at: Annotated[
        datetime, Meta(tz=True, description="When the price was observed (with zone).")
    ]
    source: LongText = ""

    def to_domain(self, index: int) -> PricePoint:
        if self.observed_at.year < 2000:
            raise InvalidInput(
                "observed_at must be after 2000", field=f"observations[{index}].observed_at"
            )
        return PricePoint(
            gpu_id=self.gpu,
            provider=self.provider,
            region=self.region.strip(),
            kind=PricingKind(self.kind),
            usd=self.usd,
            instance_type=self.instance_type.strip(),
            gpus_per_instance=self.gpus_per_instance,
            observed_at=self.observed_at.astimezone(UTC),
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
            kind=p.kind.value,
            usd=p.usd,
            unit="card" if p.kind is PricingKind.PURCHASE else "gpu_hour",
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
