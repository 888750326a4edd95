"""The catalog's CSV formats: the bundled seed files and ``gpuplan catalog import/export``.

``gpus.csv`` columns are the ``GpuSpec`` fields (``aliases`` and ``sources`` separated by ``|``).
``prices.csv`` columns: ``gpu_id,provider,region,kind,usd,instance_type,gpus_per_instance,
observed_at,source``. Parsers take text and return domain values; a bad cell raises
``InvalidInput`` naming the line and column.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator
from dataclasses import fields
from datetime import UTC, datetime
from importlib import resources

from service.domain.catalog import GpuSpec, PricePoint, PricingKind
from service.domain.errors import InvalidInput

GPU_COLUMNS = tuple(f.name for f in fields(GpuSpec))
PRICE_COLUMNS = (
    "gpu_id",
    "provider",
    "region",
    "kind",
    "usd",
    "instance_type",
    "gpus_per_instance",
    "observed_at",
    "source",
)
_OPTIONAL_FLOATS = {
    "fp32_tflops",
    "tf32_tflops",
    "fp16_tflops",
    "fp8_tflops",
    "fp4_tflops",
    "int8_tops",
    "tdp_w",
}
_FLOATS = {"memory_gb", "memory_bandwidth_gbps", "interconnect_bandwidth_gbps"}
_INTS = {"launch_year", "nvlink_domain", "pcie_gen", "mig_instances"}
_LISTS = {"aliases", "sources"}


def parse_timestamp(raw: str) -> datetime:
    """ISO-8601 with a zone (``Z`` allowed); a bare date means midnight UTC."""
    text = raw.strip()
    if len(text) == 10:
        text += "T00:00:00+00:00"
    value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if value.tzinfo is None:
        raise ValueError("timestamp needs a zone, e.g. 2026-06-03T00:00:00Z")
    return value.astimezone(UTC)


def format_timestamp(value: datetime) -> str:
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _rows(text: str, expected: tuple[str, ...], what: str) -> Iterator[tuple[int, dict[str, str]]]:
    reader = csv.DictReader(io.StringIO(text))
    header = tuple(reader.fieldnames or ())
    missing = [c for c in expected if c not in header]
    if missing:
        raise InvalidInput(f"{what}: missing columns {', '.join(missing)}", field="header")
    for number, row in enumerate(reader, start=2):
        yield number, {k: (v or "").strip() for k, v in row.items() if k is not None}


def parse_gpus_csv(text: str) -> list[GpuSpec]:
    """Parse ``gpus.csv`` text into specs."""
    specs: list[GpuSpec] = []
    for line, row in _rows(text, GPU_COLUMNS, "gpus.csv"):
        values: dict[str, object] = {}
        for column in GPU_COLUMNS:
            raw = row[column]
            try:
                if column in _OPTIONAL_FLOATS:
                    values[column] = float(raw) if raw else None
                elif column in _FLOATS:
                    values[column] = float(raw)
                elif column in _INTS:
                    values[column] = int(raw) if raw else 0
                elif column in _LISTS:
                    values[column] = tuple(p.strip() for p in raw.split("|") if p.strip())
                else:
                    values[column] = raw
            except ValueError as exc:
                raise InvalidInput(f"gpus.csv line {line}: {column}: {exc}", field=column) from exc
        specs.append(GpuSpec(**values))  # type: ignore[arg-type]
    return specs


def parse_prices_csv(text: str, *, ingested_at: datetime | None = None) -> list[PricePoint]:
    """Parse ``prices.csv`` text into observations (``gpu_id`` may be an id or an alias)."""
    points: list[PricePoint] = []
    for line, row in _rows(text, PRICE_COLUMNS, "prices.csv"):
        column = "kind"
        try:
            kind = PricingKind(row["kind"])
            column = "usd"
            usd = float(row["usd"])
            column = "gpus_per_instance"
            per_instance = int(row["gpus_per_instance"] or "1")
            column = "observed_at"
            observed_at = parse_timestamp(row["observed_at"])
        except ValueError as exc:
            raise InvalidInput(f"prices.csv line {line}: {column}: {exc}", field=column) from exc
        points.append(
            PricePoint(
                gpu_id=row["gpu_id"],
                provider=row["provider"],
                region=row["region"],
                kind=kind,
                usd=usd,
                instance_type=row["instance_type"],
                gpus_per_instance=per_instance,
                observed_at=observed_at,
                source=row["source"],
                ingested_at=ingested_at,
            )
        )
    return points


def write_prices_csv(points: Iterable[PricePoint]) -> str:
    """Serialise observations in the import format (round-trips through ``parse_prices_csv``)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(PRICE_COLUMNS)
    for p in points:
        writer.writerow(
            [
                p.gpu_id,
                p.provider,
                p.region,
                p.kind.value,
                repr(p.usd),
                p.instance_type,
                p.gpus_per_instance,
                format_timestamp(p.observed_at),
                p.source,
            ]
        )
    return out.getvalue()


def bundled_text(name: str) -> str:
    """Text of a file shipped in ``service/data`` (the seed catalog)."""
    return resources.files("service").joinpath("data", name).read_text(encoding="utf-8")
