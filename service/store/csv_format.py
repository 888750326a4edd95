"""The catalog's CSV formats: the bundled seed files and ``gpuplan catalog import/export``.

``gpus.csv`` columns are the stored ``GpuSpec`` fields (``aliases`` and ``sources`` separated by
``|``). ``prices.csv`` columns are the ``PricePoint`` fields but ``ingested_at``:
``gpu_id,provider,region,kind,usd,instance_type,gpus_per_instance,observed_at,source``.
``purchase_gaps.csv`` columns are ``gpu_id,reason``: why the catalog has no purchase price.
Parsers take text and return domain values, checked against the limits the domain types
declare (the ones the HTTP endpoints enforce); a bad cell raises ``InvalidInput`` naming the
line and column, and text holding NUL is refused whole.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable, Iterator
from dataclasses import fields
from datetime import UTC, datetime
from importlib import resources
from typing import Any, TypeVar

import msgspec
from sqlalchemy import JSON

from service.domain.catalog import (
    SOURCE_MAX_LENGTH,
    GpuSpec,
    PriceGap,
    PricePoint,
    observed_moment,
)
from service.domain.errors import InvalidInput
from service.domain.moments import window_problem
from service.domain.vocabulary import PRICE_KIND_NAMES, one_of
from service.store.models import GpuRow, stored_spec_fields

GPU_COLUMNS = stored_spec_fields()
_LIST_COLUMNS = {c.name for c in GpuRow.__table__.columns if isinstance(c.type, JSON)}
PRICE_COLUMNS = tuple(f.name for f in fields(PricePoint) if f.name != "ingested_at")
_LIST_SEPARATOR = "|"
_FIELD_IN_ERROR = re.compile(r"`\$\.(\w+)|required field `(\w+)`")
_AT_PATH = re.compile(r"\s*-\s*at `\$[^`]*`")


def parse_timestamp(raw: str) -> datetime:
    """ISO-8601 with a zone (``Z`` allowed); a bare date means midnight UTC."""
    text = raw.strip()
    if len(text) == 10:
        text += "T00:00:00+00:00"
    value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    problem = window_problem(value)
    if problem is not None:
        raise ValueError(f"timestamp {problem}")
    return value.astimezone(UTC)


def format_timestamp(value: datetime) -> str:
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _rows(text: str, expected: tuple[str, ...], what: str) -> Iterator[tuple[int, dict[str, str]]]:
    nul = text.find("\x00")
    if nul >= 0:
        line = text.count("\n", 0, nul) + 1
        raise InvalidInput(f"{what} line {line}: text must not contain NUL (U+0000)", field="csv")
    reader = csv.DictReader(io.StringIO(text))
    header = tuple(reader.fieldnames or ())
    missing = [c for c in expected if c not in header]
    if missing:
        raise InvalidInput(f"{what}: missing columns {', '.join(missing)}", field="header")
    for number, row in enumerate(reader, start=2):
        yield number, {k: (v or "").strip() for k, v in row.items() if k is not None}


def parse_gpus_csv(text: str) -> list[GpuSpec]:
    """Parse ``gpus.csv`` text into specs, checked against the limits ``GpuSpec`` declares.

    Numbers are read from their text; an empty cell takes the field's default (``None`` for
    an unpublished figure); ``aliases`` and ``sources`` are ``|``-separated lists.
    """
    specs: list[GpuSpec] = []
    for line, row in _rows(text, GPU_COLUMNS, "gpus.csv"):
        values: dict[str, Any] = {}
        for column in GPU_COLUMNS:
            raw = row[column]
            if column in _LIST_COLUMNS:
                values[column] = [p.strip() for p in raw.split(_LIST_SEPARATOR) if p.strip()]
            elif raw:
                values[column] = raw
        specs.append(_converted(values, GpuSpec, f"gpus.csv line {line}"))
    return specs


T = TypeVar("T")


def _converted(values: dict[str, Any], into: type[T], where: str) -> T:
    """``values`` as ``into`` with its declared limits; ``InvalidInput`` naming the column."""
    try:
        return msgspec.convert(values, into, strict=False)
    except msgspec.ValidationError as exc:
        found = _FIELD_IN_ERROR.search(str(exc))
        column = next((g for g in found.groups() if g), "row") if found else "row"
        message = _AT_PATH.sub("", str(exc))
        raise InvalidInput(f"{where}: {column}: {message}", field=column) from exc


def parse_prices_csv(text: str, *, ingested_at: datetime | None = None) -> list[PricePoint]:
    """Parse ``prices.csv`` text into observations (``gpu_id`` may be an id or an alias)."""
    points: list[PricePoint] = []
    for line, row in _rows(text, PRICE_COLUMNS, "prices.csv"):
        where = f"prices.csv line {line}"
        column = "kind"
        try:
            kind = one_of(PRICE_KIND_NAMES, row["kind"], "price kind")
            column = "observed_at"
            observed_at = observed_moment(parse_timestamp(row["observed_at"]), column)
        except (ValueError, InvalidInput) as exc:
            raise InvalidInput(f"{where}: {column}: {exc}", field=column) from exc
        values: dict[str, Any] = {
            **row,
            "kind": kind,
            "gpus_per_instance": row["gpus_per_instance"] or "1",
            "observed_at": observed_at,
            "ingested_at": ingested_at,
        }
        points.append(_converted(values, PricePoint, where))
    return points


GAP_COLUMNS = ("gpu_id", "reason")


def parse_purchase_gaps_csv(text: str) -> list[PriceGap]:
    """Parse ``purchase_gaps.csv`` text: per GPU, why the catalog holds no purchase price."""
    gaps: list[PriceGap] = []
    for line, row in _rows(text, GAP_COLUMNS, "purchase_gaps.csv"):
        for column in GAP_COLUMNS:
            if not row[column]:
                raise InvalidInput(
                    f"purchase_gaps.csv line {line}: {column}: must not be empty", field=column
                )
        if len(row["reason"]) > SOURCE_MAX_LENGTH:
            raise InvalidInput(
                f"purchase_gaps.csv line {line}: reason: longer than {SOURCE_MAX_LENGTH} "
                "characters",
                field="reason",
            )
        gaps.append(PriceGap(row["gpu_id"], "purchase", row["reason"]))
    return gaps


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
                p.kind,
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
