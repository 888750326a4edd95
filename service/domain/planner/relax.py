"""Relaxations: what would make an infeasible or over-budget request feasible, and at what cost.

Only computed for a plan whose status is ``infeasible`` or ``over_budget``. Each candidate
change is a request that differs from the asked one in a few fields; it is planned like any
request (``replan``: the planner without relaxations, so the cost is the one a caller who sends
the changed request gets, byte for byte) and kept when that plan meets the SLO and the budget
(``optimal``). A change whose plan is feasible but over the budget keeps the budget raised to
that plan's cost as part of the change. The survivors are sorted by cost, then kind, and the
first :data:`RELAXATIONS_MAX` returned. The work is bounded: at most :data:`PLANS_MAX` changed
requests are planned, in the order below, and none after one whose solve hit its time limit.

Candidate changes:

* **slo** (infeasible): a looser TTFT, TPOT and/or E2E limit, straight from the latency floors
  (``perfmodel.capacity.latency_floor``): per allowed GPU, tensor-parallel degree and offer shape,
  the lowest latencies the deployment reaches on the workload's worst request shape at the
  lightest load that counts. For each set of limits some deployment misses (TPOT alone, TTFT
  alone, both ...), the deployment that needs the smallest loosening (the largest ratio of new
  to old limit) names the new values, rounded up to 0.1 ms. (over budget): the limits the fleet's
  capacity is bound by are loosened by bisection between the asked value and 4x it
  (:data:`SLO_SEARCH_STEPS` steps, each pricing the single-type fleets of the plan's cheapest
  GPU types, an upper bound on the plan's cost; the value found is then planned). It is within
  10% of the asked limit of the smallest loosening at which those fleets fit the budget.
* **precision**: fp8, then int4 weights, where lighter than the asked precision (the planner
  rejects a GPU that cannot run them).
* **tensor_parallel**: groups up to 8 cards when the request allows fewer;
  **pcie_tensor_parallel**: tensor parallelism over PCIe when the request turned it off.
* **gpu**: one of the GPUs the request's ``gpus`` / ``exclude_gpus`` left out, the
  :data:`GPU_CANDIDATES` cheapest alone (their candidates are built once, their single-type
  fleets solved without assembly).
* **provider**: the providers of the cheapest fleet on every provider the default policy allows,
  added to the request's ``providers``; marketplace offers when the request left them out.
* **budget** (over budget): the budget raised to the plan's cost, rounded up to the cent.

Latency floors also go on the plan's rejections (``best_ttft_ms``, ``best_tpot_ms``).

Pure: same request and snapshot, same relaxations.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

from service.domain.catalog import CatalogSnapshot
from service.domain.perfmodel import RequestShape
from service.domain.perfmodel.capacity import latency_floor
from service.domain.perfmodel.hardware import WEIGHT_BYTES
from service.domain.planner.candidates import (
    allowed_gpus,
    build_candidates,
    deployment,
    fleet_problem,
    gpu_offers,
)
from service.domain.planner.request import HOURS_PER_MONTH, PlanRequest
from service.domain.planner.result import Plan, Rejection, Relaxation, RelaxationKind
from service.domain.solver import cheapest_single_type
from service.domain.vocabulary import Precision

RELAXATIONS_MAX = 5
"""Relaxations a plan lists, cheapest first."""
LOWER_PRECISIONS: tuple[Precision, ...] = ("fp8", "int4")
TENSOR_PARALLEL_MAX = 8
GPU_CANDIDATES = 2
"""Left-out GPUs tried, the cheapest alone first."""
SLO_SEARCH_STEPS = 5
"""Bisection steps over an over-budget plan's binding limit (after one check at 4x)."""
SLO_SEARCH_FACTOR = 4.0
SLO_SEARCH_GPUS = 3
"""GPU types besides the fleet's whose single-type fleets the limit search prices."""

Replan = Callable[[PlanRequest], Plan]
PLANS_MAX = 10
"""Changed requests planned for one plan's relaxations at most (the work stays bounded
whatever the request); none more once one stops at its solver time limit."""


class _Planner:
    """Plans changed requests with ``replan``, at most :data:`PLANS_MAX`, and none after one
    whose solve stopped at its time limit (``None`` then)."""

    def __init__(self, replan: Replan) -> None:
        self._replan = replan
        self._left = PLANS_MAX
        self._stopped = False

    def __call__(self, request: PlanRequest) -> Plan | None:
        if self._stopped or self._left <= 0:
            return None
        self._left -= 1
        p = self._replan(request)
        self._stopped = p.status == "time_limit"
        return p


LIMITS = ("ttft_ms", "tpot_ms", "e2e_ms")
_KIND_ORDER: tuple[RelaxationKind, ...] = (
    "budget",
    "slo",
    "precision",
    "tensor_parallel",
    "pcie_tensor_parallel",
    "gpu",
    "provider",
)


@dataclass(frozen=True, slots=True)
class Floor:
    """The latency floor of one (GPU, tensor-parallel degree) on the request's workload: the
    worst request shape's TTFT, TPOT and E2E at the SLO percentile (ms)."""

    gpu: str
    tensor_parallel: int
    ttft_ms: float
    tpot_ms: float
    e2e_ms: float

    def limit(self, name: str) -> float:
        return {"ttft_ms": self.ttft_ms, "tpot_ms": self.tpot_ms, "e2e_ms": self.e2e_ms}[name]


def latency_floors(request: PlanRequest, snapshot: CatalogSnapshot) -> tuple[Floor, ...]:
    """Floors of every allowed GPU with a usable offer, per tensor-parallel degree the request,
    the card's links and the offers' instance sizes allow, where the model fits."""
    c = request.constraints
    shapes = tuple(RequestShape(b.prompt_tokens, b.output_tokens) for b in request.buckets)
    out: list[Floor] = []
    for gpu in allowed_gpus(request, snapshot):
        offers, _ = gpu_offers(snapshot, gpu, c, request.policy.default_providers)
        if not offers:
            continue
        for tp in sorted(set(c.tensor_parallel)):
            if tp > gpu.nvlink_domain and not c.allow_pcie_tensor_parallel:
                continue
            if all(o.unit(tp) is None for o in offers):
                continue
            dep = deployment(request, gpu, tp)
            caps = [
                latency_floor(request.model.arch, dep, shape, request.slo.percentile)
                for shape in shapes
            ]
            if any(cap.limited_by == "does_not_fit" for cap in caps):
                continue
            out.append(
                Floor(
                    gpu.id,
                    tp,
                    max(cap.ttft_ms for cap in caps),
                    max(cap.tpot_ms for cap in caps),
                    max(cap.e2e_ms for cap in caps),
                )
            )
    return tuple(out)


def with_floors(rejected: Iterable[Rejection], floors: Iterable[Floor]) -> tuple[Rejection, ...]:
    """Rejections with the lowest TTFT and TPOT their GPU reaches (each over its degrees)."""
    by_gpu: dict[str, list[Floor]] = {}
    for f in floors:
        by_gpu.setdefault(f.gpu, []).append(f)
    out = []
    for r in rejected:
        mine = by_gpu.get(r.gpu)
        if mine and r.code != "no_price":
            r = replace(
                r,
                best_ttft_ms=round(min(f.ttft_ms for f in mine), 1),
                best_tpot_ms=round(min(f.tpot_ms for f in mine), 2),
            )
        out.append(r)
    return tuple(out)


def _up(value_ms: float) -> float:
    """A limit rounded up to 0.1 ms, so the deployment that set it still meets it."""
    return math.ceil(value_ms * 10.0 - 1e-9) / 10.0


def _up_cents(usd: float) -> float:
    return math.ceil(usd * 100.0 - 1e-9) / 100.0


def _with_slo(request: PlanRequest, values: dict[str, float]) -> PlanRequest:
    return replace(request, slo=replace(request.slo, **values))


def _with_constraints(request: PlanRequest, **changes: object) -> PlanRequest:
    return replace(request, constraints=replace(request.constraints, **changes))  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class _Change:
    """A candidate change: the changed request and the fields a ``Relaxation`` reports."""

    kind: RelaxationKind
    request: PlanRequest
    fields: tuple[tuple[str, object], ...]


def _slo_changes_from_floors(request: PlanRequest, floors: Iterable[Floor]) -> list[_Change]:
    asked: dict[str, float] = {
        k: getattr(request.slo, k) for k in LIMITS if getattr(request.slo, k) is not None
    }
    best: dict[frozenset[str], tuple[float, dict[str, float]]] = {}
    for f in floors:
        need = {k: _up(f.limit(k)) for k, v in asked.items() if f.limit(k) > v}
        if not need:
            continue
        ratio = max(need[k] / asked[k] for k in need)
        key = frozenset(need)
        if key not in best or ratio < best[key][0]:
            best[key] = (ratio, need)
    needs = [need for _, need in sorted(best.values(), key=lambda x: (x[0], sorted(x[1])))]

    def value(need: dict[str, float], k: str) -> float:
        return need.get(k, asked[k])

    def dominated(need: dict[str, float]) -> bool:
        """Another set of limits loosens none of them more, and one of them less."""
        return any(
            other is not need
            and all(value(other, k) <= value(need, k) for k in asked)
            and any(value(other, k) < value(need, k) for k in asked)
            for other in needs
        )

    return [
        _Change("slo", _with_slo(request, need), tuple(sorted(need.items())))
        for need in needs
        if not dominated(need)
    ]


def _fits_budget(p: Plan | None) -> bool:
    return p is not None and p.status == "optimal" and p.fleet is not None


def _single_type_cost(
    request: PlanRequest, snapshot: CatalogSnapshot, gpus: tuple[str, ...]
) -> float:
    """The cheapest fleet of one of ``gpus`` alone for ``request`` (USD/hour; infinite when
    none meets it): an upper bound on the cost of ``request``'s plan, for fewer capacity
    searches and solves than a plan."""
    probe = replace(
        _with_constraints(request, gpus=gpus, exclude_gpus=()), budget_usd_per_hour=None
    )
    candidates = build_candidates(probe, snapshot)
    if not candidates.items:
        return math.inf
    singles = cheapest_single_type(fleet_problem(probe, candidates))
    return min((sol.usd_per_hour for sol in singles.values() if sol.has_fleet), default=math.inf)


def _slo_changes_by_bisection(
    request: PlanRequest,
    snapshot: CatalogSnapshot,
    plan: Plan,
    binding: Iterable[str],
    replan: _Planner,
) -> list[tuple[_Change, Plan | None]]:
    """For each binding limit, the smallest loosening (within :data:`SLO_SEARCH_STEPS`
    halvings of ``[asked, 4 x asked]``) at which the cheapest single-type fleet of the plan's
    :data:`SLO_SEARCH_GPUS` cheapest GPU types fits the budget (so the plan does too), with
    that plan."""
    budget = request.budget_usd_per_hour
    if budget is None or plan.fleet is None:
        return []
    fleet = {line.gpu for line in plan.fleet.lines}
    cheapest = [a.gpu for a in plan.alternatives if a.gpu not in fleet]
    gpus = tuple(sorted({*fleet, *cheapest[:SLO_SEARCH_GPUS]}))
    out = []
    for name in sorted(binding):
        asked = getattr(request.slo, name)
        if asked is None:
            continue

        def fits(value: float, name: str = name) -> bool:
            changed = _with_slo(request, {name: value})
            return _single_type_cost(changed, snapshot, gpus) <= budget

        hi = _up(asked * SLO_SEARCH_FACTOR)
        if not fits(hi):
            continue
        lo = asked
        for _ in range(SLO_SEARCH_STEPS):
            mid = _up((lo + hi) / 2.0)
            if mid >= hi or mid <= lo:
                break
            if fits(mid):
                hi = mid
            else:
                lo = mid
        change = _Change("slo", _with_slo(request, {name: hi}), ((name, hi),))
        out.append((change, replan(change.request)))
    return out


def _precision_changes(request: PlanRequest) -> list[_Change]:
    asked = WEIGHT_BYTES[request.precision]
    return [
        _Change("precision", replace(request, precision=p), (("precision", p),))
        for p in LOWER_PRECISIONS
        if WEIGHT_BYTES[p] < asked
    ]


def _parallel_changes(request: PlanRequest) -> list[_Change]:
    c = request.constraints
    out = []
    degrees = c.tensor_parallel
    largest = max(degrees)
    if largest < TENSOR_PARALLEL_MAX:
        wider = tuple(sorted({*degrees, *(2**k for k in range(4) if 2**k > largest)}))
        out.append(
            _Change(
                "tensor_parallel",
                _with_constraints(request, tensor_parallel=wider),
                (("tensor_parallel", wider),),
            )
        )
    if not c.allow_pcie_tensor_parallel:
        out.append(
            _Change(
                "pcie_tensor_parallel",
                _with_constraints(request, allow_pcie_tensor_parallel=True),
                (("allow_pcie_tensor_parallel", True),),
            )
        )
    return out


def _gpu_changes(request: PlanRequest, snapshot: CatalogSnapshot) -> list[_Change]:
    """The left-out GPUs whose single-type fleets are cheapest, each added to the request."""
    c = request.constraints
    allowed = {g.id for g in allowed_gpus(request, snapshot)}
    left_out = tuple(sorted(g.id for g in snapshot.gpus if g.id not in allowed))
    if not left_out:
        return []
    probe = _with_constraints(request, gpus=left_out, exclude_gpus=())
    candidates = build_candidates(probe, snapshot)
    if not candidates.items:
        return []
    singles = cheapest_single_type(fleet_problem(probe, candidates))
    ranked = sorted((sol.usd_per_hour, gpu) for gpu, sol in singles.items() if sol.has_fleet)
    out = []
    for _, gpu in ranked[:GPU_CANDIDATES]:
        fields: list[tuple[str, object]] = []
        changes: dict[str, object] = {}
        if c.gpus is not None and gpu not in c.gpus:
            changes["gpus"] = tuple(sorted({*c.gpus, gpu}))
            fields.append(("gpus", changes["gpus"]))
        if gpu in c.exclude_gpus:
            changes["exclude_gpus"] = tuple(g for g in c.exclude_gpus if g != gpu)
            fields.append(("exclude_gpus", changes["exclude_gpus"]))
        out.append(_Change("gpu", _with_constraints(request, **changes), tuple(fields)))
    return out


def _provider_changes(request: PlanRequest, replan: _Planner) -> list[_Change]:
    c = request.constraints
    if c.pricing == "owned":
        return []
    if c.providers is not None:
        anywhere = replan(_with_constraints(request, providers=None))
        if anywhere is None or anywhere.fleet is None:
            return []
        wider = tuple(sorted({*c.providers, *(line.provider for line in anywhere.fleet.lines)}))
        if wider == c.providers:
            return []
        return [
            _Change(
                "provider",
                _with_constraints(request, providers=wider),
                (("providers", wider),),
            )
        ]
    if not c.allow_marketplaces:
        return [
            _Change(
                "provider",
                _with_constraints(request, allow_marketplaces=True),
                (("allow_marketplaces", True),),
            )
        ]
    return []


def _words(request: PlanRequest, fields: dict[str, object]) -> str:
    pct = f"p{request.slo.percentile:g}"
    parts = []
    for name, label in (("ttft_ms", "TTFT"), ("tpot_ms", "TPOT"), ("e2e_ms", "E2E")):
        if name in fields:
            parts.append(
                f"{label} {pct} <= {fields[name]:g} ms (asked {getattr(request.slo, name):g})"
            )
    if "precision" in fields:
        parts.append(f"weights in {fields['precision']} (asked {request.precision})")
    if "tensor_parallel" in fields:
        degrees = ", ".join(str(t) for t in fields["tensor_parallel"])  # type: ignore[attr-defined]
        parts.append(f"tensor-parallel groups of {degrees} cards")
    if "allow_pcie_tensor_parallel" in fields:
        parts.append("tensor parallel over PCIe")
    if "gpus" in fields or "exclude_gpus" in fields:
        parts.append("also the GPU " + kind_subject(request, fields))
    if "providers" in fields:
        parts.append("providers " + ", ".join(fields["providers"]))  # type: ignore[arg-type]
    if "allow_marketplaces" in fields:
        parts.append("marketplace offers")
    if "budget_usd_per_hour" in fields:
        parts.append(f"a budget of ${fields['budget_usd_per_hour']:,.2f}/hour")
    text = " and ".join(parts)
    return text[:1].upper() + text[1:]


def kind_subject(request: PlanRequest, fields: dict[str, object]) -> str:
    """The GPU a ``gpu`` relaxation adds (the one new in ``gpus``, or gone from
    ``exclude_gpus``)."""
    c = request.constraints
    if "gpus" in fields:
        added = set(fields["gpus"]) - set(c.gpus or ())  # type: ignore[call-overload]
    else:
        added = set(c.exclude_gpus) - set(fields["exclude_gpus"])  # type: ignore[call-overload]
    return ", ".join(sorted(added))


def _relaxation(request: PlanRequest, change: _Change, p: Plan | None) -> Relaxation | None:
    """The relaxation ``change`` makes, given its plan ``p``; ``None`` when that plan does not
    meet the request (no fleet, or a time-limited answer) or was not made."""
    if p is None or p.fleet is None or p.status not in ("optimal", "over_budget"):
        return None
    fields = dict(change.fields)
    if p.status == "over_budget":
        fields["budget_usd_per_hour"] = _up_cents(p.fleet.usd_per_hour)
    cost = p.fleet.usd_per_hour
    gpus = tuple(sorted({line.gpu for line in p.fleet.lines}))
    sentence = (
        f"{_words(request, fields)}: {', '.join(gpus)} "
        f"for ${cost:,.2f}/hour (${cost * HOURS_PER_MONTH:,.2f}/month)."
    )
    return Relaxation(
        kind=change.kind,
        usd_per_hour=cost,
        fleet_gpus=gpus,
        sentence=sentence,
        **fields,  # type: ignore[arg-type]
    )


def relaxations(
    request: PlanRequest,
    snapshot: CatalogSnapshot,
    plan: Plan,
    floors: tuple[Floor, ...],
    binding: frozenset[str],
    replan: Replan,
) -> tuple[Relaxation, ...]:
    """The cheapest changes that make ``plan`` (infeasible or over budget) feasible (see the
    module docstring). ``binding``: the latency limits (``ttft_ms``...) the over-budget
    fleet's capacity is bound by; ``replan`` plans a changed request without relaxations."""
    found: list[Relaxation] = []
    tried: list[tuple[_Change, Plan | None]] = []
    planner = _Planner(replan)
    over_budget = plan.status == "over_budget" and plan.fleet is not None
    if over_budget:
        tried.extend(_slo_changes_by_bisection(request, snapshot, plan, binding, planner))
    else:
        changes = _slo_changes_from_floors(request, floors)
        tried.extend((ch, planner(ch.request)) for ch in changes)
    others = [
        *_precision_changes(request),
        *_parallel_changes(request),
        *_gpu_changes(request, snapshot),
        *_provider_changes(request, planner),
    ]
    tried.extend((ch, planner(ch.request)) for ch in others)
    for change, p in tried:
        if over_budget and not _fits_budget(p):
            continue
        relaxed = _relaxation(request, change, p)
        if relaxed is not None:
            found.append(relaxed)
    if over_budget and plan.fleet is not None:
        cost = plan.fleet.usd_per_hour
        budget = _up_cents(cost)
        found.append(
            Relaxation(
                kind="budget",
                usd_per_hour=cost,
                fleet_gpus=tuple(sorted({line.gpu for line in plan.fleet.lines})),
                sentence=(
                    f"A budget of ${budget:,.2f}/hour (asked "
                    f"${request.budget_usd_per_hour or 0:,.2f}): the plan's fleet as it is."
                ),
                budget_usd_per_hour=budget,
            )
        )
    unique: dict[tuple[object, ...], Relaxation] = {}
    for r in found:
        key = _identity(r)
        if key not in unique or r.usd_per_hour < unique[key].usd_per_hour:
            unique[key] = r
    ranked = sorted(
        unique.values(),
        key=lambda r: (round(r.usd_per_hour, 6), _KIND_ORDER.index(r.kind), r.sentence),
    )
    return tuple(ranked[:RELAXATIONS_MAX])


def _identity(r: Relaxation) -> tuple[object, ...]:
    return (
        r.ttft_ms,
        r.tpot_ms,
        r.e2e_ms,
        r.precision,
        r.tensor_parallel,
        r.allow_pcie_tensor_parallel,
        r.gpus,
        r.exclude_gpus,
        r.providers,
        r.allow_marketplaces,
        r.budget_usd_per_hour,
    )


def relaxed_request(request: PlanRequest, relaxation: Relaxation) -> PlanRequest:
    """``request`` with ``relaxation``'s changes applied (what a caller sends to get it)."""
    slo = {k: getattr(relaxation, k) for k in LIMITS if getattr(relaxation, k) is not None}
    out = _with_slo(request, slo) if slo else request
    if relaxation.precision is not None:
        out = replace(out, precision=relaxation.precision)
    if relaxation.budget_usd_per_hour is not None:
        out = replace(out, budget_usd_per_hour=relaxation.budget_usd_per_hour)
    constraints = {
        name: getattr(relaxation, name)
        for name in (
            "tensor_parallel",
            "allow_pcie_tensor_parallel",
            "gpus",
            "exclude_gpus",
            "providers",
            "allow_marketplaces",
        )
        if getattr(relaxation, name) is not None
    }
    return _with_constraints(out, **constraints) if constraints else out
