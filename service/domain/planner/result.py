"""What the planner answers: fleet lines, totals, alternatives, rejections (pure values; units
in the names).

A *replica* is one model instance over ``tensor_parallel`` cards; a *card* is one GPU; ``qps`` is
requests per second; a *line* of a fleet is one (GPU, tensor-parallel degree, price offer)
with its replica count.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal, get_args

from service.domain.planner.request import HOURS_PER_MONTH
from service.domain.providers import ProviderKind
from service.domain.vocabulary import PlanStatusName, Precision, RoutingMode, one_of

PLAN_STATUSES: tuple[PlanStatusName, ...] = get_args(PlanStatusName)


def plan_status(name: str) -> PlanStatusName:
    """``name`` as a plan status (the solver's statuses are spelt the same)."""
    return one_of(PLAN_STATUSES, name, "plan status")


@dataclass(frozen=True, slots=True)
class FleetLine:
    """Replicas of one (GPU, tensor-parallel degree, price offer).

    ``cards`` counts every billed card: an instance whose size is not a multiple of
    ``tensor_parallel`` is billed whole, so ``cards`` may exceed ``replicas * tensor_parallel``.
    ``assigned_qps`` is the target load (before headroom) this line serves; ``qps_capacity``
    what its replicas carry for that same request mix within the SLO; ``utilization`` the share
    of that capacity the target load uses. ``ttft_ms`` and ``tpot_ms`` are predicted at the SLO
    percentile at that load (the worst over the request shapes the line serves).
    ``provider_kind`` says what kind of seller the provider is (``domain.providers``);
    ``price_observed_at`` when the price the line is costed at was observed.
    """

    gpu: str
    provider: str
    region: str
    instance_type: str
    pricing: str
    tensor_parallel: int
    replicas: int
    instances: int
    cards: int
    usd_per_hour: float
    qps_capacity: float
    assigned_qps: float
    ttft_ms: float
    tpot_ms: float
    utilization: float
    buckets: tuple[tuple[str, float], ...]
    provider_kind: ProviderKind = "other"
    price_observed_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class Fleet:
    """Fleet lines and totals. ``qps_capacity`` is the most total load, in the request's bucket
    mix, these units carry within the SLO (computed for the chosen fleet, not alternatives)."""

    lines: tuple[FleetLine, ...]
    usd_per_hour: float
    total_cards: int
    qps_capacity: float | None

    @property
    def usd_per_month(self) -> float:
        return self.usd_per_hour * HOURS_PER_MONTH

    @property
    def oldest_price_observed_at(self) -> datetime | None:
        """The oldest observation among the prices the fleet is costed at."""
        return min((x.price_observed_at for x in self.lines if x.price_observed_at), default=None)


@dataclass(frozen=True, slots=True)
class Alternative:
    """The cheapest fleet of one GPU type alone."""

    gpu: str
    fleet: Fleet


@dataclass(frozen=True, slots=True)
class Rejection:
    """A GPU the plan could not use, with the reason in words (numbers included).

    On an infeasible or over-budget plan, ``best_ttft_ms`` and ``best_tpot_ms`` are the lowest
    TTFT and TPOT (ms, at the SLO percentile) the GPU reaches on this workload over its allowed
    tensor-parallel degrees, at the lightest load that still counts (its latency floor:
    ``perfmodel.capacity.latency_floor``, the worst request shape); ``None`` when nothing of
    it fits or it has no price (nothing was sized)."""

    gpu: str
    code: str
    reason: str
    best_ttft_ms: float | None = None
    best_tpot_ms: float | None = None


RelaxationKind = Literal[
    "slo", "precision", "tensor_parallel", "pcie_tensor_parallel", "gpu", "provider", "budget"
]
"""What a relaxation changes: a looser latency limit, a lower weight precision, larger
tensor-parallel groups, tensor parallelism over PCIe, a GPU the request left out, providers it
left out, or a larger budget."""


@dataclass(frozen=True, slots=True)
class Relaxation:
    """One change to an infeasible or over-budget request that makes it feasible (a fleet
    within the SLO and any budget), with what that fleet costs. Only the changed request
    fields are set (the rest as requested); lists are the whole new value.

    ``usd_per_hour`` is the cost of the plan the changed request gets; ``fleet_gpus`` the GPU
    types of its fleet; ``sentence`` the change and its cost in words."""

    kind: RelaxationKind
    usd_per_hour: float
    fleet_gpus: tuple[str, ...]
    sentence: str
    ttft_ms: float | None = None
    tpot_ms: float | None = None
    e2e_ms: float | None = None
    precision: Precision | None = None
    tensor_parallel: tuple[int, ...] | None = None
    allow_pcie_tensor_parallel: bool | None = None
    gpus: tuple[str, ...] | None = None
    exclude_gpus: tuple[str, ...] | None = None
    providers: tuple[str, ...] | None = None
    allow_marketplaces: bool | None = None
    budget_usd_per_hour: float | None = None

    @property
    def usd_per_month(self) -> float:
        return self.usd_per_hour * HOURS_PER_MONTH


@dataclass(frozen=True, slots=True)
class Savings:
    """How much the chosen fleet saves against the cheapest single-GPU-type fleet."""

    versus_gpu: str
    usd_per_hour: float
    percent: float


@dataclass(frozen=True, slots=True)
class BucketSummary:
    key: str
    share: float
    prompt_tokens: int
    output_tokens: int
    qps: float


MixRule = Literal[
    "single_type_required",
    "one_type_cheapest",
    "mix_saves_enough",
    "mix_saving_below_threshold",
    "no_single_type",
]
"""Which rule decided the number of GPU types in the fleet:

* ``single_type_required``: ``max_gpu_types`` is 1 (or ``allow_mix`` false);
* ``one_type_cheapest``: the cheapest fleet within the policy uses one GPU type anyway;
* ``mix_saves_enough``: the mixed fleet saves at least ``min_mix_savings_percent``;
* ``mix_saving_below_threshold``: it saves less, so the cheapest single type is returned;
* ``no_single_type``: no single GPU type meets the request, so the mix is returned whatever
  it saves."""


@dataclass(frozen=True, slots=True)
class MixDecision:
    """What the mixing policy decided. ``mixed_fleet`` is the cheapest mixed fleet within the
    policy when it was *not* returned (rule ``mix_saving_below_threshold``); ``saving_percent``
    is what a mixed fleet saves against the cheapest single-type one (``None`` when there is no
    mixed fleet, or no single-type one to compare with)."""

    rule: MixRule
    max_gpu_types: int
    min_mix_savings_percent: float
    allow_mixed_vendors: bool
    saving_percent: float | None = None
    saving_usd_per_hour: float | None = None
    mixed_fleet: Fleet | None = None
    single_type_gpu: str | None = None


@dataclass(frozen=True, slots=True)
class Route:
    """Requests of ``buckets`` (request shapes) go to the fleet lines of ``line_shares``
    (line index in ``fleet.lines``, share of this route's load). The route covers requests
    above the previous route's cut-off and up to ``prompt_tokens_max`` prompt tokens (or
    ``output_tokens_max`` output tokens when the cut is on output); ``None`` on the last."""

    buckets: tuple[str, ...]
    prompt_tokens_max: int | None
    output_tokens_max: int | None
    line_shares: tuple[tuple[int, float], ...]


@dataclass(frozen=True, slots=True)
class Routing:
    """``shared``: every line serves every shape; ``by_shape``: the gateway routes by
    length along ``routes`` (sorted by prompt, then output tokens)."""

    mode: RoutingMode
    routes: tuple[Route, ...]


@dataclass(frozen=True, slots=True)
class Redundancy:
    """How a fleet survives a loss. ``lines``, ``providers`` and ``regions`` (a provider's
    region) count what it spreads over; ``without_worst_*_percent`` is the share of the target
    load (percent, by the performance model, no headroom) the rest of the fleet still carries
    after losing the worst line, provider or region (0 when that is everything)."""

    replicas: int
    lines: int
    providers: int
    regions: int
    without_worst_line_percent: float
    without_worst_provider_percent: float
    without_worst_region_percent: float


@dataclass(frozen=True, slots=True)
class Plan:
    """The planner's answer. ``fleet`` is ``None`` only when the status is ``infeasible``.
    ``relaxations``: on an infeasible or over-budget plan, the cheapest changes to the request
    that make it feasible, cheapest first (``relax.relaxations``)."""

    status: PlanStatusName
    fleet: Fleet | None
    usd_per_million_output_tokens: float | None
    alternatives: tuple[Alternative, ...]
    savings_vs_best_single_type: Savings | None
    rejected: tuple[Rejection, ...]
    max_qps_within_budget: float | None
    explanation: tuple[str, ...]
    assumptions: tuple[str, ...]
    buckets: tuple[BucketSummary, ...]
    prices_as_of: datetime | None
    mixing: MixDecision | None = None
    redundancy: Redundancy | None = None
    routing: Routing | None = None
    relaxations: tuple[Relaxation, ...] = ()
