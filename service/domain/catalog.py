"""Catalog values: GPU specifications, price observations and purchasable offers.

Units are in the names: ``memory_gb`` (10^9 bytes), ``memory_bandwidth_gbps`` (GB/s, 10^9 bytes
per second), ``*_tflops`` (10^12 dense tensor operations per second, no 2:4 sparsity),
``interconnect_bandwidth_gbps`` (GB/s per card, both directions added), ``usd_per_gpu_hour``.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from datetime import datetime

from service.domain.errors import UnknownGpu


class PricingKind(enum.StrEnum):
    """How a price is paid. ``purchase`` prices are USD per card; the others USD per GPU-hour."""

    ON_DEMAND = "on_demand"
    SPOT = "spot"
    RESERVED_1Y = "reserved_1y"
    RESERVED_3Y = "reserved_3y"
    PURCHASE = "purchase"


@dataclass(frozen=True, slots=True)
class GpuSpec:
    """One accelerator model as its datasheet describes it.

    Tensor throughputs are dense peak figures at boost clock; ``None`` where the format is not
    supported (or not published). ``nvlink_domain`` is the largest number of cards that can form
    one tensor-parallel group over the scale-up link (1 for PCIe-only cards).
    """

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
    nvlink_domain: int
    pcie_gen: int
    form_factor: str
    mig_instances: int
    aliases: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()

    @property
    def has_nvlink(self) -> bool:
        """True when cards can share a tensor-parallel group over a scale-up link."""
        return self.interconnect_bandwidth_gbps > 0 and self.nvlink_domain > 1


@dataclass(frozen=True, slots=True)
class PricePoint:
    """One observed price. Append-only: a new observation never replaces an old one.

    ``usd`` is per GPU-hour, except for ``PricingKind.PURCHASE`` where it is per card.
    ``gpus_per_instance`` is the instance shape the price was observed on (the whole
    instance costs ``usd * gpus_per_instance`` per hour).
    """

    gpu_id: str
    provider: str
    region: str
    kind: PricingKind
    usd: float
    instance_type: str
    gpus_per_instance: int
    observed_at: datetime
    source: str
    ingested_at: datetime | None = None

    @property
    def offer_key(self) -> tuple[str, str, str, PricingKind, str]:
        """Identity of the offer this point prices (same key = same offer over time)."""
        return (self.gpu_id, self.provider, self.region, self.kind, self.instance_type)


@dataclass(frozen=True, slots=True)
class CatalogSnapshot:
    """Everything the planner needs from the catalog at one revision.

    ``prices`` holds, per offer, the latest observation at or before ``prices_as_of``
    (``None`` means "latest known").
    """

    revision: int
    gpus: tuple[GpuSpec, ...]
    prices: tuple[PricePoint, ...]
    prices_as_of: datetime | None = None
    gpu_by_id: dict[str, GpuSpec] = field(init=False, repr=False, compare=False)

    alias_index: dict[str, str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "gpu_by_id", {g.id: g for g in self.gpus})
        object.__setattr__(self, "alias_index", build_alias_index(self.gpus))

    def resolve_gpu(self, name: str, *, field_name: str | None = None) -> GpuSpec:
        """The GPU whose id or alias matches ``name`` case-insensitively.

        Raises ``UnknownGpu`` naming the closest ids when nothing matches.
        """
        gpu_id = self.alias_index.get(normalize_name(name))
        if gpu_id is None:
            raise UnknownGpu(name, closest_names(name, sorted(self.gpu_by_id)), field=field_name)
        return self.gpu_by_id[gpu_id]


def normalize_name(name: str) -> str:
    """Case- and separator-insensitive form used to match ids and aliases (``H100 SXM`` ==
    ``h100-sxm`` == ``h100_sxm``)."""
    return "".join(ch for ch in name.lower() if ch.isalnum())


def build_alias_index(gpus: tuple[GpuSpec, ...]) -> dict[str, str]:
    """Map every normalised id and alias to its GPU id. Ids win over aliases on a clash."""
    index: dict[str, str] = {}
    for gpu in gpus:
        for alias in gpu.aliases:
            index.setdefault(normalize_name(alias), gpu.id)
    for gpu in gpus:
        index[normalize_name(gpu.id)] = gpu.id
    return index


def closest_names(name: str, candidates: list[str], limit: int = 3) -> tuple[str, ...]:
    """The ``limit`` candidates most similar to ``name`` (difflib ratio on normalised forms)."""
    import difflib

    wanted = normalize_name(name)
    scored = sorted(
        candidates,
        key=lambda c: (-difflib.SequenceMatcher(None, wanted, normalize_name(c)).ratio(), c),
    )
    return tuple(scored[:limit])


def latest_per_offer(
    points: tuple[PricePoint, ...] | list[PricePoint], as_of: datetime | None = None
) -> tuple[PricePoint, ...]:
    """The newest observation of every offer at or before ``as_of`` (all of them when ``None``).

    Ties on ``observed_at`` cannot happen: (offer, observed_at) is the idempotency key.
    The result is sorted by offer key, so equal inputs give equal outputs.
    """
    newest: dict[tuple[str, str, str, PricingKind, str], PricePoint] = {}
    for point in points:
        if as_of is not None and point.observed_at > as_of:
            continue
        held = newest.get(point.offer_key)
        if held is None or point.observed_at > held.observed_at:
            newest[point.offer_key] = point
    return tuple(newest[key] for key in sorted(newest))


def cheapest_by_provider(
    points: tuple[PricePoint, ...], gpu_id: str, kind: PricingKind = PricingKind.ON_DEMAND
) -> dict[str, PricePoint]:
    """Per provider, the cheapest current offer of ``kind`` for one GPU (ties: earlier key)."""
    best: dict[str, PricePoint] = {}
    for point in points:
        if point.gpu_id != gpu_id or point.kind is not kind:
            continue
        held = best.get(point.provider)
        if held is None or point.usd < held.usd:
            best[point.provider] = point
    return dict(sorted(best.items()))
