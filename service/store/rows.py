"""Conversions between ORM rows (or row dicts) and domain values, field by field from the
domain definitions (a new ``GpuSpec`` field needs no change here)."""

from __future__ import annotations

from dataclasses import fields
from datetime import datetime
from typing import Any

from service.domain.catalog import GpuSpec, PriceGap, PricePoint
from service.domain.vocabulary import PRICE_KIND_NAMES, one_of
from service.store.models import GpuRow, PriceGapRow, PricePointRow, stored_spec_fields

_GPU_FIELDS = stored_spec_fields()
_PRICE_FIELDS = tuple(f.name for f in fields(PricePoint))


def gpu_to_row_values(gpu: GpuSpec, *, revision: int, updated_at: datetime) -> dict[str, Any]:
    values: dict[str, Any] = {name: _to_column(getattr(gpu, name)) for name in _GPU_FIELDS}
    values["revision"] = revision
    values["updated_at"] = updated_at
    return values


def gpu_from_row(row: GpuRow) -> GpuSpec:
    values: dict[str, Any] = {name: _from_column(getattr(row, name)) for name in _GPU_FIELDS}
    return GpuSpec(**values)


def price_to_row_values(
    point: PricePoint, *, revision: int, ingested_at: datetime
) -> dict[str, Any]:
    values: dict[str, Any] = {name: getattr(point, name) for name in _PRICE_FIELDS}
    values["ingested_at"] = ingested_at
    values["revision"] = revision
    return values


def price_from_row(row: PricePointRow) -> PricePoint:
    values: dict[str, Any] = {name: getattr(row, name) for name in _PRICE_FIELDS}
    values["kind"] = one_of(PRICE_KIND_NAMES, row.kind, "price kind")
    return PricePoint(**values)


def gap_to_row_values(gap: PriceGap, *, revision: int) -> dict[str, Any]:
    return {"gpu_id": gap.gpu_id, "kind": gap.kind, "reason": gap.reason, "revision": revision}


def gap_from_row(row: PriceGapRow) -> PriceGap:
    return PriceGap(row.gpu_id, one_of(PRICE_KIND_NAMES, row.kind, "price kind"), row.reason)


def _to_column(value: Any) -> Any:
    """Tuples are stored as JSON arrays."""
    return list(value) if isinstance(value, tuple) else value


def _from_column(value: Any) -> Any:
    """JSON arrays come back as the domain's tuples."""
    return tuple(value) if isinstance(value, list) else value
