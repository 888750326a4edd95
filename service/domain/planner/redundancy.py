"""Redundancy made explicit: what share of the target load a fleet still carries when it loses
its worst line, provider or region, and a plain statement when it has none at all.

"Carries" is the fleet capacity of :func:`assemble.fleet_capacity` (the most load of the
request's mix the remaining units serve within the SLO by the performance model, no headroom),
as a percentage of the requested load. Pure: one small LP per line, provider and region.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from service.domain.planner.assemble import fleet_capacity
from service.domain.planner.candidates import Candidates
from service.domain.planner.request import PlanRequest
from service.domain.planner.result import Redundancy
from service.domain.solver import FleetSolution


def _left_without(
    request: PlanRequest,
    candidates: Candidates,
    solution: FleetSolution,
    group_of: Callable[[str], str],
) -> float | None:
    """Percent of the target load carried after losing the worst group of units (``None``
    when every unit is in one group: losing it leaves nothing, reported as 0)."""
    groups = sorted({group_of(key) for key, _ in solution.units})
    worst: float | None = None
    for lost in groups:
        kept = tuple((k, n) for k, n in solution.units if group_of(k) != lost)
        carried = (
            fleet_capacity(request, candidates, replace(solution, units=kept)) if kept else 0.0
        )
        percent = carried / request.qps * 100 if request.qps > 0 else 0.0
        worst = percent if worst is None else min(worst, percent)
    return worst


def redundancy(request: PlanRequest, candidates: Candidates, solution: FleetSolution) -> Redundancy:
    """How the fleet of ``solution`` survives losing one line (an option: GPU, tensor-parallel
    degree, offer), one provider or one region."""
    items = candidates.items
    replicas = sum(n * items[k].replicas_per_unit for k, n in solution.units)
    providers = sorted({items[k].offer.provider for k, _ in solution.units})
    regions = sorted({(items[k].offer.provider, items[k].offer.region) for k, _ in solution.units})
    line = _left_without(request, candidates, solution, lambda k: k)
    provider = _left_without(request, candidates, solution, lambda k: items[k].offer.provider)
    region = _left_without(
        request,
        candidates,
        solution,
        lambda k: f"{items[k].offer.provider}|{items[k].offer.region}",
    )
    return Redundancy(
        replicas=replicas,
        lines=len(solution.units),
        providers=len(providers),
        regions=len(regions),
        without_worst_line_percent=line or 0.0,
        without_worst_provider_percent=provider or 0.0,
        without_worst_region_percent=region or 0.0,
    )


def redundancy_sentence(r: Redundancy) -> str:
    """The explanation's statement of the fleet's redundancy."""
    if r.replicas <= 1:
        return (
            "Redundancy: none. The fleet is one replica, so losing its card or instance stops "
            "the service; ask for min_replicas >= 2 to keep a spare."
        )
    parts = [
        "all on one line, so losing that offer stops the service"
        if r.lines == 1
        else f"losing its worst line leaves {r.without_worst_line_percent:.0f}% of the target load",
        "one provider"
        if r.providers == 1
        else f"losing a provider leaves {r.without_worst_provider_percent:.0f}%",
        "one region"
        if r.regions == 1
        else f"losing a region leaves {r.without_worst_region_percent:.0f}%",
    ]
    return f"Redundancy: {r.replicas} replicas; " + "; ".join(parts) + "."
