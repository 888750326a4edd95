"""Conversions between ORM rows (or row dicts) and domain values."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from service.domain.catalog import GpuSpec, PricePoint, PricingKind
from service.store.models import GpuRow, PricePointRow

_GPU_FIELDS = tuple(GpuSpec.__dataclass_fields__)


def gpu_to_row_values(gpu: GpuSpec, *, revision: int, updated_at: datetime) -> dict[str, Any]:
    values: dict[str, Any] = {name: getattr(gpu, name) for name in _GPU_FIELDS}
    values["aliases"] = list(gpu.aliases)
    values["sources"] = list(gpu.sources)
    values["revision"] = revision
    values["updated_at"] = updated_at
    return values


def gpu_from_row(row: GpuRow) -> GpuSpec:
    values: dict[str, Any] = {name: getattr(row, name) for name in _GPU_FIELDS}
    values["aliases"] = tuple(row.aliases or ())
    values["sources"] = tuple(row.sources or ())
    return GpuSpec(**values)


def price_to_row_values(
    point: PricePoint, *, revision: int, ingested_at: datetime
) -> dict[str, Any]:
    return {
        "gpu_id": point.gpu_id,
        "provider": point.provider,
        "region": point.region,
        "kind": point.kind.value,
        "usd": point.usd,
        "instance_type": point.instance_type,
        "gpus_per_instance": point.gpus_per_instance,
        "observed_at": point.observed_at,
        "source": point.source,
        "ingested_at": ingested_at,
        "revision": revision,
    }


def price_from_row(row: PricePointRow) -> PricePoint:
    return PricePoint(
        gpu_id=row.gpu_id,
        provider=row.provider,
        region=row.region,
        kind=PricingKind(row.kind),
        usd=row.usd,
        instance_type=row.instance_type,
        gpus_per_instance=row.gpus_per_instance,
        observed_at=row.observed_at,
        source=row.source,
        ingested_at=row.ingested_at,
    )
