"""The plan a solve answers, on the wire: ``PlanOut`` and its parts, built from the domain's
``SolvedPlan`` (numbers rounded for reading; infinities shown as -1)."""

from __future__ import annotations

import math
from datetime import datetime
from typing import Annotated, Any

from msgspec import Meta

from service.api.schemas.common import Millis, ReqPerS, Share, UsdPerHour, UsdPerMonth, WireOut
from service.domain.planner import (
    HOURS_PER_MONTH,
    Alternative,
    Fleet,
    FleetLine,
    MixDecision,
    MixRule,
    Redundancy,
    Rejection,
    Relaxation,
    RelaxationKind,
    Routing,
    RoutingMode,
    SolvedPlan,
    canonical_document,
)
from service.domain.providers import ProviderKind
from service.domain.vocabulary import PlanStatusName, Precision


class CanonicalRequest(WireOut, kw_only=True, omit_defaults=True):
    """The request with every default filled, aliases resolved and lists sorted."""

    # Built from service.domain.planner.canonical_document: what the plan id hashes.

    model: str | dict[str, Any]
    precision: str
    kv_cache_precision: str
    engine: str
    engine_version: Annotated[
        str | None, Meta(description="The engine build the plan runs on (major.minor).")
    ]
    workload: dict[str, Any]
    slo: dict[str, Any]
    budget: dict[str, Any] | None
    constraints: dict[str, Any]
    as_of: datetime | None
    calibration: Annotated[
        str | None,
        Meta(
            description="The calibration profile version the plan used (name@vN); absent "
            "when it used the reference constants."
        ),
    ] = None
    routing: Annotated[
        RoutingMode,
        Meta(description="shared when the request asked every line to serve the whole mix."),
    ] = "by_shape"


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
    provider_kind: Annotated[
        ProviderKind,
        Meta(
            description="hyperscaler (AWS, GCP, Azure), gpu_cloud (Lambda, RunPod Secure ...), "
            "marketplace (Vast.ai, RunPod Community), purchase (owned cards), other."
        ),
    ]
    price_observed_at: Annotated[
        datetime | None, Meta(description="When the price this line is costed at was observed.")
    ]

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
            provider_kind=line.provider_kind,
            price_observed_at=line.price_observed_at,
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


class MixingOut(WireOut, kw_only=True):
    """The mixing policy the plan used and the rule that decided the number of GPU types."""

    rule: Annotated[
        MixRule,
        Meta(
            description="single_type_required (max_gpu_types 1), one_type_cheapest, "
            "mix_saves_enough, mix_saving_below_threshold (the single type is returned, the "
            "mixed fleet is in mixed_fleet), no_single_type (only a mix meets the request)."
        ),
    ]
    max_gpu_types: int
    min_mix_savings_percent: float
    allow_mixed_vendors: bool
    saving_percent: Annotated[
        float | None,
        Meta(description="What the mixed fleet saves against the cheapest single type, %."),
    ]
    saving_usd_per_hour: UsdPerHour | None
    single_type_gpu: str | None
    mixed_fleet: Annotated[
        list[FleetLineOut] | None,
        Meta(description="The cheapest mixed fleet, when the threshold kept it out."),
    ]
    mixed_usd_per_hour: UsdPerHour | None

    @classmethod
    def from_domain(cls, d: MixDecision) -> MixingOut:
        mixed = d.mixed_fleet
        return cls(
            rule=d.rule,
            max_gpu_types=d.max_gpu_types,
            min_mix_savings_percent=d.min_mix_savings_percent,
            allow_mixed_vendors=d.allow_mixed_vendors,
            saving_percent=_r(d.saving_percent, 2) if d.saving_percent is not None else None,
            saving_usd_per_hour=(
                _r(d.saving_usd_per_hour, 4) if d.saving_usd_per_hour is not None else None
            ),
            single_type_gpu=d.single_type_gpu,
            mixed_fleet=[FleetLineOut.from_domain(x) for x in mixed.lines] if mixed else None,
            mixed_usd_per_hour=_r(mixed.usd_per_hour, 4) if mixed else None,
        )


class RedundancyOut(WireOut, kw_only=True):
    """How the fleet survives a loss: what it spreads over, and the share of the target load
    the rest still carries after losing its worst line, provider or region."""

    replicas: int
    lines: int
    providers: int
    regions: Annotated[int, Meta(description="Distinct (provider, region) pairs.")]
    without_worst_line_percent: Annotated[
        float, Meta(description="% of the target load left after losing the worst line.")
    ]
    without_worst_provider_percent: float
    without_worst_region_percent: float

    @classmethod
    def from_domain(cls, r: Redundancy) -> RedundancyOut:
        return cls(
            replicas=r.replicas,
            lines=r.lines,
            providers=r.providers,
            regions=r.regions,
            without_worst_line_percent=_r(r.without_worst_line_percent, 1),
            without_worst_provider_percent=_r(r.without_worst_provider_percent, 1),
            without_worst_region_percent=_r(r.without_worst_region_percent, 1),
        )


class RouteOut(WireOut, kw_only=True):
    """One gateway route: requests up to the cut-off (prompt or output tokens; none on the
    last route) go to these fleet lines (index in ``fleet``) in these shares."""

    buckets: list[str]
    prompt_tokens_max: int | None
    output_tokens_max: int | None
    lines: list[int]
    shares: list[Share]


class RoutingOut(WireOut, kw_only=True):
    """How traffic reaches the fleet lines."""

    mode: Annotated[
        RoutingMode,
        Meta(
            description="shared: any line takes any request; by_shape: request shapes are "
            "split across lines, so the gateway routes by length along routes."
        ),
    ]
    routes: list[RouteOut]

    @classmethod
    def from_domain(cls, r: Routing) -> RoutingOut:
        return cls(
            mode=r.mode,
            routes=[
                RouteOut(
                    buckets=list(x.buckets),
                    prompt_tokens_max=x.prompt_tokens_max,
                    output_tokens_max=x.output_tokens_max,
                    lines=[i for i, _ in x.line_shares],
                    shares=[_r(s, 4) for _, s in x.line_shares],
                )
                for x in r.routes
            ],
        )


class RejectionOut(WireOut, kw_only=True):
    gpu: str
    code: str
    reason: str
    best_ttft_ms: Annotated[
        float | None,
        Meta(
            description="Infeasible or over-budget plans: the lowest TTFT (ms, at the SLO "
            "percentile) this GPU reaches on the workload, over its tensor-parallel degrees, "
            "at the lightest load that counts (one request in flight on average)."
        ),
    ] = None
    best_tpot_ms: Annotated[
        float | None,
        Meta(description="As best_ttft_ms, for the time per output token (ms)."),
    ] = None

    @classmethod
    def from_domain(cls, r: Rejection) -> RejectionOut:
        return cls(
            gpu=r.gpu,
            code=r.code,
            reason=r.reason,
            best_ttft_ms=r.best_ttft_ms,
            best_tpot_ms=r.best_tpot_ms,
        )


class SloChangeOut(WireOut, kw_only=True, omit_defaults=True):
    """New latency limits (ms, at the request's percentile); the others as asked."""

    ttft_ms: Millis | None = None
    tpot_ms: Millis | None = None
    e2e_ms: Millis | None = None


class BudgetChangeOut(WireOut, kw_only=True):
    usd_per_hour: UsdPerHour


class ConstraintsChangeOut(WireOut, kw_only=True, omit_defaults=True):
    """New constraint values (a list is the whole new list); the others as asked."""

    tensor_parallel: list[int] | None = None
    allow_pcie_tensor_parallel: bool | None = None
    gpus: list[str] | None = None
    exclude_gpus: list[str] | None = None
    providers: list[str] | None = None
    allow_marketplaces: bool | None = None


class RequestChangesOut(WireOut, kw_only=True, omit_defaults=True):
    """The changed request fields, shaped like the request body: merged into the plan's
    ``request`` (``jq '.request * .relaxations[0].changes'``) they give the request to POST."""

    precision: Precision | None = None
    slo: SloChangeOut | None = None
    budget: BudgetChangeOut | None = None
    constraints: ConstraintsChangeOut | None = None


class RelaxationOut(WireOut, kw_only=True):
    """A change to an infeasible or over-budget request that makes it feasible, and the cost
    of the plan the changed request gets."""

    kind: Annotated[
        RelaxationKind,
        Meta(
            description="slo (looser latency limits), precision (lighter weights), "
            "tensor_parallel (larger groups), pcie_tensor_parallel, gpu (one the request left "
            "out), provider (ones it left out, or marketplaces), budget (raised to the cost)."
        ),
    ]
    changes: RequestChangesOut
    usd_per_hour: UsdPerHour
    usd_per_month: UsdPerMonth
    gpus: Annotated[list[str], Meta(description="GPU types of the changed request's fleet.")]
    summary: str

    @classmethod
    def from_domain(cls, r: Relaxation) -> RelaxationOut:
        slo = (
            SloChangeOut(ttft_ms=r.ttft_ms, tpot_ms=r.tpot_ms, e2e_ms=r.e2e_ms)
            if (r.ttft_ms, r.tpot_ms, r.e2e_ms) != (None, None, None)
            else None
        )
        constraints = ConstraintsChangeOut(
            tensor_parallel=list(r.tensor_parallel) if r.tensor_parallel is not None else None,
            allow_pcie_tensor_parallel=r.allow_pcie_tensor_parallel,
            gpus=list(r.gpus) if r.gpus is not None else None,
            exclude_gpus=list(r.exclude_gpus) if r.exclude_gpus is not None else None,
            providers=list(r.providers) if r.providers is not None else None,
            allow_marketplaces=r.allow_marketplaces,
        )
        return cls(
            kind=r.kind,
            changes=RequestChangesOut(
                precision=r.precision,
                slo=slo,
                budget=(
                    BudgetChangeOut(usd_per_hour=r.budget_usd_per_hour)
                    if r.budget_usd_per_hour is not None
                    else None
                ),
                constraints=constraints if constraints != ConstraintsChangeOut() else None,
            ),
            usd_per_hour=_r(r.usd_per_hour, 4),
            usd_per_month=_r(r.usd_per_month, 2),
            gpus=list(r.fleet_gpus),
            summary=r.sentence,
        )


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
    prices_as_of: Annotated[
        datetime | None,
        Meta(description="The catalog's prices as of: as_of, else its newest observation."),
    ]
    oldest_price_observed_at: Annotated[
        datetime | None,
        Meta(description="The oldest observation among the prices the fleet is costed at."),
    ]
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
    mixing: MixingOut | None
    redundancy: RedundancyOut | None
    routing: RoutingOut | None
    rejected: list[RejectionOut]
    relaxations: Annotated[
        list[RelaxationOut],
        Meta(
            description="Infeasible or over-budget plans: the cheapest changes that make the "
            "request feasible, cheapest first (at most 5); empty otherwise."
        ),
    ]
    max_qps_within_budget: ReqPerS | None
    explanation: list[str]
    assumptions: list[str]
    buckets: list[BucketOut]
    request: CanonicalRequest

    @classmethod
    def from_domain(cls, solved: SolvedPlan) -> PlanOut:
        plan = solved.plan
        fleet: Fleet | None = plan.fleet
        savings = plan.savings_vs_best_single_type
        return cls(
            plan_id=solved.plan_id,
            status=plan.status,
            catalog_revision=solved.revision,
            prices_as_of=plan.prices_as_of,
            oldest_price_observed_at=fleet.oldest_price_observed_at if fleet else None,
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
            mixing=MixingOut.from_domain(plan.mixing) if plan.mixing is not None else None,
            routing=RoutingOut.from_domain(plan.routing) if plan.routing is not None else None,
            redundancy=(
                RedundancyOut.from_domain(plan.redundancy) if plan.redundancy is not None else None
            ),
            rejected=[RejectionOut.from_domain(r) for r in plan.rejected],
            relaxations=[RelaxationOut.from_domain(r) for r in plan.relaxations],
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
            request=CanonicalRequest(**canonical_document(solved.request)),
        )
