"""Catalog values: GPU specifications, price observations and the queries over them.

Units are in the names: ``memory_gb`` (10^9 bytes), ``memory_bandwidth_gbps`` (GB/s, 10^9 bytes
per second), ``*_tflops`` (10^12 dense tensor operations per second, no 2:4 sparsity),
``interconnect_bandwidth_gbps`` (GB/s per card, both directions added), ``usd_per_gpu_hour``.

``GpuSpec`` is the one definition of a GPU's datasheet fields: name, type, unit, limits and
default of each. The request and response bodies (``api/schemas/catalog.py``), the ``gpus``
table (``store/models.py``) and the ``gpus.csv`` columns (``store/csv_format.py``) are derived
from it, so adding a field is the short list in CONTRIBUTING.md. The limits are
``msgspec.Meta`` annotations (plain data here, nothing is decoded in this package): whatever
turns outside input into a ``GpuSpec`` (the HTTP body, the CSV parser) enforces them.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Annotated, Any, TypeVar, cast

from msgspec import Meta

from service.domain.errors import InvalidInput, UnknownGpu
from service.domain.moments import to_utc
from service.domain.vocabulary import PriceKindName, PricingChoice

T = TypeVar("T")
MEMO_ENTRIES = 4096
"""Most values one snapshot's memo holds (``CatalogSnapshot.remember``)."""

# ---- limits, each defined once (wire schemas, table columns and query parameters use these) --

SLUG_MAX_LENGTH = 64
"""GPU ids, vendors, providers and regions (stored as VARCHAR(64))."""
GPU_ID_PATTERN = rf"^[a-z0-9][a-z0-9-]{{0,{SLUG_MAX_LENGTH - 1}}}$"
"""A GPU id: a lowercase slug of letters, digits and '-'."""
NAME_MAX_LENGTH = 128
"""GPU names and aliases (so any id-or-alias lookup), architectures, interconnects, instance
types."""
TOKEN_MAX_LENGTH = 32
"""Short vocabulary cells: ``memory_type`` (``HBM3e``), ``form_factor`` (``SXM``)."""
SOURCE_MAX_LENGTH = 2000
"""One provenance entry of a spec, or the source of one price observation."""
MEMORY_GB_MAX = 100_000
PRICE_PAGE_SIZE = 100
"""Observations per page of price history unless the caller asks for another size."""
PRICE_PAGE_MAX = 1000

PROVIDER_PATTERN = rf"^[a-z0-9][a-z0-9._-]{{0,{SLUG_MAX_LENGTH - 1}}}$"
"""A provider id: a lowercase slug of letters, digits, '.', '_' or '-'."""
OBSERVED_EARLIEST = datetime(2000, 1, 1, tzinfo=UTC)
"""Price observations are from this century (on top of ``domain.moments``' window)."""

Name = Annotated[str, Meta(min_length=1, max_length=NAME_MAX_LENGTH)]
SlugText = Annotated[str, Meta(min_length=1, max_length=SLUG_MAX_LENGTH)]
UsdPrice = Annotated[
    float, Meta(gt=0, le=10_000_000, description="USD per GPU-hour (per card for purchase).")
]
GpusPerInstance = Annotated[int, Meta(ge=1, le=1024, description="GPUs in the priced instance.")]
SourceText = Annotated[str, Meta(max_length=SOURCE_MAX_LENGTH)]
Tflops = Annotated[
    float,
    Meta(ge=0, le=1e6, description="Dense peak tensor throughput, TFLOPS (null: unsupported)."),
]


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuSpec:
    """One accelerator model as its datasheet describes it.

    Tensor throughputs are dense peak figures at boost clock; ``None`` where the format is not
    supported (or not published). ``nvlink_domain`` is the largest number of cards that can form
    one tensor-parallel group over the scale-up link (1 for PCIe-only cards). ``has_nvlink`` is
    derived (``init=False``): shown in responses, never read from input or stored.

    Every field after the required datasheet core has a default, so a new field added with a
    default leaves existing request bodies, CSV files and constructors valid.
    """

    id: Annotated[str, Meta(min_length=1, max_length=SLUG_MAX_LENGTH, pattern=GPU_ID_PATTERN)]
    vendor: Annotated[str, Meta(min_length=1, max_length=SLUG_MAX_LENGTH)]
    name: Name
    architecture: Annotated[
        str,
        Meta(
            min_length=1,
            max_length=NAME_MAX_LENGTH,
            description="Starts with the generation, e.g. 'Hopper (GH100)'.",
        ),
    ]
    launch_year: Annotated[int, Meta(ge=1990, le=2100)]
    memory_gb: Annotated[float, Meta(gt=0, le=MEMORY_GB_MAX, description="Memory per card, GB.")]
    memory_type: Annotated[str, Meta(min_length=1, max_length=TOKEN_MAX_LENGTH, examples=["HBM3e"])]
    memory_bandwidth_gbps: Annotated[
        float, Meta(gt=0, le=1e6, description="Memory bandwidth per card, GB/s.")
    ]
    fp32_tflops: Tflops | None = None
    tf32_tflops: Tflops | None = None
    fp16_tflops: Tflops | None = None
    fp8_tflops: Tflops | None = None
    fp4_tflops: Tflops | None = None
    int8_tops: Tflops | None = None
    tdp_w: Annotated[float, Meta(gt=0, le=100_000, description="Board power, W.")] | None = None
    interconnect: Annotated[str, Meta(max_length=NAME_MAX_LENGTH)] = "PCIe"
    interconnect_bandwidth_gbps: Annotated[
        float,
        Meta(
            ge=0,
            le=1e6,
            description="Scale-up link per card, both directions, GB/s (0: PCIe only).",
        ),
    ] = 0.0
    has_nvlink: bool = field(init=False, default=False)
    nvlink_domain: Annotated[
        int, Meta(ge=1, le=4096, description="Most cards one tensor-parallel group may span.")
    ] = 1
    pcie_gen: Annotated[
        int, Meta(ge=1, le=8, description="PCIe generation of the card's host link.")
    ] = 4
    pcie_lanes: Annotated[
        int, Meta(ge=1, le=32, description="Lanes of the card's host PCIe link (x16: 16).")
    ] = 16
    pcie_peer_to_peer: Annotated[
        bool,
        Meta(
            description="Cards write into each other's memory over PCIe (false: a tensor-"
            "parallel all-reduce over PCIe is staged through host memory)."
        ),
    ] = True
    form_factor: Annotated[
        str, Meta(min_length=1, max_length=TOKEN_MAX_LENGTH, examples=["SXM", "PCIe"])
    ] = "PCIe"
    mig_instances: Annotated[int, Meta(ge=0, le=64)] = 0
    aliases: Annotated[tuple[Name, ...], Meta(max_length=32)] = ()
    sources: Annotated[tuple[SourceText, ...], Meta(max_length=32)] = ()

    def __post_init__(self) -> None:
        linked = self.interconnect_bandwidth_gbps > 0 and self.nvlink_domain > 1
        object.__setattr__(self, "has_nvlink", linked)


def observed_moment(value: datetime, field: str) -> datetime:
    """An observation's moment in UTC: within ``domain.moments``' window and not before
    ``OBSERVED_EARLIEST``; else ``InvalidInput`` naming ``field``."""
    moment = to_utc(value, field)
    if moment < OBSERVED_EARLIEST:
        raise InvalidInput(f"{field} must be after 2000", field=field)
    return moment


def price_kind_for(pricing: PricingChoice) -> PriceKindName:
    """The kind of catalog price a fleet paid for with ``pricing`` is priced from: owned cards
    amortise ``purchase`` prices; every other choice is the price kind of the same name."""
    if pricing == "owned":
        return "purchase"
    return pricing


@dataclass(frozen=True, slots=True)
class PricePoint:
    """One observed price. Append-only: a new observation never replaces an old one.

    ``usd`` is per GPU-hour, except for kind ``purchase`` where it is per card.
    ``gpus_per_instance`` is the instance shape the price was observed on (the whole
    instance costs ``usd * gpus_per_instance`` per hour).

    The limits are the ones ``POST /v1/prices`` enforces (whatever turns outside input into a
    ``PricePoint`` enforces them: the HTTP body, the CSV parser); they fit the table's columns.
    ``gpu_id`` may be an alias until ``CatalogSnapshot.with_gpu_ids`` resolves it.
    """

    gpu_id: SlugText
    provider: Annotated[str, Meta(pattern=PROVIDER_PATTERN)]
    region: SlugText
    kind: PriceKindName
    usd: UsdPrice
    instance_type: Name
    gpus_per_instance: GpusPerInstance
    observed_at: Annotated[datetime, Meta(tz=True)]
    source: SourceText
    ingested_at: datetime | None = None

    @property
    def offer_key(self) -> tuple[str, str, str, str, str]:
        """Identity of the offer this point prices (same key = same offer over time)."""
        return (self.gpu_id, self.provider, self.region, self.kind, self.instance_type)


@dataclass(frozen=True, slots=True)
class PriceGap:
    """Why the catalog holds no price of one kind for one GPU, as documented with the data
    (``service/data/purchase_gaps.csv`` for purchase prices): a plan that needs that kind says
    it for the GPU instead of a bare "no price"."""

    gpu_id: str
    kind: PriceKindName
    reason: str


GLOBAL_REGION = "global"
"""The region of a price its provider states for every region (Lambda's list price, a figure
whose source names no region) and of purchase prices."""


def provider_regions(prices: Iterable[PricePoint]) -> dict[str, frozenset[str]]:
    """The named regions (not :data:`GLOBAL_REGION`) in which each provider has a price, of any
    GPU and kind: where that provider's ``global`` prices can be bought."""
    named: dict[str, set[str]] = {}
    for price in prices:
        if price.region != GLOBAL_REGION:
            named.setdefault(price.provider, set()).add(price.region)
    return {provider: frozenset(regions) for provider, regions in named.items()}


@dataclass(frozen=True, slots=True)
class CatalogSnapshot:
    """Everything the planner needs from the catalog at one revision.

    ``prices`` holds, per offer, the latest observation at or before ``prices_as_of``
    (``None`` means "latest known"); ``gaps`` the documented reasons for the prices it lacks.
    """

    revision: int
    gpus: tuple[GpuSpec, ...]
    prices: tuple[PricePoint, ...]
    prices_as_of: datetime | None = None
    gaps: tuple[PriceGap, ...] = ()
    gpu_by_id: dict[str, GpuSpec] = field(init=False, repr=False, compare=False)

    alias_index: dict[str, str] = field(init=False, repr=False, compare=False)
    prices_by_gpu: dict[str, tuple[PricePoint, ...]] = field(init=False, repr=False, compare=False)
    provider_regions: dict[str, frozenset[str]] = field(init=False, repr=False, compare=False)
    """Each provider's named regions (:func:`provider_regions`)."""
    gap_reasons: dict[tuple[str, str], str] = field(init=False, repr=False, compare=False)
    memo: dict[Hashable, Any] = field(init=False, repr=False, compare=False)
    """Values the planner derives from this snapshot alone (offers per GPU and constraint),
    kept for the next plan at the same revision; bounded by :data:`MEMO_ENTRIES`."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "gpu_by_id", {g.id: g for g in self.gpus})
        object.__setattr__(self, "alias_index", build_alias_index(self.gpus))
        by_gpu: dict[str, list[PricePoint]] = {}
        for price in self.prices:
            by_gpu.setdefault(price.gpu_id, []).append(price)
        object.__setattr__(self, "prices_by_gpu", {k: tuple(v) for k, v in by_gpu.items()})
        object.__setattr__(self, "provider_regions", provider_regions(self.prices))
        reasons = {(gap.gpu_id, gap.kind): gap.reason for gap in self.gaps}
        object.__setattr__(self, "gap_reasons", reasons)
        object.__setattr__(self, "memo", {})

    def gap_reason(self, gpu_id: str, kind: PriceKindName) -> str | None:
        """The documented reason the catalog has no ``kind`` price for ``gpu_id``, if any."""
        return self.gap_reasons.get((gpu_id, kind))

    def remember(self, key: Hashable, compute: Callable[[], T]) -> T:
        """``compute()``, memoised in this snapshot under ``key`` (which must name everything
        the value depends on besides the snapshot). When the memo is full it starts afresh."""
        memo = self.memo
        if key in memo:
            return cast("T", memo[key])
        value = compute()
        if len(memo) >= MEMO_ENTRIES:
            memo.clear()
        memo[key] = value
        return value

    def resolve_gpu(self, name: str, *, field_name: str | None = None) -> GpuSpec:
        """The GPU whose id or alias matches ``name`` case-insensitively.

        Raises ``UnknownGpu`` naming the closest ids when nothing matches.
        """
        gpu_id = self.alias_index.get(normalize_name(name))
        if gpu_id is None:
            raise UnknownGpu(name, closest_names(name, sorted(self.gpu_by_id)), field=field_name)
        return self.gpu_by_id[gpu_id]

    def with_gpu_ids(self, points: Iterable[PricePoint]) -> list[PricePoint]:
        """``points`` with every GPU alias replaced by its id. Names that match nothing are
        kept as given, for the writer to refuse with the row's position."""
        index = self.alias_index
        return [replace(p, gpu_id=index.get(normalize_name(p.gpu_id), p.gpu_id)) for p in points]


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
    newest: dict[tuple[str, str, str, str, str], PricePoint] = {}
    for point in points:
        if as_of is not None and point.observed_at > as_of:
            continue
        held = newest.get(point.offer_key)
        if held is None or point.observed_at > held.observed_at:
            newest[point.offer_key] = point
    return tuple(newest[key] for key in sorted(newest))


def cheapest_by_provider(
    points: tuple[PricePoint, ...], gpu_id: str, kind: PriceKindName = "on_demand"
) -> dict[str, PricePoint]:
    """Per provider, the cheapest current offer of ``kind`` for one GPU (ties: earlier key)."""
    best: dict[str, PricePoint] = {}
    for point in points:
        if point.gpu_id != gpu_id or point.kind != kind:
            continue
        held = best.get(point.provider)
        if held is None or point.usd < held.usd:
            best[point.provider] = point
    return dict(sorted(best.items()))


# ---- reads and writes of the catalog, as the store answers them ----------------------------


@dataclass(frozen=True, slots=True)
class PriceQuery:
    """One page of a GPU's price history: filters, page size and the cursor of the page before.

    ``since``/``until`` are inclusive and must carry a zone; ``limit`` is 1 to
    ``PRICE_PAGE_MAX``. A bad value raises ``InvalidInput`` naming the parameter.
    """

    provider: str | None = None
    region: str | None = None
    kind: PriceKindName | None = None
    since: datetime | None = None
    until: datetime | None = None
    limit: int = PRICE_PAGE_SIZE
    cursor: str | None = None

    def __post_init__(self) -> None:
        for name, moment in (("since", self.since), ("until", self.until)):
            if moment is not None and moment.tzinfo is None:
                raise InvalidInput(f"{name} needs a zone, e.g. 2026-06-01T00:00:00Z", field=name)
        if not 1 <= self.limit <= PRICE_PAGE_MAX:
            raise InvalidInput(f"limit must be 1 to {PRICE_PAGE_MAX}", field="limit")


@dataclass(frozen=True, slots=True)
class PricePage:
    """Observations newest first; ``next_cursor`` fetches the next page (``None``: last page)."""

    items: tuple[PricePoint, ...]
    next_cursor: str | None


@dataclass(frozen=True, slots=True)
class IngestResult:
    inserted: int
    already_present: int
    revision: int


@dataclass(frozen=True, slots=True)
class PutGpuResult:
    created: bool
    revision: int


@dataclass(frozen=True, slots=True)
class CatalogSummary:
    """The catalog's revision and counts (``offers``: distinct priced offers ever observed)."""

    revision: int
    updated_at: datetime
    gpus: int
    price_points: int
    offers: int
    providers: int
    newest_observed_at: datetime | None
    newest_ingested_at: datetime | None
