"""The mixing policy: whether the plan's fleet may mix GPU types, and which rule decided.

The solver already keeps a fleet within ``max_gpu_types``. Two rules are applied here, over its
answers:

* **one vendor** (``allow_mixed_vendors`` false): when the cheapest fleet mixes vendors, the
  fleet is solved again within each vendor's GPUs and the cheapest of those is taken;
* **savings threshold** (``min_mix_savings_percent``): a fleet of several GPU types is returned
  only when it costs at least that percentage less than the cheapest single-type fleet;
  otherwise that single-type fleet is, and the mixed one is kept to be named with its saving.

Pure: solver calls on values.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import NamedTuple

from service.domain.planner.candidates import Candidates
from service.domain.planner.request import PlanRequest
from service.domain.planner.result import Alternative, Fleet, MixDecision
from service.domain.solver import (
    FleetProblem,
    FleetSolution,
    Reason,
    ReasonCode,
    SolveStatus,
    max_qps_within_budget,
    pricing_min_replicas_beating,
    relaxed_costs,
    solve_fleet,
    solve_fleet_beating,
    solve_fleet_pricing_min_replicas,
)


def gpu_vendors(candidates: Candidates) -> dict[str, str]:
    """Vendor of every GPU with an option (lowercase, e.g. ``nvidia``, ``amd``)."""
    return {c.option.gpu_id: c.deployment.gpu.vendor.lower() for c in candidates.items.values()}


def _rank(solution: FleetSolution) -> tuple[float, int]:
    return (round(solution.usd_per_hour, 9), solution.total_cards)


def relaxed_costs_within_rule(
    problem: FleetProblem,
    vendors: Mapping[str, str] | None,
    labels: tuple[str, ...],
    singles: Mapping[str, FleetSolution],
) -> dict[str, float]:
    """``label -> USD/hour`` of the cheapest fleet with that one constraint removed, still
    within the vendor rule (the least over the vendors' scopes, :func:`scopes_of`), so that
    what a constraint is said to cost is not what the vendor rule costs. Labels not proven in
    every scope are left out.

    ``singles`` (the cheapest fleet of each GPU type alone, :func:`cheapest_single_type`)
    bound the re-solves: a one-type fleet lies within its vendor's scope and stays feasible
    with any constraint removed, so the cheapest of a scope's is a known value for that
    scope's re-solves. It only narrows the search, and needs nothing from the policy's own
    solve, so the re-solves can run beside it."""

    def bound(scope: FleetProblem) -> float | None:
        gpus = {o.gpu_id for o in scope.options}
        return min(
            (s.usd_per_hour for gpu, s in singles.items() if gpu in gpus and s.has_fleet),
            default=None,
        )

    scopes = scopes_of(problem, vendors)
    if len(scopes) == 1:
        return relaxed_costs(problem, labels, bound(problem))
    # each scope's re-solves search only below the least proven in the scopes before it
    found: list[dict[str, float]] = []
    for scope in scopes:
        least = {
            label: min(values)
            for label in labels
            if len(values := [costs[label] for costs in found if label in costs]) == len(found)
            and values
        }
        found.append(relaxed_costs(scope, labels, bound(scope), infeasible_as_inf=True, beat=least))
    out = {}
    for label in labels:
        values = [costs[label] for costs in found if label in costs]
        if len(values) == len(found) and min(values) < float("inf"):
            out[label] = min(values)
    return out


class VendorSolve(NamedTuple):
    """The policy's solve: its fleet, the most load its budget buys (``None`` without a
    budget), and what-if costs it priced on the way (``label -> USD/hour``, see
    :func:`relaxed_costs_within_rule`)."""

    solution: FleetSolution
    budget_qps: float | None
    relaxed: dict[str, float]


def one_vendor_solve(
    problem: FleetProblem,
    candidates: Candidates,
    request: PlanRequest,
    *,
    price_min_replicas: bool = False,
) -> VendorSolve:
    """The cheapest fleet (and, with a budget, the most load the budget buys) under the
    vendor rule: the plain solve when vendors may mix or only one vendor has options, else
    the cheapest of the solves within each vendor's GPUs (their most load within budget).

    Solving per vendor straight away gives the same fleet as solving the whole problem first
    and splitting only when its fleet mixes vendors (a fleet of one vendor that is cheapest
    overall is cheapest within its vendor), without the whole solve, the dearest of them,
    which on the bundled catalog mixes vendors in about half of the plans. Only when no vendor
    alone has a fleet is the whole problem solved, to tell "only a mix of vendors meets the
    demand" from a request nothing meets (diagnosed).

    ``price_min_replicas``: each scope is solved with
    :func:`~service.domain.solver.solve_fleet_pricing_min_replicas`, which also prices the
    replica floors (the ``min_replicas`` what-if, as :func:`relaxed_costs_within_rule` gives
    it, in ``relaxed`` when proven in every scope), mostly from the same solve."""
    with_budget = request.budget_usd_per_hour is not None
    scoped = vendor_scopes(problem, candidates, request)
    if with_budget or len(scoped) == 1:
        solved = [(*_scope_solve(p, price_min_replicas), p) for p in scoped]
    else:
        solved = _solve_scopes_beating(scoped, price_min_replicas)
    relaxed = _least_proven([r for _, r, _ in solved]) if price_min_replicas else None
    priced = {} if relaxed is None else {"min_replicas": relaxed}
    if len(scoped) == 1:
        solution = solved[0][0]
        budget_qps = solution.max_qps_within_budget
        if budget_qps is None and with_budget:
            budget_qps = max_qps_within_budget(problem)
        return VendorSolve(solution, budget_qps, priced)
    feasible = [(s, p) for s, _, p in solved if s.has_fleet]
    budget_qps = (
        max(
            (s.max_qps_within_budget if s.max_qps_within_budget is not None else
             max_qps_within_budget(p))
            for s, _, p in solved
        )
        if with_budget
        else None
    )  # fmt: skip
    if not feasible:
        whole = solve_fleet(problem)
        if not whole.has_fleet:
            return VendorSolve(whole, budget_qps, {})
        reason = Reason(
            ReasonCode.SINGLE_VENDOR,
            message=(
                "only a fleet mixing GPU vendors meets the demand, and allow_mixed_vendors is false"
            ),
        )
        return VendorSolve(
            FleetSolution(status=SolveStatus.INFEASIBLE, reasons=(reason,)), budget_qps, {}
        )
    best, _ = min(feasible, key=lambda sp: _rank(sp[0]))
    return VendorSolve(best, budget_qps, priced)


def _scope_solve(
    scope: FleetProblem, price_min_replicas: bool
) -> tuple[FleetSolution, float | None]:
    if price_min_replicas:
        return solve_fleet_pricing_min_replicas(scope)
    return solve_fleet(scope), None


def _solve_scopes_beating(
    scoped: tuple[FleetProblem, ...], price_min_replicas: bool
) -> list[tuple[FleetSolution, float | None, FleetProblem]]:
    """:func:`_scope_solve` of each scope in turn (no budget), each searching only fleets
    that rank before the best of the scopes solved before it (``min`` of :func:`_rank`, the
    first of equals, picks the same fleet) and, for the floors' what-if, only costs below the
    least proven before it. A scope with nothing there comes back infeasible (it cannot hold
    the answer), its what-if ``inf`` (it cannot hold the least). Measured on the cold plans of
    ``bench/plan_latency.py``, the scope that loses (most often the larger one) took about a
    third of the policy's solve time; bounded, three of five such solves end after the LP
    relaxation alone, the rest after one or two short MILP runs."""
    out: list[tuple[FleetSolution, float | None, FleetProblem]] = []
    for scope in scoped:
        fleets = [s for s, _, _ in out if s.has_fleet]
        beat = None
        if fleets:
            best = min(fleets, key=_rank)
            beat = (best.usd_per_hour, float(best.total_cards))
        solution: FleetSolution | None
        relaxed: float | None = None
        if not price_min_replicas:
            solution = solve_fleet(scope) if beat is None else solve_fleet_beating(scope, beat)
        else:
            proven = _least_proven([r for _, r, _ in out])
            solution, relaxed = pricing_min_replicas_beating(scope, beat, proven)
        out.append((solution or FleetSolution(status=SolveStatus.INFEASIBLE), relaxed, scope))
    return out


def _least_proven(values: list[float | None]) -> float | None:
    """The least of the scopes' what-if costs when every scope proved its own (``inf``: no
    fleet there) and one has a fleet, else ``None``, as :func:`relaxed_costs_within_rule`."""
    if not values or any(v is None for v in values):
        return None
    least = min(v for v in values if v is not None)
    return least if least < float("inf") else None


def gpu_types(fleet: Fleet) -> int:
    return len({line.gpu for line in fleet.lines})


def decide(
    request: PlanRequest,
    fleet: Fleet | None,
    alternatives: tuple[Alternative, ...],
) -> MixDecision:
    """Which rule decides between ``fleet`` (the cheapest within ``max_gpu_types`` and the
    vendor rule) and the cheapest single-type fleet ``alternatives[0]``."""
    m = request.constraints.mixing
    base = MixDecision(
        rule="one_type_cheapest",
        max_gpu_types=m.max_gpu_types,
        min_mix_savings_percent=m.min_mix_savings_percent,
        allow_mixed_vendors=m.allow_mixed_vendors,
    )
    if m.max_gpu_types == 1:
        return replace(base, rule="single_type_required")
    if fleet is None or gpu_types(fleet) <= 1:
        return base
    if not alternatives:
        return replace(base, rule="no_single_type")
    best = alternatives[0]
    single_usd = best.fleet.usd_per_hour
    saved = single_usd - fleet.usd_per_hour
    percent = saved / single_usd * 100 if single_usd > 0 else 0.0
    measured = replace(
        base, saving_percent=percent, saving_usd_per_hour=saved, single_type_gpu=best.gpu
    )
    if percent >= m.min_mix_savings_percent:
        return replace(measured, rule="mix_saves_enough")
    return replace(measured, rule="mix_saving_below_threshold", mixed_fleet=fleet)


def decision_sentence(decision: MixDecision) -> str:
    """The explanation's sentence naming the rule that decided."""
    threshold = f"{decision.min_mix_savings_percent:g}%"
    if decision.rule == "single_type_required":
        return "Mixing rule: max_gpu_types=1, so the fleet uses one GPU type."
    if decision.rule == "no_single_type":
        return (
            "Mixing rule: no single GPU type meets the request, so the fleet mixes types "
            f"(at most {decision.max_gpu_types}) whatever the saving."
        )
    vendors = "" if decision.allow_mixed_vendors else ", one vendor"
    if decision.rule == "one_type_cheapest":
        return (
            f"Mixing rule: the cheapest fleet within the policy (at most "
            f"{decision.max_gpu_types} GPU types{vendors}) uses one GPU type."
        )
    saving = (
        f"${decision.saving_usd_per_hour or 0.0:,.2f}/hour "
        f"({decision.saving_percent or 0.0:.1f}%) against {decision.single_type_gpu} alone"
    )
    if decision.rule == "mix_saves_enough":
        return (
            f"Mixing rule: the mixed fleet saves {saving}, at least min_mix_savings_percent="
            f"{threshold}, so it is returned."
        )
    mixed = decision.mixed_fleet
    lines = (
        "; ".join(f"{x.replicas} x {x.gpu} on {x.provider}" for x in mixed.lines) if mixed else ""
    )
    return (
        f"Mixing rule: a mixed fleet ({lines}) would save {saving}, below "
        f"min_mix_savings_percent={threshold}, so the cheapest single type is returned; the "
        "mixed fleet is under mixing.mixed_fleet."
    )


def vendor_scopes(
    problem: FleetProblem, candidates: Candidates, request: PlanRequest
) -> tuple[FleetProblem, ...]:
    """The problems whose cheapest fleet, the cheapest of them, is the plan's under the vendor
    rule: ``problem`` itself when vendors may mix (or only one is in scope), else one problem
    per vendor with only that vendor's options."""
    return scopes_of(problem, scope_vendors(candidates, request))


def scope_vendors(candidates: Candidates, request: PlanRequest) -> dict[str, str] | None:
    """Each GPU's vendor when the vendor rule splits the problem (``allow_mixed_vendors``
    false), else ``None``: what :func:`scopes_of` needs, as plain data."""
    if request.constraints.mixing.allow_mixed_vendors:
        return None
    return gpu_vendors(candidates)


def scopes_of(problem: FleetProblem, vendors: Mapping[str, str] | None) -> tuple[FleetProblem, ...]:
    """:func:`vendor_scopes` from :func:`scope_vendors`' answer: ``problem`` itself for
    ``None`` or one vendor in scope, else one problem per vendor (sorted) with its options."""
    if vendors is None:
        return (problem,)
    present = sorted({vendors[o.gpu_id] for o in problem.options})
    if len(present) <= 1:
        return (problem,)
    return tuple(
        replace(problem, options=tuple(o for o in problem.options if vendors[o.gpu_id] == v))
        for v in present
    )


def policy_usd_per_hour(
    request: PlanRequest, mixed: float | None, best_single: float | None
) -> float | None:
    """The cost of the fleet the policy returns, from the cheapest fleet within
    ``max_gpu_types`` and the vendor rule (``mixed``) and the cheapest single-type fleet
    (``best_single``), ``None`` for no fleet: the rules of :func:`decide`, on costs alone."""
    if mixed is None or best_single is None:
        return mixed if best_single is None else best_single
    saving = (best_single - mixed) / best_single * 100 if best_single > 0 else 0.0
    if saving >= request.constraints.mixing.min_mix_savings_percent:
        return mixed
    return best_single
