"""Wire types of the plans API, their validation, and the canonical request a plan id hashes."""

from __future__ import annotations

import math
from collections import OrderedDict
from datetime import UTC, datetime
from typing import Annotated, Any

import msgspec
from msgspec import Meta

from service.api.schemas.common import (
    Millis,
    ReqPerS,
    Share,
    UsdPerHour,
    UsdPerMonth,
    WireIn,
    WireOut,
)
from service.api.schemas.models import ModelIn, canonical_model, resolve
from service.domain.catalog import CatalogSnapshot
from service.domain.errors import InvalidInput
from service.domain.perfmodel import Slo
from service.domain.planner.request import (
    HOURS_PER_MONTH,
    OwnedCost,
    PlanConstraints,
    PlanRequest,
    WorkloadBucket,
)
from service.domain.planner.result import Alternative, Fleet, FleetLine, Plan
from service.domain.vocabulary import (
    Engine,
    KvPrecision,
    PlanStatusName,
    Precision,
    PricingChoice,
    TensorParallel,
)

MAX_BUCKETS = 16
MAX_TOKENS = 2_000_000
SHARE_TOLERANCE = 1e-6

Tokens = Annotated[int, Meta(ge=1, le=MAX_TOKENS, description="Tokens per request.")]
Ms = Annotated[float, Meta(gt=0, le=3_600_000, description="Milliseconds.")]
GpuName = Annotated[str, Meta(min_length=1, max_length=64, description="GPU id or alias.")]


class MixBucketIn(WireIn, kw_only=True):
    share: Annotated[
        float, Meta(gt=0, le=1, description="Share of the total QPS (shares sum to 1).")
    ]
    prompt_tokens: Tokens
    output_tokens: Tokens


class WorkloadIn(WireIn, kw_only=True):
    """The load: ``qps`` with one ``prompt_tokens``/``output_tokens`` pair, or a ``mix`` of
    request shapes whose shares sum to 1 (the mix replaces the pair)."""

    qps: Annotated[float, Meta(gt=0, le=1_000_000, description="Total requests per second.")]
    prompt_tokens: Tokens | None = None
    output_tokens: Tokens | None = None
    mix: Annotated[list[MixBucketIn], Meta(min_length=1, max_length=MAX_BUCKETS)] | None = None


class SloIn(WireIn, kw_only=True):
    """Latency limits at ``percentile``; leave one out for no limit on it."""

    ttft_ms: Ms | None = None
    tpot_ms: Ms | None = None
    e2e_ms: Ms | None = None
    percentile: Annotated[float, Meta(ge=50, le=99.9, description="e.g. 95 for p95.")] = 95.0


class BudgetIn(WireIn, kw_only=True):
    """One of ``usd_per_hour`` or ``usd_per_month`` (730 hours)."""

    usd_per_hour: Annotated[float, Meta(gt=0, le=100_000_000)] | None = None
    usd_per_month: Annotated[float, Meta(gt=0, le=100_000_000_000)] | None = None


class OwnedCostIn(WireIn, kw_only=True):
    """Cost of owned cards: amortised purchase plus power (defaults documented in README)."""

    amortization_months: Annotated[float, Meta(gt=0, le=240)] = 36.0
    usd_per_kwh: Annotated[float, Meta(ge=0, le=10)] = 0.12
    pue: Annotated[float, Meta(ge=1, le=5)] = 1.3


class ConstraintsIn(WireIn, kw_only=True):
    gpus: Annotated[list[GpuName], Meta(min_length=1, max_length=64)] | None = None
    exclude_gpus: Annotated[list[GpuName], Meta(max_length=64)] = msgspec.field(
        default_factory=list
    )
    providers: (
        Annotated[
            list[Annotated[str, Meta(min_length=1, max_length=64)]],
            Meta(min_length=1, max_length=32),
        ]
        | None
    ) = None
    regions: (
        Annotated[
            list[Annotated[str, Meta(min_length=1, max_length=64)]],
            Meta(min_length=1, max_length=64),
        ]
        | None
    ) = None
    pricing: PricingChoice = "on_demand"
    max_cards: Annotated[
        dict[GpuName, Annotated[int, Meta(ge=0, le=1_000_000)]],
        Meta(max_length=64, description="Availability cap in cards per GPU id or alias."),
    ] = msgspec.field(default_factory=dict)
    allow_mix: bool = True
    headroom: Annotated[float, Meta(ge=0, le=10, description="0.2 plans for 1.2 x the load.")] = 0.0
    min_replicas: Annotated[
        int, Meta(ge=0, le=100_000, description="Fewest replicas in the fleet.")
    ] = 1
    tensor_parallel: Annotated[list[TensorParallel], Meta(min_length=1, max_length=8)] = (
        msgspec.field(default_factory=lambda: [1, 2, 4, 8])
    )
    allow_pcie_tensor_parallel: bool = False
    owned: OwnedCostIn = msgspec.field(default_factory=OwnedCostIn)


class PlanRequestIn(WireIn, kw_only=True):
    """A fleet request."""

    model: ModelIn
    precision: Precision = "bf16"
    kv_cache_precision: KvPrecision = "bf16"
    engine: Engine = "vllm"
    workload: WorkloadIn
    slo: SloIn = msgspec.field(default_factory=SloIn)
    budget: BudgetIn | None = None
    constraints: ConstraintsIn = msgspec.field(default_factory=ConstraintsIn)
    as_of: (
        Annotated[datetime, Meta(tz=True, description="Plan with the prices known then.")] | None
    ) = None


class CanonicalRequest(WireOut, kw_only=True):
    """The request with every default filled, aliases resolved and lists sorted."""

    model: str | dict[str, Any]
    precision: str
    kv_cache_precision: str
    engine: str
    workload: dict[str, Any]
    slo: dict[str, Any]
    budget: dict[str, Any] | None
    constraints: dict[str, Any]
    as_of: datetime | None


_encoder = msgspec.json.Encoder(order="sorted")


def _gpu_ids(snapshot: CatalogSnapshot, names: list[str], field: str) -> tuple[str, ...]:
    return tuple(
        sorted(
            {snapshot.resolve_gpu(n, field_name=f"{field}[{i}]").id for i, n in enumerate(names)}
        )
    )


def to_domain(
    body: PlanRequestIn, snapshot: CatalogSnapshot, *, time_limit_s: float
) -> tuple[PlanRequest, CanonicalRequest, bytes]:
    """Validate across fields, resolve names against the catalog, and return the domain request,
    the canonical request and its canonical JSON bytes (what the plan id hashes)."""
    resolved = resolve(body.model)
    w = body.workload
    if w.mix is not None:
        if w.prompt_tokens is not None or w.output_tokens is not None:
            raise InvalidInput(
                "give either mix or prompt_tokens/output_tokens, not both", field="workload.mix"
            )
        total = math.fsum(b.share for b in w.mix)
        if abs(total - 1.0) > SHARE_TOLERANCE:
            raise InvalidInput(f"mix shares sum to {total:.6g}, not 1", field="workload.mix")
        raw = sorted((b.prompt_tokens, b.output_tokens, b.share) for b in w.mix)
        merged: dict[tuple[int, int], float] = {}
        for p, o, s in raw:
            merged[(p, o)] = merged.get((p, o), 0.0) + s
        shapes = [(p, o, s / total) for (p, o), s in sorted(merged.items())]
    else:
        if w.prompt_tokens is None or w.output_tokens is None:
            missing = "prompt_tokens" if w.prompt_tokens is None else "output_tokens"
            raise InvalidInput(
                f"{missing} is required (or give a mix of request shapes)",
                field=f"workload.{missing}",
            )
        shapes = [(w.prompt_tokens, w.output_tokens, 1.0)]
    max_context = resolved.arch.max_context
    for i, (p, o, _) in enumerate(shapes):
        if p + o > max_context:
            where = "workload.prompt_tokens" if w.mix is None else f"workload.mix[{i}]"
            raise InvalidInput(
                f"{p} prompt + {o} output tokens exceed {resolved.arch.id}'s context "
                f"of {max_context}",
                field=where,
            )
    buckets = tuple(
        WorkloadBucket(key=f"b{i}", share=s, prompt_tokens=p, output_tokens=o)
        for i, (p, o, s) in enumerate(shapes)
    )

    budget_usd: float | None = None
    if body.budget is not None:
        b = body.budget
        if (b.usd_per_hour is None) == (b.usd_per_month is None):
            raise InvalidInput("give exactly one of usd_per_hour or usd_per_month", field="budget")
        if b.usd_per_hour is not None:
            budget_usd = b.usd_per_hour
        elif b.usd_per_month is not None:
            budget_usd = b.usd_per_month / HOURS_PER_MONTH

    c = body.constraints
    gpus = _gpu_ids(snapshot, c.gpus, "constraints.gpus") if c.gpus is not None else None
    exclude = _gpu_ids(snapshot, c.exclude_gpus, "constraints.exclude_gpus")
    max_cards: dict[str, int] = {}
    for name, cards in sorted(c.max_cards.items()):
        gpu = snapshot.resolve_gpu(name, field_name=f"constraints.max_cards.{name}").id
        max_cards[gpu] = min(cards, max_cards.get(gpu, cards))
    providers = tuple(sorted({normalize_provider(p) for p in c.providers})) if c.providers else None
    regions = tuple(sorted({r.strip() for r in c.regions})) if c.regions else None
    tps = tuple(sorted(set(c.tensor_parallel)))
    as_of = body.as_of.astimezone(UTC) if body.as_of is not None else None
    slo = Slo(
        ttft_ms=body.slo.ttft_ms,
        tpot_ms=body.slo.tpot_ms,
        e2e_ms=body.slo.e2e_ms,
        percentile=body.slo.percentile,
    )
    owned = OwnedCost(c.owned.amortization_months, c.owned.usd_per_kwh, c.owned.pue)
    request = PlanRequest(
        model=resolved,
        precision=body.precision,
        kv_precision=body.kv_cache_precision,
        engine=body.engine,
        qps=w.qps,
        buckets=buckets,
        slo=slo,
        budget_usd_per_hour=budget_usd,
        constraints=PlanConstraints(
            gpus=gpus,
            exclude_gpus=exclude,
            providers=providers,
            regions=regions,
            pricing=c.pricing,
            max_cards=tuple(sorted(max_cards.items())),
            allow_mix=c.allow_mix,
            headroom=c.headroom,
            min_replicas=c.min_replicas,
            tensor_parallel=tps,
            allow_pcie_tensor_parallel=c.allow_pcie_tensor_parallel,
            owned=owned,
        ),
        as_of=as_of,
        time_limit_s=time_limit_s,
    )
    canonical = CanonicalRequest(
        model=canonical_model(body.model, resolved),
        precision=body.precision,
        kv_cache_precision=body.kv_cache_precision,
        engine=body.engine,
        workload={
            "qps": w.qps,
            "mix": [{"share": s, "prompt_tokens": p, "output_tokens": o} for p, o, s in shapes],
        },
        slo={
            "ttft_ms": slo.ttft_ms,
            "tpot_ms": slo.tpot_ms,
            "e2e_ms": slo.e2e_ms,
            "percentile": slo.percentile,
        },
        budget={"usd_per_hour": budget_usd} if budget_usd is not None else None,
        constraints={
            "gpus": list(gpus) if gpus is not None else None,
            "exclude_gpus": list(exclude),
            "providers": list(providers) if providers else None,
            "regions": list(regions) if regions else None,
            "pricing": c.pricing,
            "max_cards": max_cards,
            "allow_mix": c.allow_mix,
            "headroom": c.headroom,
            "min_replicas": c.min_replicas,
            "tensor_parallel": list(tps),
            "allow_pcie_tensor_parallel": c.allow_pcie_tensor_parallel,
            "owned": msgspec.structs.asdict(c.owned) if c.pricing == "owned" else None,
        },
        as_of=as_of,
    )
    return request, canonical, _encoder.encode(canonical)


class CanonicalMemo:
    """``to_domain`` results by (catalog revision, encoded request body), so a repeated request
    skips re-validation and canonicalisation (its cache hit then costs a dict lookup). Bounded
    LRU; only successful conversions are kept. One per app: the catalog a revision names
    belongs to that app's database."""

    def __init__(self, max_entries: int = 4096) -> None:
        self._entries: OrderedDict[
            tuple[int, bytes], tuple[PlanRequest, CanonicalRequest, bytes]
        ] = OrderedDict()
        self._max = max_entries

    def convert(
        self, body: PlanRequestIn, snapshot: CatalogSnapshot, *, time_limit_s: float
    ) -> tuple[PlanRequest, CanonicalRequest, bytes]:
        key = (snapshot.revision, _raw_encoder.encode(body))
        found = self._entries.get(key)
        if found is not None:
            self._entries.move_to_end(key)
            return found
        result = to_domain(body, snapshot, time_limit_s=time_limit_s)
        self._entries[key] = result
        if len(self._entries) > self._max:
            self._entries.popitem(last=False)
        return result


_raw_encoder = msgspec.json.Encoder()


def normalize_provider(name: str) -> str:
    """Provider ids are lowercase slugs (``aws``, ``lambda``, ``vast``)."""
    return name.strip().lower()


# ---- response ---------------------------------------------------------------------------


def _r(value: float, digits: int) -> float:
    if math.isinf(value) or math.isnan(value):
        return -1.0
    return round(value, digits)


class BucketLoadOut(WireOut, kw_only=True):
    bucket: str
    qps: ReqPerS


class FleetLineOut(WireOut, kw_only=True):
    gpu: str
    provider: str
    region: str
    instance_type: str
    pricing: str
    tensor_parallel: int
    replicas: int
    instances: int
    cards: int
    usd_per_hour: UsdPerHour
    qps_capacity: ReqPerS
    assigned_qps: float
    ttft_ms: Millis
    tpot_ms: float
    utilization: Share
    buckets: list[BucketLoadOut]

    @classmethod
    def from_domain(cls, line: FleetLine) -> FleetLineOut:
        return cls(
            gpu=line.gpu,
            provider=line.provider,
            region=line.region,
            instance_type=line.instance_type,
            pricing=line.pricing,
            tensor_parallel=line.tensor_parallel,
            replicas=line.replicas,
            instances=line.instances,
            cards=line.cards,
            usd_per_hour=_r(line.usd_per_hour, 4),
            qps_capacity=_r(line.qps_capacity, 3),
            assigned_qps=_r(line.assigned_qps, 3),
            ttft_ms=_r(line.ttft_ms, 1),
            tpot_ms=_r(line.tpot_ms, 2),
            utilization=_r(line.utilization, 3),
            buckets=[BucketLoadOut(bucket=b, qps=_r(q, 3)) for b, q in line.buckets],
        )


class AlternativeOut(WireOut, kw_only=True):
    """The cheapest fleet of one GPU type alone (lines as in the plan's fleet)."""

    gpu: str
    usd_per_hour: UsdPerHour
    usd_per_month: UsdPerMonth
    total_cards: int
    fleet: list[FleetLineOut]

    @classmethod
    def from_domain(cls, alt: Alternative) -> AlternativeOut:
        return cls(
            gpu=alt.gpu,
            usd_per_hour=_r(alt.fleet.usd_per_hour, 4),
            usd_per_month=_r(alt.fleet.usd_per_month, 2),
            total_cards=alt.fleet.total_cards,
            fleet=[FleetLineOut.from_domain(line) for line in alt.fleet.lines],
        )


class SavingsOut(WireOut, kw_only=True):
    versus_gpu: str
    usd_per_hour: UsdPerHour
    usd_per_month: UsdPerMonth
    percent: Annotated[float, Meta(description="Percent of the single-type fleet's cost.")]


class RejectionOut(WireOut, kw_only=True):
    gpu: str
    code: str
    reason: str


class BucketOut(WireOut, kw_only=True):
    bucket: str
    share: Share
    prompt_tokens: int
    output_tokens: int
    qps: ReqPerS


class PlanOut(WireOut, kw_only=True):
    """A solved plan. Identical requests at the same catalog revision give identical bytes."""

    plan_id: str
    status: PlanStatusName
    catalog_revision: int
    prices_as_of: datetime | None
    usd_per_hour: UsdPerHour | None
    usd_per_month: UsdPerMonth | None
    usd_per_million_output_tokens: (
        Annotated[
            float, Meta(description="US dollars per million output tokens at the target load.")
        ]
        | None
    )
    total_cards: int
    qps_capacity: ReqPerS
    fleet: list[FleetLineOut]
    alternatives: list[AlternativeOut]
    savings_vs_best_single_type: SavingsOut | None
    rejected: list[RejectionOut]
    max_qps_within_budget: ReqPerS | None
    explanation: list[str]
    assumptions: list[str]
    buckets: list[BucketOut]
    request: CanonicalRequest

    @classmethod
    def from_domain(
        cls, plan: Plan, *, plan_id: str, revision: int, request: CanonicalRequest
    ) -> PlanOut:
        fleet: Fleet | None = plan.fleet
        savings = plan.savings_vs_best_single_type
        return cls(
            plan_id=plan_id,
            status=plan.status,
            catalog_revision=revision,
            prices_as_of=plan.prices_as_of,
            usd_per_hour=_r(fleet.usd_per_hour, 4) if fleet else None,
            usd_per_month=_r(fleet.usd_per_month, 2) if fleet else None,
            usd_per_million_output_tokens=(
                _r(plan.usd_per_million_output_tokens, 4)
                if plan.usd_per_million_output_tokens is not None
                else None
            ),
            total_cards=fleet.total_cards if fleet else 0,
            qps_capacity=_r(fleet.qps_capacity or 0.0, 3) if fleet else 0.0,
            fleet=[FleetLineOut.from_domain(line) for line in fleet.lines] if fleet else [],
            alternatives=[AlternativeOut.from_domain(a) for a in plan.alternatives],
            savings_vs_best_single_type=(
                SavingsOut(
                    versus_gpu=savings.versus_gpu,
                    usd_per_hour=_r(savings.usd_per_hour, 4),
                    usd_per_month=_r(savings.usd_per_hour * HOURS_PER_MONTH, 2),
                    percent=_r(savings.percent, 2),
                )
                if savings is not None
                else None
            ),
            rejected=[RejectionOut(gpu=r.gpu, code=r.code, reason=r.reason) for r in plan.rejected],
            max_qps_within_budget=(
                _r(plan.max_qps_within_budget, 3)
                if plan.max_qps_within_budget is not None
                else None
            ),
            explanation=list(plan.explanation),
            assumptions=list(plan.assumptions),
            buckets=[
                BucketOut(
                    bucket=b.key,
                    share=_r(b.share, 6),
                    prompt_tokens=b.prompt_tokens,
                    output_tokens=b.output_tokens,
                    qps=_r(b.qps, 4),
                )
                for b in plan.buckets
            ],
            request=request,
        )
