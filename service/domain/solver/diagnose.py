"""Explanations: which constraints are active at a fleet, and why a problem has no fleet.

Binding labels (also :attr:`Reason.label` spellings): ``demand:<bucket>``,
``max_cards:<gpu_id>``, ``max_units:<option key>``, ``min_replicas``, ``budget``.
Pure functions over the canonical arrays; no solver calls here.
"""

from __future__ import annotations

import math

import numpy as np

from service.domain.solver.problem import Reason, ReasonCode
from service.domain.solver.prune import (
    PLACE_KINDS,
    Canon,
    FloatArray,
    IntArray,
    cap_bound,
    place_names,
    places_of,
    usable_options,
)

# Card caps up to this many cards get the exact knapsack in :func:`max_replicas_allowed`
# (one numpy pass over ``cards + 1`` entries per binary chunk of an option's unit bound).
KNAPSACK_MAX_CARDS = 1_000_000


def active_constraints(canon: Canon, x: IntArray, cost_units: float) -> tuple[str, ...]:
    """Labels of the constraints tight at fleet ``x`` (units per canon option), sorted.

    * ``demand:<bucket>`` for every demanded bucket (C1 is an equality: always active);
    * ``max_cards:<gpu>`` when the GPU's cards equal its cap (cap > 0);
    * ``max_units:<option>`` when the option's units equal its unit cap (cap > 0);
    * ``min_replicas`` when the fleet hosts exactly ``min_replicas`` model replicas (> 0),
      ``sum_g rpu[g] * x[g]``;
    * ``budget`` when the fleet costs the budget or more (``cost_units`` in cost units).

    Active is not the same as costly: relaxing an active cap may leave the cost unchanged
    (:func:`service.domain.solver.whatif.relaxation_savings` measures that).
    """
    labels: list[str] = [f"demand:{canon.bucket_keys[s]}" for s in np.flatnonzero(canon.demanded)]
    cards = np.bincount(canon.gpu_of, weights=x * canon.tp, minlength=len(canon.gpus))
    card_capped = np.isfinite(canon.card_cap) & (canon.card_cap > 0)
    for i in np.flatnonzero(card_capped & (cards == canon.card_cap)):
        labels.append(f"max_cards:{canon.gpus[i]}")
    unit_capped = np.isfinite(canon.max_units) & (canon.max_units > 0)
    for g in np.flatnonzero(unit_capped & (x == canon.max_units)):
        labels.append(f"max_units:{canon.keys[g]}")
    if canon.min_replicas > 0 and int(np.dot(x, canon.rpu)) == canon.min_replicas:
        labels.append("min_replicas")
    if canon.budget_units is not None and cost_units >= canon.budget_units:
        labels.append("budget")
    return tuple(sorted(labels))


def coverage_reasons(canon: Canon, gpu_id: str | None) -> tuple[Reason, ...]:
    """Shapes nobody can serve, whatever the caps (capacities are all 0).

    * whole problem: ``unservable_bucket`` per such bucket; with ``allow_mix=False`` and every
      bucket servable by some GPU, ``no_single_type`` plus ``gpu_cannot_serve`` per GPU when no
      single GPU serves them all;
    * one GPU (``gpu_id``): ``gpu_cannot_serve`` listing the shapes it cannot serve;
    * with shared routing, ``shared_routing`` when every shape is servable but no option (of
      ``gpu_id``) serves all of them.
    """
    demanded = canon.demanded
    if gpu_id is not None:
        mine = canon.gpu_of == canon.gpu_index(gpu_id)
        missing = _unservable(canon, mine)
        if missing:
            return (_gpu_cannot_serve(gpu_id, missing),)
        if canon.shared and not bool((canon.usable & mine).any()):
            return (_shared_routing_reason(gpu_id),)
        return ()
    everyone = np.ones(len(canon.keys), dtype=np.bool_)
    missing = _unservable(canon, everyone)
    if missing:
        return tuple(
            Reason(
                ReasonCode.UNSERVABLE_BUCKET,
                bucket,
                buckets=(bucket,),
                message=f"no option can serve bucket {bucket!r} within the SLO",
            )
            for bucket in missing
        )
    if canon.shared and not bool(canon.usable.any()):
        return (_shared_routing_reason(None),)
    if canon.allow_mix or not bool(demanded.any()):
        return ()
    per_gpu = [(gpu, _unservable(canon, canon.gpu_of == i)) for i, gpu in enumerate(canon.gpus)]
    if any(not gaps for _, gaps in per_gpu):
        return ()
    return (
        Reason(
            ReasonCode.NO_SINGLE_TYPE,
            message="no single GPU type can serve every bucket, and mixing types is disallowed",
        ),
        *(_gpu_cannot_serve(gpu, gaps) for gpu, gaps in per_gpu),
    )


def _shared_routing_reason(gpu_id: str | None) -> Reason:
    what = f"no {gpu_id} option" if gpu_id is not None else "no option"
    return Reason(
        ReasonCode.SHARED_ROUTING,
        gpu_id or "",
        message=f"{what} serves every request shape within the SLO, which routing "
        "'shared' needs (every line serves the whole mix)",
    )


def _unservable(canon: Canon, mask: np.ndarray) -> tuple[str, ...]:
    servable = (canon.cap[:, mask] > 0.0).any(axis=1)
    return tuple(canon.bucket_keys[s] for s in np.flatnonzero(canon.demanded & ~servable))


def _gpu_cannot_serve(gpu_id: str, buckets: tuple[str, ...]) -> Reason:
    return Reason(
        ReasonCode.GPU_CANNOT_SERVE,
        gpu_id,
        buckets=buckets,
        message=f"{gpu_id} cannot serve bucket(s) {', '.join(buckets)} within the SLO",
    )


def max_replicas_allowed(canon: Canon, gpu_id: str | None) -> float:
    """Most MODEL replicas the caps allow among usable options (inf when unbounded): the
    maximum of ``sum_g rpu[g] * x[g]`` over unit counts ``x`` within every cap, whatever the
    demand.

    Per GPU that is a bounded knapsack (cards ``tp[g]`` per unit, value ``rpu[g]`` per unit,
    ``x[g] <= min(max_units, floor(K / tp[g]))``), solved exactly by
    :func:`_most_replicas_on_gpu`. Single-type problems take the best GPU; mixes add them up
    (the best ``max_gpu_types`` of them under a type limit).
    """
    usable = usable_options(canon, gpu_id)
    bound = cap_bound(canon)
    per_gpu: list[float] = []
    for i in range(len(canon.gpus)):
        cols = np.flatnonzero(usable & (canon.gpu_of == i))
        if cols.size == 0:
            continue
        most = _most_replicas_on_gpu(
            canon.tp[cols].astype(np.float64),
            canon.rpu[cols].astype(np.float64),
            bound[cols],
            float(canon.card_cap[i]),
        )
        if math.isinf(most):
            return math.inf
        per_gpu.append(most)
    if not per_gpu:
        return 0.0
    single = gpu_id is not None or not canon.allow_mix
    if single:
        return max(per_gpu)
    if canon.max_gpu_types >= 2:
        return math.fsum(sorted(per_gpu, reverse=True)[: canon.max_gpu_types])
    return math.fsum(per_gpu)


def _most_replicas_on_gpu(
    tp: FloatArray, rpu: FloatArray, bound: FloatArray, cards: float
) -> float:
    """``max sum rpu * x`` s.t. ``sum tp * x <= cards``, ``0 <= x <= bound``, x integer.

    ``bound`` already includes ``floor(cards / tp)``, so it is finite whenever ``cards`` is.
    When the bounds alone fit the cards the answer is ``sum rpu * bound``; otherwise a 0/1
    knapsack over cards with each bound split into binary chunks (1, 2, 4, ..., rest): exact.
    Above :data:`KNAPSACK_MAX_CARDS` cards (never in practice), the fractional relaxation
    (best replicas per card first), rounded down: an upper bound, so ``min_replicas`` is never
    blamed wrongly (a missed blame still leaves the elastic cap reasons).
    """
    if bool(np.any(np.isinf(bound))):
        return math.inf
    if float(np.sum(tp * bound)) <= cards:
        return float(np.sum(rpu * bound))
    if cards > KNAPSACK_MAX_CARDS:
        left, total = cards, 0.0
        for j in sorted(range(tp.size), key=lambda j: (-rpu[j] / tp[j], j)):
            take = min(float(bound[j]), left / float(tp[j]))
            total += take * float(rpu[j])
            left -= take * float(tp[j])
        return float(math.floor(total + 1e-9))
    size = int(cards)
    best = np.zeros(size + 1)  # best[c]: most replicas within c cards
    for j in range(tp.size):
        left_units = int(bound[j])
        chunk = 1
        while left_units > 0:
            take = min(chunk, left_units)
            left_units -= take
            chunk *= 2
            weight = take * int(tp[j])
            if weight > size:
                continue
            # Right-hand side is built before the assignment: each chunk is used at most once.
            best[weight:] = np.maximum(best[weight:], best[: size + 1 - weight] + take * rpu[j])
    return float(best[size])


def min_replicas_reason(canon: Canon, gpu_id: str | None) -> Reason | None:
    """``min_replicas`` when the caps allow fewer model replicas than it asks for."""
    allowed = max_replicas_allowed(canon, gpu_id)
    if canon.min_replicas <= allowed:
        return None
    shortfall = canon.min_replicas - allowed
    return Reason(
        ReasonCode.MIN_REPLICAS,
        shortfall=shortfall,
        message=(
            f"min_replicas is {canon.min_replicas} but the caps allow at most "
            f"{int(allowed)} model replicas"
        ),
    )


def spread_reasons(canon: Canon, gpu_id: str | None) -> tuple[Reason, ...]:
    """Why no fleet can meet ``min_providers`` / ``min_regions`` whatever the caps: fewer
    places offer a usable option (of ``gpu_id``, when given) than asked for, or losing one of
    them leaves a demanded shape no option elsewhere serves (from 2 up the fleet must survive
    that). Nothing when no fleet is needed."""
    if not canon.needs_fleet:
        return ()
    scope = usable_options(canon, gpu_id)
    where = f" of {gpu_id}" if gpu_id is not None else ""
    out: list[Reason] = []
    for kind, least in enumerate((canon.min_providers, canon.min_regions)):
        if least < 2:
            continue
        setting = f"min_{PLACE_KINDS[kind]}"
        place = places_of(canon, kind)
        names = place_names(canon, kind)
        present = [int(p) for p in np.unique(place[scope])]
        if len(present) < least:
            listed = ", ".join(names[p] for p in present) or "none"
            out.append(
                Reason(
                    ReasonCode.SPREAD,
                    setting,
                    shortfall=float(least - len(present)),
                    message=f"spread.{setting} is {least} but only {len(present)} "
                    f"{PLACE_KINDS[kind]} offer a usable option{where} ({listed})",
                )
            )
            continue
        for p in present:
            rest = scope & (place != p)
            gaps = _orphaned(canon, rest)
            if gaps:
                out.append(
                    Reason(
                        ReasonCode.SPREAD,
                        setting,
                        buckets=gaps,
                        message=f"losing {PLACE_KINDS[kind][:-1]} {names[p]} leaves no option"
                        f"{where} that serves bucket(s) {', '.join(gaps)}, so no fleet survives "
                        f"it (spread.{setting} is {least})",
                    )
                )
                break
    return tuple(out)


def _orphaned(canon: Canon, rest: np.ndarray) -> tuple[str, ...]:
    """Demanded buckets the options in ``rest`` cannot serve (all of them, with shared
    routing, when none of them is left: each serves the whole mix or is not usable)."""
    if canon.shared:
        return () if bool(rest.any()) else _unservable(canon, rest)
    return _unservable(canon, rest)


def spread_fit_reason(canon: Canon) -> Reason:
    """Spread is possible place by place, but not together with the other constraints."""
    asked = [
        f"spread.min_{PLACE_KINDS[kind]}={least}"
        for kind, least in enumerate((canon.min_providers, canon.min_regions))
        if least >= 2
    ]
    setting = "min_regions" if canon.min_regions >= 2 else "min_providers"
    return Reason(
        ReasonCode.SPREAD,
        setting,
        message=f"no fleet meets {' and '.join(asked)} together with the other constraints",
    )


def line_min_replicas_reason(canon: Canon, gpu_id: str | None) -> Reason | None:
    """``line_min_replicas`` when the caps let no usable option host that many replicas on its
    own line (``min(max_units, floor(max_cards / tp)) * rpu``)."""
    if canon.line_min_replicas < 2:
        return None
    scope = usable_options(canon, gpu_id)
    if not bool(scope.any()):
        return None
    most = float(np.max(cap_bound(canon)[scope] * canon.rpu[scope]))
    if most >= canon.line_min_replicas:
        return None
    where = f" of {gpu_id}" if gpu_id is not None else ""
    return Reason(
        ReasonCode.LINE_MIN_REPLICAS,
        gpu_id or "",
        shortfall=canon.line_min_replicas - most,
        message=f"min_replicas is {canon.line_min_replicas} per line but the caps allow at "
        f"most {int(most)} replicas on any one line{where}",
    )


def cap_reason(code: ReasonCode, subject: str, excess: float) -> Reason:
    """A cap that must grow by ``excess`` (cards for ``max_cards``, units of the option for
    ``max_units``, rounded up) for the demand to fit."""
    amount = float(math.ceil(excess - 1e-6))
    unit = "cards" if code is ReasonCode.MAX_CARDS else "units"
    return Reason(
        code,
        subject,
        shortfall=amount,
        message=f"{code}:{subject} is {int(amount)} {unit} short of what the demand needs",
    )


def budget_reason(shortfall_usd_per_hour: float) -> Reason:
    return Reason(
        ReasonCode.BUDGET,
        shortfall=shortfall_usd_per_hour,
        message=f"the cheapest fleet costs {shortfall_usd_per_hour:.4f} USD/hour over budget",
    )


def single_type_reason() -> Reason:
    return Reason(
        ReasonCode.SINGLE_TYPE,
        message="a mix of GPU types would meet the demand under the same caps",
    )


def time_limit_reason(*, found: bool = False) -> Reason:
    if found:
        return Reason(
            ReasonCode.TIME_LIMIT,
            message="the time limit stopped the search; the fleet may not be the cheapest",
        )
    return Reason(ReasonCode.TIME_LIMIT, message="no feasible fleet found within the time limit")


def solver_error_reason() -> Reason:
    return Reason(ReasonCode.SOLVER_ERROR, message="the MILP solver failed on this problem")
