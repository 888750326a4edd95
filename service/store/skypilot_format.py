"""SkyPilot catalog ``vms.csv`` files as price observations.

The public SkyPilot catalog (github.com/skypilot-org/skypilot-catalog, ``catalogs/v7/<cloud>/
vms.csv``; Apache-2.0) lists one row per instance type and region (AWS, GCP, RunPod: per
availability zone). ``Price`` and ``SpotPrice`` are USD per hour for the whole instance. This
module turns one cloud's file into gpuplan observations:

- one offer per (GPU, region, instance type, kind): availability zones are merged, keeping the
  lowest price and saying in ``source`` how many zones were seen;
- ``usd`` per GPU-hour = instance price / GPU count; ``gpus_per_instance`` = the count;
- accelerator names map to catalog ids by name, then by form factor where the instance type
  tells it (Azure NC A100 v4 is PCIe, RunPod ``H100`` is PCIe ...), then by the per-GPU memory in
  ``GpuInfo`` (SkyPilot's ``A100`` with 80 GiB is the 80 GB part). ``TotalGpuMemoryInMiB`` is
  never read: Lambda fills it with the per-GPU figure;
- GCP prices accelerators and the VM around them in separate rows: an accelerator row plus the
  host row of its machine type in the same zone is one offer. Where the source has no host rows
  for a machine family at all (n1 with T4/V100/P100/P4, g2 with L4, a3-megagpu), the GPU part
  alone is the offer and its instance type says the host VM is extra;
- the known defects of the source are handled, each counted by reason (``_SKIP`` and
  ``_ADJUST``): rows without any price, spot prices that are no discount, swapped columns, a
  wrong GPU count, zones listed twice, exact duplicate rows, GPUs too old to serve LLMs.

A malformed file (missing columns, a price that is not a number, an unreadable CSV) raises
``InvalidInput`` naming the line and column; nothing is half-read.
"""

from __future__ import annotations

import ast
import csv
import math
import re
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime

from service.domain.catalog import GpuSpec, PricePoint, build_alias_index, normalize_name
from service.domain.errors import InvalidInput
from service.domain.price_import import (
    SKYPILOT_CLOUDS,
    ImportScope,
    ImportTally,
    ParsedCatalog,
)
from service.domain.superseded import GPU_ONLY_MARKS
from service.domain.vocabulary import PriceKindName

BASE_COLUMNS = (
    "InstanceType",
    "AcceleratorName",
    "AcceleratorCount",
    "Price",
    "SpotPrice",
    "Region",
)
ZONE_COLUMN = "AvailabilityZone"
_ZONED = {"aws", "gcp", "runpod"}
MAX_ROWS = 1_000_000
_GPU_INFO_MAX = 4096

# Reasons, each with the sentence an answer shows. Row scope: the row added nothing.
_SKIP: dict[str, tuple[ImportScope, str]] = {
    "cannot_serve_llms": ("row", "K80, M60, Radeon MI25: cannot serve current LLMs"),
    "unknown_accelerator": ("row", "accelerator not in the catalog"),
    "memory_mismatch": ("row", "GPU memory in GpuInfo matches no catalog variant of the name"),
    "bad_gpu_count": ("row", "GPU count is not a whole number of at least 1"),
    "no_region": ("row", "no region"),
    "duplicate_row": ("row", "exact repeat of an earlier row"),
    "no_price": ("row", "neither an on-demand nor a spot price"),
    "spot_above_on_demand": (
        "row",
        "spot price above on-demand: the row contradicts itself, neither price used",
    ),
    "gcp_no_host_row": (
        "row",
        "GCP accelerator row with no host VM row of its machine type in its zone",
    ),
    "gcp_unused_host_row": ("row", "GCP host VM row with no accelerator row in its zone"),
    "no_on_demand_price": ("price", "no on-demand price (the spot price is kept)"),
    "no_spot_price": ("price", "no spot price (the on-demand price is kept)"),
    "spot_equals_on_demand": (
        "price",
        "spot price equal to on-demand: no spot discount, so not a spot offer",
    ),
    "price_not_positive": ("price", "price of zero or less"),
}
# Rows used after a correction.
_ADJUST: dict[str, str] = {
    "zones_merged": "rows of another zone merged into their region's offer (lowest price kept)",
    "zone_listed_twice": "a zone listed twice for one instance type (prices merged)",
    "spot_swapped": "RunPod: spot price above on-demand, the two columns swapped",
    "gpu_count_corrected": "Azure Standard_ND96isr_H100_v5 lists 12 GPUs; priced as its 8",
    "gcp_host_added": "GCP accelerator price plus its host VM price",
    "gcp_gpu_only": "GCP accelerator priced without its host VM (no host rows in the source)",
}

_OBSOLETE = {"k80", "m60", "radeonmi25", "mi25"}

# How a GCP GPU priced without its host VM is named (``superseded.gpu_only`` recognises it).
GPU_ALONE = GPU_ONLY_MARKS[0]

# SkyPilot accelerator name (normalised) -> catalog id. Names not here are looked up among the
# catalog's ids and aliases.
_BY_NAME = {
    "a100": "a100-sxm-40gb",  # SkyPilot's A100 is the 40 GB part
    "a10080gb": "a100-sxm-80gb",
    "a10080gbsxm": "a100-sxm-80gb",
    "h100": "h100-sxm",
    "h100sxm": "h100-sxm",
    "h100mega": "h100-sxm",  # GCP a3-megagpu-8g: the H100 SXM5 with more host networking
    "h100nvl": "h100-nvl",
    "h200": "h200-sxm",
    "h200sxm": "h200-sxm",
    "v100": "v100-pcie-16gb",  # the 16 GB V100 (AWS/GCP/Lambda SXM2 16 GB is filed here)
    "v10032gb": "v100-sxm2-32gb",
    "a6000": "rtx-a6000",
    "rtx6000": "quadro-rtx-6000",
    "p100": "p100-pcie-16gb",
}
# Form factor by cloud and instance type, where the name alone does not tell it.
_BY_INSTANCE: dict[str, tuple[tuple[re.Pattern[str], str], ...]] = {
    "azure": (
        (re.compile(r"^Standard_NC\d+ads_A100_v4$"), "a100-pcie-80gb"),
        (re.compile(r"^Standard_NC\d+ads_H100_v5$|^Standard_NC\d+adis_H100_v5$"), "h100-nvl"),
    ),
    "lambda": (
        (re.compile(r"^gpu_[124]x_a100$"), "a100-pcie-40gb"),
        (re.compile(r"_h100_pcie$"), "h100-pcie"),
    ),
    "runpod": (
        (re.compile(r"^\d+x_H100_[A-Z]+$"), "h100-pcie"),
        (re.compile(r"^\d+x_A100-80GB_[A-Z]+$"), "a100-pcie-80gb"),
    ),
}
# The same part in its other memory size (tried when GpuInfo's memory does not match).
_MEMORY_SIBLING = {
    "a100-sxm-40gb": "a100-sxm-80gb",
    "a100-sxm-80gb": "a100-sxm-40gb",
    "a100-pcie-40gb": "a100-pcie-80gb",
    "a100-pcie-80gb": "a100-pcie-40gb",
    "v100-pcie-16gb": "v100-sxm2-32gb",
    "v100-sxm2-32gb": "v100-pcie-16gb",
}
_SAME_PRICE = 1e-4  # relative: AWS lists spot 20.0281 against on-demand 20.02809
_MEMORY_TOLERANCE = 0.12  # GiB in GpuInfo vs the catalog's GB (A10G: 22,888 MiB of 24 GB)
# Published GPU counts that are wrong in the source.
_COUNT_FIXES = {("azure", "Standard_ND96isr_H100_v5"): 8}

# GCP: accelerator (normalised name, count) -> the machine types whose host rows complete it.
_GCP_HOSTS: dict[tuple[str, int], tuple[str, ...]] = {
    **{("a100", n): (f"a2-highgpu-{n}g",) for n in (1, 2, 4, 8)},
    ("a100", 16): ("a2-megagpu-16g",),
    **{("a10080gb", n): (f"a2-ultragpu-{n}g",) for n in (1, 2, 4, 8)},
    **{("h100", n): (f"a3-highgpu-{n}g",) for n in (1, 2, 4)},
    ("h100", 8): ("a3-highgpu-8g", "a3-edgegpu-8g", "a3-edgegpu-8g-nolssd"),
}
# GCP machine families whose host rows the source does not carry: the GPU part alone is priced.
_GCP_GPU_ONLY = {
    "h100mega": "a3-megagpu-8g",
    "l4": "g2-standard",
    "t4": "n1",
    "v100": "n1",
    "p100": "n1",
    "p4": "n1",
}


@dataclass(frozen=True, slots=True)
class _Row:
    line: int
    instance_type: str
    accelerator: str
    count_text: str
    gpu_mib: float | None
    price: float | None
    spot: float | None
    region: str
    zone: str


@dataclass(slots=True)
class _Offer:
    """Zone observations of one offer (both kinds), merged."""

    gpu_id: str
    region: str
    instance_type: str
    count: int
    prices: dict[PriceKindName, tuple[float, str]] = field(default_factory=dict)
    zones: dict[PriceKindName, set[str]] = field(default_factory=dict)

    def add(self, kind: PriceKindName, usd: float, zone: str, note: str) -> None:
        held = self.prices.get(kind)
        if held is None or usd < held[0]:
            self.prices[kind] = (usd, note)
        self.zones.setdefault(kind, set()).add(zone)


class _Tallies:
    def __init__(self) -> None:
        self.skipped: Counter[str] = Counter()
        self.adjusted: Counter[str] = Counter()
        self.unknown: Counter[str] = Counter()

    def skip(self, reason: str) -> None:
        self.skipped[reason] += 1

    def adjust(self, reason: str, count: int = 1) -> None:
        self.adjusted[reason] += count

    def result(self) -> tuple[tuple[ImportTally, ...], tuple[ImportTally, ...]]:
        skipped = []
        for reason, count in self.skipped.most_common():
            scope, detail = _SKIP[reason]
            if reason == "unknown_accelerator":
                names = ", ".join(f"{n} ({c})" for n, c in sorted(self.unknown.items()))
                detail = f"{detail}: {names}"
            skipped.append(ImportTally(reason, scope, count, detail))
        adjusted = [
            ImportTally(reason, "row", count, _ADJUST[reason])
            for reason, count in self.adjusted.most_common()
        ]
        return tuple(skipped), tuple(adjusted)


def parse_skypilot_csv(
    text: str,
    cloud: str,
    gpus: Mapping[str, GpuSpec],
    *,
    observed_at: datetime,
    source: str,
) -> ParsedCatalog:
    """One cloud's ``vms.csv`` as observations dated ``observed_at``; ``source`` names the file
    and is the start of every observation's ``source`` text. ``gpus`` is the catalog by id."""
    if cloud not in SKYPILOT_CLOUDS:
        raise InvalidInput(
            f"unknown cloud {cloud!r}; expected one of {', '.join(SKYPILOT_CLOUDS)}",
            field="cloud",
        )
    if observed_at.tzinfo is None:
        raise InvalidInput(
            "observed_at needs a zone, e.g. 2026-06-01T00:00:00Z", field="observed_at"
        )
    rows = list(_read_rows(text, cloud))
    if not rows:
        raise InvalidInput("the file holds no rows", field="csv")
    tallies = _Tallies()
    offers: dict[tuple[str, str, str, int], _Offer] = {}
    mapper = _GpuMapper(cloud, gpus)
    unique = _drop_duplicates(rows, tallies)
    if cloud == "gcp":
        _gcp_offers(unique, mapper, tallies, offers)
    else:
        _zone_offers(unique, cloud, mapper, tallies, offers)
    points = _points(offers, cloud, observed_at, source)
    skipped, adjusted = tallies.result()
    if not points:
        reasons = "; ".join(f"{t.detail} ({t.count})" for t in skipped[:3])
        raise InvalidInput(f"no row of the file could be priced: {reasons}", field="csv")
    return ParsedCatalog(cloud, len(rows), tuple(points), skipped, adjusted)


# ---- reading --------------------------------------------------------------------------------


def _read_rows(text: str, cloud: str) -> Iterator[_Row]:
    lines = text.splitlines(keepends=True)
    reader = csv.DictReader(lines)
    try:
        header = tuple(h.strip() for h in (reader.fieldnames or ()))
    except csv.Error as exc:
        raise InvalidInput(f"line 1: not a CSV header: {exc}", field="header") from exc
    expected = BASE_COLUMNS + ((ZONE_COLUMN,) if cloud in _ZONED else ())
    missing = [c for c in expected if c not in header]
    if missing:
        raise InvalidInput(
            f"not a SkyPilot {cloud} vms.csv: missing columns {', '.join(missing)}", field="header"
        )
    reader.fieldnames = list(header)
    number = 1
    try:
        for number, raw in enumerate(reader, start=2):
            if number - 1 > MAX_ROWS:
                raise InvalidInput(f"more than {MAX_ROWS} rows; split the file", field="csv")
            cells = {k: (v or "").strip() for k, v in raw.items() if k is not None}
            yield _Row(
                line=number,
                instance_type=cells["InstanceType"],
                accelerator=cells["AcceleratorName"],
                count_text=cells["AcceleratorCount"],
                gpu_mib=_gpu_memory_mib(cells.get("GpuInfo", "")),
                price=_price(cells["Price"], number, "Price"),
                spot=_price(cells["SpotPrice"], number, "SpotPrice"),
                region=cells["Region"],
                zone=cells.get(ZONE_COLUMN, ""),
            )
    except csv.Error as exc:
        raise InvalidInput(f"line {number + 1}: unreadable CSV: {exc}", field="csv") from exc


def _price(raw: str, line: int, column: str) -> float | None:
    """USD per hour, or ``None`` for an empty cell. Not a number: the file is refused."""
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        raise InvalidInput(
            f"line {line}: {column}: {raw[:40]!r} is not a number", field=column
        ) from None
    if not math.isfinite(value):
        raise InvalidInput(
            f"line {line}: {column}: {raw[:40]!r} is not a finite number", field=column
        )
    return value


def _gpu_memory_mib(raw: str) -> float | None:
    """Per-GPU memory from ``GpuInfo`` (``Gpus[0].MemoryInfo.SizeInMiB``); ``None`` when the cell
    is only a name (Azure, RunPod), unreadable, or 0 (unknown)."""
    if not raw.startswith("{") or len(raw) > _GPU_INFO_MAX:
        return None
    try:
        info = ast.literal_eval(raw)
        size = info["Gpus"][0]["MemoryInfo"]["SizeInMiB"]
        value = float(size)
    except (ValueError, SyntaxError, TypeError, KeyError, IndexError, MemoryError, RecursionError):
        return None
    return value if math.isfinite(value) and value > 0 else None


def _gpu_count(raw: str) -> int | None:
    try:
        value = float(raw)
    except ValueError:
        return None
    if not math.isfinite(value) or value < 1 or value != int(value):
        return None
    return int(value)


def _drop_duplicates(rows: list[_Row], tallies: _Tallies) -> list[_Row]:
    seen: set[tuple[object, ...]] = set()
    unique: list[_Row] = []
    for row in rows:
        key = (
            row.instance_type,
            row.accelerator,
            row.count_text,
            row.gpu_mib,
            row.price,
            row.spot,
            row.region,
            row.zone,
        )
        if key in seen:
            tallies.skip("duplicate_row")
            continue
        seen.add(key)
        unique.append(row)
    return unique


# ---- names ----------------------------------------------------------------------------------


class _GpuMapper:
    def __init__(self, cloud: str, gpus: Mapping[str, GpuSpec]) -> None:
        self._cloud = cloud
        self._gpus = gpus
        self._aliases = build_alias_index(tuple(gpus.values()))

    def gpu_id(self, row: _Row, tallies: _Tallies) -> str | None:
        """The catalog id of the row's accelerator, or ``None`` (counted) when there is none."""
        name = normalize_name(row.accelerator)
        if name in _OBSOLETE:
            tallies.skip("cannot_serve_llms")
            return None
        gpu_id = next(
            (
                g
                for pattern, g in _BY_INSTANCE.get(self._cloud, ())
                if pattern.search(row.instance_type)
            ),
            None,
        )
        gpu_id = gpu_id or _BY_NAME.get(name) or self._aliases.get(name)
        if gpu_id is None or gpu_id not in self._gpus:
            tallies.skip("unknown_accelerator")
            tallies.unknown[row.accelerator or "(empty)"] += 1
            return None
        if row.gpu_mib is None or self._fits(gpu_id, row.gpu_mib):
            return gpu_id
        sibling = _MEMORY_SIBLING.get(gpu_id)
        if sibling in self._gpus and sibling is not None and self._fits(sibling, row.gpu_mib):
            return sibling
        tallies.skip("memory_mismatch")
        return None

    def _fits(self, gpu_id: str, mib: float) -> bool:
        catalog_gb = self._gpus[gpu_id].memory_gb
        return abs(mib / 1024 - catalog_gb) <= _MEMORY_TOLERANCE * catalog_gb


# ---- prices ---------------------------------------------------------------------------------


def _checked_prices(
    row: _Row, cloud: str, tallies: _Tallies
) -> tuple[float | None, float | None] | None:
    """The row's (on-demand, spot) after the source's defects are handled; ``None`` (counted)
    when nothing usable is left."""
    price, spot = row.price, row.spot
    if price is not None and price <= 0:
        tallies.skip("price_not_positive")
        price = None
    if spot is not None and spot <= 0:
        tallies.skip("price_not_positive")
        spot = None
    if price is not None and spot is not None and spot >= price - _SAME_PRICE * price:
        if spot <= price + _SAME_PRICE * price:
            tallies.skip("spot_equals_on_demand")
            spot = None
        elif cloud == "runpod":
            tallies.adjust("spot_swapped")
            price, spot = spot, price
        else:
            tallies.skip("spot_above_on_demand")
            return None
    if price is None and spot is None:
        tallies.skip("no_price")
        return None
    if price is None:
        tallies.skip("no_on_demand_price")
    if spot is None and row.spot is None:
        tallies.skip("no_spot_price")
    return price, spot


def _count(row: _Row, cloud: str, tallies: _Tallies) -> int | None:
    count = _gpu_count(row.count_text)
    if count is None:
        tallies.skip("bad_gpu_count")
        return None
    fixed = _COUNT_FIXES.get((cloud, row.instance_type))
    if fixed is not None and fixed != count:
        tallies.adjust("gpu_count_corrected")
        return fixed
    return count


def _zone_offers(
    rows: list[_Row],
    cloud: str,
    mapper: _GpuMapper,
    tallies: _Tallies,
    offers: dict[tuple[str, str, str, int], _Offer],
) -> None:
    """AWS, Azure, Lambda, RunPod: every row is an instance in one region (and zone)."""
    zones_seen: set[tuple[str, str, str]] = set()
    for row in rows:
        placed = _placed(row, cloud, mapper, tallies)
        if placed is None:
            continue
        gpu_id, count = placed
        prices = _checked_prices(row, cloud, tallies)
        if prices is None:
            continue
        zone_key = (row.instance_type, row.region, row.zone)
        if row.zone and zone_key in zones_seen:
            tallies.adjust("zone_listed_twice")
        zones_seen.add(zone_key)
        _add(offers, tallies, gpu_id, row, row.instance_type, count, prices, "")


def _placed(row: _Row, cloud: str, mapper: _GpuMapper, tallies: _Tallies) -> tuple[str, int] | None:
    """The catalog GPU id and card count of a row with a region; ``None`` when the row is
    skipped (the reason counted in ``tallies``)."""
    if not row.region:
        tallies.skip("no_region")
        return None
    gpu_id = mapper.gpu_id(row, tallies)
    if gpu_id is None:
        return None
    count = _count(row, cloud, tallies)
    if count is None:
        return None
    return gpu_id, count


def _gcp_offers(
    rows: list[_Row],
    mapper: _GpuMapper,
    tallies: _Tallies,
    offers: dict[tuple[str, str, str, int], _Offer],
) -> None:
    """GCP: accelerator rows (no instance type) completed by the host rows of their machine
    type in the same zone; host rows (no accelerator) are only ever a part of an offer."""
    hosts: dict[tuple[str, str], _Row] = {}
    accelerators: list[_Row] = []
    for row in rows:
        if row.accelerator:
            accelerators.append(row)
        elif row.instance_type:
            held = hosts.get((row.zone, row.instance_type))
            if held is not None:
                tallies.adjust("zone_listed_twice")
                if (row.price or math.inf) >= (held.price or math.inf):
                    continue
            hosts[(row.zone, row.instance_type)] = row
        else:
            tallies.skip("unknown_accelerator")
            tallies.unknown["(empty)"] += 1
    used_hosts: set[tuple[str, str]] = set()
    for row in accelerators:
        placed = _placed(row, "gcp", mapper, tallies)
        if placed is None:
            continue
        gpu_id, count = placed
        name = normalize_name(row.accelerator)
        machines = _GCP_HOSTS.get((name, count))
        if machines is None:
            gpu_prices = _checked_prices(row, "gcp", tallies)
            if gpu_prices is None:
                continue
            family = _GCP_GPU_ONLY.get(name, "host")
            instance = f"{family} + {count}x {row.accelerator} {GPU_ALONE}"
            if family == "a3-megagpu-8g":
                instance = f"{family} {GPU_ALONE}"
            tallies.adjust("gcp_gpu_only")
            _add(offers, tallies, gpu_id, row, instance, count, gpu_prices, "GPU only")
            continue
        found = [hosts[(row.zone, m)] for m in machines if (row.zone, m) in hosts]
        if not found:
            tallies.skip("gcp_no_host_row")
            continue
        gpu_prices = _checked_prices(row, "gcp", tallies)
        if gpu_prices is None:
            continue
        for host in found:
            used_hosts.add((host.zone, host.instance_type))
            on_demand = _sum(gpu_prices[0], host.price)
            spot = _sum(gpu_prices[1], host.spot)
            note = f"GPU {_money(gpu_prices[0])} + host {_money(host.price)}"
            if spot is not None and on_demand is not None and spot >= on_demand:
                spot = None
            _add(offers, tallies, gpu_id, row, host.instance_type, count, (on_demand, spot), note)
        tallies.adjust("gcp_host_added")
    for key in hosts:
        if key not in used_hosts:
            tallies.skip("gcp_unused_host_row")


def _sum(gpu: float | None, host: float | None) -> float | None:
    if gpu is None or host is None or host < 0:
        return None
    return gpu + host


def _offer_for(
    offers: dict[tuple[str, str, str, int], _Offer],
    gpu_id: str,
    region: str,
    instance_type: str,
    count: int,
    tallies: _Tallies,
) -> _Offer:
    """The offer of one (GPU, region, instance type, count); a row adding to an offer already
    started (another zone of the region) is counted as merged."""
    key = (gpu_id, region, instance_type, count)
    offer = offers.get(key)
    if offer is None:
        offer = offers[key] = _Offer(gpu_id, region, instance_type, count)
    else:
        tallies.adjust("zones_merged")
    return offer


def _add(
    offers: dict[tuple[str, str, str, int], _Offer],
    tallies: _Tallies,
    gpu_id: str,
    row: _Row,
    instance_type: str,
    count: int,
    prices: tuple[float | None, float | None],
    note: str,
) -> None:
    offer = _offer_for(offers, gpu_id, row.region, instance_type, count, tallies)
    zone = row.zone or row.region
    if prices[0] is not None:
        offer.add("on_demand", prices[0], zone, note)
    if prices[1] is not None:
        offer.add("spot", prices[1], zone, "")


def _money(value: float | None) -> str:
    return "n/a" if value is None else f"{value:g}"


def _points(
    offers: dict[tuple[str, str, str, int], _Offer],
    cloud: str,
    observed_at: datetime,
    source: str,
) -> list[PricePoint]:
    kinds: tuple[PriceKindName, ...] = ("on_demand", "spot")
    points: list[PricePoint] = []
    for key in sorted(offers):
        offer = offers[key]
        for kind in kinds:
            held = offer.prices.get(kind)
            if held is None:
                continue
            instance_usd, note = held
            zones = len(offer.zones[kind])
            gpus = "1 GPU" if offer.count == 1 else f"{offer.count} GPUs"
            where = f"; lowest of {zones} zones" if zones > 1 else ""
            extra = f"; {note}" if note else ""
            points.append(
                PricePoint(
                    gpu_id=offer.gpu_id,
                    provider=cloud,
                    region=offer.region,
                    kind=kind,
                    usd=round(instance_usd / offer.count, 6),
                    instance_type=offer.instance_type,
                    gpus_per_instance=offer.count,
                    observed_at=observed_at,
                    source=f"{source} (instance ${instance_usd:g}/h / {gpus}{extra}{where})",
                )
            )
    return points
