"""Brute-force reference for the fleet solver, independent of its code.

Enumerates every integer vector of units (``x[g]``: units of option ``g``, each hosting
``replicas_per_unit`` model replicas on ``cards_per_unit`` cards) in a box, filters the caps
(``max_units`` caps units; ``min_replicas`` needs ``sum_g replicas_per_unit[g] * x[g]``;
at most ``type_limit`` GPU types when it is set),
sorts by (cost, cards) and checks each candidate's assignment with an LP
(``scipy.optimize.linprog``) until one fits. Only for tiny instances. Prices must be whole cents
so costs compare exactly.

The box: an optimal fleet never has more than ``max(ceil(m / r[g]), ceil(L[g]))`` units of
option ``g`` (``L[g]`` = units ``g`` needs to carry everything it can serve alone, ``r[g]`` its
replicas per unit): with one unit fewer, ``g`` alone still carries all it carried and hosts
``r[g] * ceil(m / r[g]) >= m`` replicas, for strictly less money. ``+ 1`` on top of that is a
safe margin that does not rely on the solver's own bound being right.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Iterator
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt
from scipy.optimize import linprog

from service.domain.solver import Bucket, FleetOption, FleetProblem

TOL = 1e-9

Floats = npt.NDArray[np.float64]
Bools = npt.NDArray[np.bool_]
Ints = npt.NDArray[np.int64]


@dataclass(frozen=True)
class Reference:
    cost_cents: int | None  # None: infeasible
    cards: int | None


def _arrays(problem: FleetProblem) -> tuple[Floats, Floats]:
    """Demand per bucket with headroom (req/s, shape (S,)) and capacity per unit (req/s,
    shape (G, S))."""
    demand = np.array([b.demand_qps for b in problem.buckets], dtype=float) * (
        1.0 + problem.headroom
    )
    cap = np.array([o.capacity_qps for o in problem.options], dtype=float).reshape(
        len(problem.options), len(problem.buckets)
    )  # (G, S)
    return demand, cap


def _usable(demand: Floats, cap: Floats, shared: bool = False) -> Bools:
    demanded = demand > 0
    if shared and demanded.sum() > 1:
        return np.asarray((cap[:, demanded] > 0).all(axis=1), dtype=np.bool_)
    if demanded.any():
        return np.asarray((cap[:, demanded] > 0).any(axis=1), dtype=np.bool_)
    return np.asarray((cap > 0).any(axis=1), dtype=np.bool_)


def shared_fits(demand: Floats, cap: Floats, x: Ints, scale: float = 1.0) -> bool:
    """Every unit serves the whole mix: each used option takes the same fraction of every
    shape, so the units fit iff the fractions they can carry, ``x[g] / sum_s (demand[s] /
    cap[g, s])``, add up to ``scale`` (options missing a shape carry nothing)."""
    dem = np.flatnonzero(demand > 0)
    carried = 0.0
    for g in range(len(x)):
        if x[g] > 0 and all(cap[g, s] > 0 for s in dem):
            carried += x[g] / sum(demand[s] / cap[g, s] for s in dem)
    return carried >= scale * (1 - TOL)


def assignment_fits(
    demand: Floats, cap: Floats, x: Ints, scale: float = 1.0, *, shared: bool = False
) -> bool:
    """Is there z >= 0 with sum_g z[s,g] = scale * demand[s], sum_s z[s,g]/cap[g,s] <= x[g]
    (with ``shared``, z[s,g] the same fraction of demand[s] for every s)?"""
    dem = np.flatnonzero(demand > 0)
    if dem.size == 0:
        return True
    if shared and dem.size > 1:
        return shared_fits(demand, cap, x, scale)
    pairs = [(s, g) for s in dem for g in range(len(x)) if cap[g, s] > 0 and x[g] > 0]
    if any(not any(p[0] == s for p in pairs) for s in dem):
        return False
    if dem.size == 1:
        s = dem[0]
        return float(np.sum(cap[:, s] * x)) >= scale * float(demand[s]) * (1 - TOL)
    n = len(pairs)
    a_eq = np.zeros((dem.size, n))
    b_eq = np.zeros(dem.size)
    for k, (s, _) in enumerate(pairs):
        a_eq[list(dem).index(s), k] = 1.0 / demand[s]
    b_eq[:] = scale
    gs = sorted({g for _, g in pairs})
    a_ub = np.zeros((len(gs), n))
    for k, (s, g) in enumerate(pairs):
        a_ub[gs.index(g), k] = 1.0 / cap[g, s]
    b_ub = np.array([x[g] * (1 + TOL) for g in gs], dtype=float)
    res = linprog(np.zeros(n), A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=b_eq, method="highs")
    status: int = res.status  # SciPy is untyped: 0 is "optimal" (a feasible point exists)
    return status == 0


def _box(problem: FleetProblem, demand: Floats, cap: Floats) -> list[range]:
    usable = _usable(demand, cap, problem.shared)
    card_cap = dict(problem.max_cards)
    ranges = []
    for g, option in enumerate(problem.options):
        if not usable[g]:
            ranges.append(range(1))
            continue
        load = sum(
            demand[s] / cap[g, s] for s in range(len(demand)) if demand[s] > 0 and cap[g, s] > 0
        )
        most = max(problem.min_replicas, problem.line_min_replicas)
        by_replicas = -(-most // option.replicas_per_unit)
        top = max(by_replicas, math.ceil(load)) + 1
        if option.max_units is not None:
            top = min(top, option.max_units)
        if option.gpu_id in card_cap:
            top = min(top, card_cap[option.gpu_id] // option.cards_per_unit)
        ranges.append(range(top + 1))
    return ranges


def _candidates(problem: FleetProblem, demand: Floats, cap: Floats) -> Ints:
    ranges = _box(problem, demand, cap)
    grid = np.array(list(itertools.product(*ranges)), dtype=np.int64).reshape(
        -1, len(problem.options)
    )
    ok = grid @ _replicas_per_unit(problem) >= problem.min_replicas  # C4 counts model replicas
    for gpu, limit in problem.max_cards:
        tp = np.array(
            [o.cards_per_unit if o.gpu_id == gpu else 0 for o in problem.options], dtype=np.int64
        )
        ok &= grid @ tp <= limit
    if problem.type_limit:
        gpus = sorted({o.gpu_id for o in problem.options})
        per_gpu = np.stack(
            [
                grid[:, [g for g, o in enumerate(problem.options) if o.gpu_id == gpu]].sum(axis=1)
                for gpu in gpus
            ],
            axis=1,
        )
        ok &= (per_gpu > 0).sum(axis=1) <= problem.type_limit
    # Necessary: every bucket alone fits.
    for s in np.flatnonzero(demand > 0):
        ok &= grid @ cap[:, s] >= demand[s] * (1 - TOL)
    # Every used line hosts line_min_replicas.
    rpu = _replicas_per_unit(problem)
    ok &= np.all((grid == 0) | (grid * rpu >= problem.line_min_replicas), axis=1)
    # At least min_providers providers and min_regions regions are used (by a fleet at all).
    for least, place in ((problem.min_providers, _provider), (problem.min_regions, _region)):
        names = [place(o) for o in problem.options]
        for n, x in enumerate(grid):
            if ok[n] and x.any() and len({names[g] for g in np.flatnonzero(x)}) < least:
                ok[n] = False
    return grid[ok]


def _provider(option: FleetOption) -> str:
    return option.provider


def _region(option: FleetOption) -> str:
    return f"{option.provider}|{option.region}"


def survives(problem: FleetProblem, demand: Floats, cap: Floats, x: Ints) -> bool:
    """From min_providers (min_regions) 2 up: without any one provider (region) it uses, the
    rest of the fleet still carries the whole demand."""
    return all(
        assignment_fits(demand, cap, rest, shared=problem.shared)
        for rest in _after_losing_one_place(problem, x)
    )


def _after_losing_one_place(problem: FleetProblem, x: Ints) -> Iterator[Ints]:
    """The fleet ``x`` without each provider (region) it uses, for spread from 2 up."""
    for least, place in ((problem.min_providers, _provider), (problem.min_regions, _region)):
        if least < 2:
            continue
        names = [place(o) for o in problem.options]
        for lost in {names[g] for g in np.flatnonzero(x)}:
            yield np.array([0 if names[g] == lost else x[g] for g in range(len(x))])


def _replicas_per_unit(problem: FleetProblem) -> Ints:
    return np.array([o.replicas_per_unit for o in problem.options], dtype=np.int64)


def cents(option: FleetOption) -> int:
    return round(option.usd_per_hour * 100)


def reference(problem: FleetProblem) -> Reference:
    """Cheapest cost (cents/hour) and, among the cheapest, fewest cards; None if infeasible."""
    demand, cap = _arrays(problem)
    grid = _candidates(problem, demand, cap)
    if grid.shape[0] == 0:
        return Reference(None, None)
    cost = grid @ np.array([cents(o) for o in problem.options], dtype=np.int64)
    cards = grid @ np.array([o.cards_per_unit for o in problem.options], dtype=np.int64)
    for k in np.lexsort((cards, cost)):
        if assignment_fits(demand, cap, grid[k], shared=problem.shared) and survives(
            problem, demand, cap, grid[k]
        ):
            return Reference(int(cost[k]), int(cards[k]))
    return Reference(None, None)


def reference_max_scale(problem: FleetProblem) -> float:
    """Largest lam such that demand * lam fits a fleet within the budget (brute force)."""
    assert problem.budget_usd_per_hour is not None
    demand, cap = _arrays(problem)
    budget_cents = math.floor(problem.budget_usd_per_hour * 100 + 1e-6)
    usable = _usable(demand, cap, problem.shared)
    card_cap = dict(problem.max_cards)
    ranges = []
    for g, option in enumerate(problem.options):
        top = budget_cents // cents(option) if usable[g] else 0
        if option.max_units is not None:
            top = min(top, option.max_units)
        if option.gpu_id in card_cap:
            top = min(top, card_cap[option.gpu_id] // option.cards_per_unit)
        ranges.append(range(top + 1))
    best = 0.0
    prices = np.array([cents(o) for o in problem.options])
    rpu = _replicas_per_unit(problem)
    for x in itertools.product(*ranges):
        xv = np.array(x, dtype=np.int64)
        if int(xv @ prices) > budget_cents or int(xv @ rpu) < problem.min_replicas:
            continue
        if problem.type_limit:
            used = {o.gpu_id for o, n in zip(problem.options, x, strict=True) if n > 0}
            if len(used) > problem.type_limit:
                continue
        if any(
            sum(
                o.cards_per_unit * n
                for o, n in zip(problem.options, x, strict=True)
                if o.gpu_id == gpu
            )
            > limit
            for gpu, limit in problem.max_cards
        ):
            continue
        if not _places_ok(problem, xv):
            continue
        best = max(best, _scale_surviving(problem, demand, cap, xv))
    return best


def _places_ok(problem: FleetProblem, x: Ints) -> bool:
    """Line minimum and place counts of a fleet (see :func:`_candidates`)."""
    used = np.flatnonzero(x)
    if any(x[g] * problem.options[g].replicas_per_unit < problem.line_min_replicas for g in used):
        return False
    for least, place in ((problem.min_providers, _provider), (problem.min_regions, _region)):
        if used.size and len({place(problem.options[g]) for g in used}) < least:
            return False
    return True


def _scale_of(problem: FleetProblem, demand: Floats, cap: Floats, x: Ints) -> float:
    if problem.shared and int((demand > 0).sum()) > 1:
        return _shared_scale_of(demand, cap, x)
    return _max_scale_of(demand, cap, x)


def _scale_surviving(problem: FleetProblem, demand: Floats, cap: Floats, x: Ints) -> float:
    """The load scale the fleet carries, and still carries after losing any one provider
    (region) when spread asks for it."""
    lam = _scale_of(problem, demand, cap, x)
    for rest in _after_losing_one_place(problem, x):
        lam = min(lam, _scale_of(problem, demand, cap, rest))
    return lam


def _shared_scale_of(demand: Floats, cap: Floats, x: Ints) -> float:
    dem = np.flatnonzero(demand > 0)
    return math.fsum(
        float(x[g]) / math.fsum(float(demand[s] / cap[g, s]) for s in dem)
        for g in range(len(x))
        if x[g] > 0 and all(cap[g, s] > 0 for s in dem)
    )


def _max_scale_of(demand: Floats, cap: Floats, x: Ints) -> float:
    dem = np.flatnonzero(demand > 0)
    if not x.any():
        return 0.0
    pairs = [(s, g) for s in dem for g in range(len(x)) if cap[g, s] > 0 and x[g] > 0]
    if any(not any(p[0] == s for p in pairs) for s in dem):
        return 0.0
    n = len(pairs)
    # variables: z pairs, lam
    a_eq = np.zeros((dem.size, n + 1))
    for k, (s, _) in enumerate(pairs):
        a_eq[list(dem).index(s), k] = 1.0 / demand[s]
    a_eq[:, n] = -1.0
    gs = sorted({g for _, g in pairs})
    a_ub = np.zeros((len(gs), n + 1))
    for k, (s, g) in enumerate(pairs):
        a_ub[gs.index(g), k] = 1.0 / cap[g, s]
    c = np.zeros(n + 1)
    c[n] = -1.0
    res = linprog(
        c,
        A_ub=a_ub,
        b_ub=np.array([x[g] for g in gs], dtype=float),
        A_eq=a_eq,
        b_eq=np.zeros(dem.size),
        method="highs",
    )
    return float(res.x[n]) if res.status == 0 else 0.0


def random_problem(
    seed: int, *, max_options: int = 4, max_buckets: int = 3, multi_replica: bool = False
) -> FleetProblem:
    """A tiny random instance: 2..max_options options over 1-3 GPUs, 1..max_buckets buckets,
    random caps, min_replicas, allow_mix, headroom. Prices are whole cents.

    ``multi_replica``: options are billed units hosting ``replicas_per_unit`` in {1, 2, 4, 8}
    replicas of degree ``t`` (``t * replicas_per_unit <= 8`` cards per unit), with capacity and
    price per unit (a random bulk discount or premium), larger ``min_replicas`` (up to 12) and
    card caps (up to 24), so C4 in model replicas binds often. Without it the draws are the
    historical ones (one replica per unit)."""
    rng = random.Random(seed)
    n_buckets = rng.randint(1, max_buckets)
    n_options = rng.randint(2, max_options)
    gpus = ["a", "b", "c"][: rng.randint(1, 3)]
    buckets = tuple(
        Bucket(f"b{s}", 0.0 if rng.random() < 0.15 else round(rng.uniform(0.5, 10.0), 1))
        for s in range(n_buckets)
    )
    options = []
    for g in range(n_options):
        gpu = rng.choice(gpus)
        if multi_replica:
            rpu = rng.choice([1, 2, 4, 8])
            tp = rng.choice([t for t in (1, 2, 4) if t * rpu <= 8])
        else:
            rpu, tp = 1, rng.choice([1, 1, 2, 4])
        caps = tuple(
            0.0 if rng.random() < 0.25 else round(rng.uniform(1.0, 8.0), 2) * rpu
            for _ in range(n_buckets)
        )
        price_cents = rng.randint(50, 800)
        if multi_replica:
            price_cents = round(price_cents * rpu * rng.uniform(0.6, 1.2))
        options.append(
            FleetOption(
                key=f"{gpu}|tp{tp}|r{rpu}|o{g}" if multi_replica else f"{gpu}|tp{tp}|o{g}",
                gpu_id=gpu,
                cards_per_unit=tp * rpu,
                usd_per_hour=price_cents / 100,
                capacity_qps=caps,
                max_units=rng.randint(0, 5) if rng.random() < 0.3 else None,
                replicas_per_unit=rpu,
            )
        )
    card_limit = 24 if multi_replica else 10
    max_cards = tuple((gpu, rng.randint(0, card_limit)) for gpu in gpus if rng.random() < 0.3)
    min_choices = [0, 1, 2, 3, 5, 8, 12] if multi_replica else [0, 0, 0, 1, 2, 3, 5]
    return FleetProblem(
        buckets=buckets,
        options=tuple(options),
        headroom=rng.choice([0.0, 0.0, 0.1, 0.25]),
        min_replicas=rng.choice(min_choices),
        max_cards=max_cards,
        allow_mix=rng.random() < 0.75,
    )


def spread_problem(seed: int, *, max_options: int = 5, multi_replica: bool = False) -> FleetProblem:
    """A tiny instance with places: options from providers p0-p2 in regions r0-r1, a random
    line minimum (model replicas per used option), min_providers and min_regions in 0-3, and
    sometimes shared routing."""
    base = random_problem(seed, max_options=max_options, max_buckets=2, multi_replica=multi_replica)
    rng = random.Random(seed * 7 + 3)
    options = tuple(
        replace(o, provider=rng.choice(["p0", "p1", "p2"]), region=rng.choice(["r0", "r1"]))
        for o in base.options
    )
    return replace(
        base,
        options=options,
        line_min_replicas=rng.choice([0, 1, 2, 3]),
        min_providers=rng.choice([0, 1, 2, 2, 3]),
        min_regions=rng.choice([0, 0, 1, 2, 3]),
        shared=rng.random() < 0.25,
    )


def catalog_problem(
    seed: int,
    *,
    n_gpus: int = 8,
    n_buckets: int = 3,
    cap_prob: float = 0.15,
    packed: bool = False,
) -> FleetProblem:
    """A catalog-shaped instance: per GPU, tensor-parallel degrees 1/2/4/8 whose memory admits
    only some shapes, sub-linear TP scaling, several offers (providers) per GPU at different
    per-card prices, a few capped offers and card caps. Too big for brute force.

    ``packed``: each offer of degree ``t < 8`` is also sold as a whole 8-card instance hosting
    ``8 // t`` replicas (capacity and price per instance, a random bulk discount or premium),
    and ``min_replicas`` is drawn larger, so pruning and C4 meet multi-replica units."""
    rng = random.Random(seed)
    need = [1 + 3 * s / max(1, n_buckets - 1) for s in range(n_buckets)]
    buckets = tuple(Bucket(f"b{s}", round(rng.uniform(5.0, 80.0), 1)) for s in range(n_buckets))
    options = []
    for i in range(n_gpus):
        gpu = f"g{i}"
        memory = rng.choice([16, 24, 48, 80, 141])
        speed = rng.uniform(0.3, 3.0)
        prices = [round(speed * rng.uniform(0.5, 1.8), 2) for _ in range(rng.randint(1, 4))]
        for tp in (1, 2, 4, 8):
            caps = tuple(
                round(speed * tp**0.85 * 10 / need[s], 3) if memory * tp >= 20 * need[s] else 0.0
                for s in range(n_buckets)
            )
            if max(caps) == 0:
                continue
            for o, price in enumerate(prices):
                options.append(
                    FleetOption(
                        key=f"{gpu}|tp{tp}|o{o}",
                        gpu_id=gpu,
                        cards_per_unit=tp,
                        usd_per_hour=round(price * tp * rng.uniform(0.9, 1.1), 2),
                        capacity_qps=caps,
                        max_units=rng.randint(1, 12) if rng.random() < cap_prob else None,
                    )
                )
                if packed and tp < 8:
                    per = 8 // tp
                    options.append(
                        FleetOption(
                            key=f"{gpu}|tp{tp}|x8|o{o}",
                            gpu_id=gpu,
                            cards_per_unit=8,
                            usd_per_hour=round(price * 8 * rng.uniform(0.8, 1.1), 2),
                            capacity_qps=tuple(c * per for c in caps),
                            max_units=rng.randint(1, 4) if rng.random() < cap_prob else None,
                            replicas_per_unit=per,
                        )
                    )
    max_cards = tuple((f"g{i}", rng.randint(4, 40)) for i in range(n_gpus) if rng.random() < 0.2)
    return FleetProblem(
        buckets=buckets,
        options=tuple(options),
        min_replicas=rng.choice([0, 8, 12, 20] if packed else [0, 0, 2, 4]),
        max_cards=max_cards,
        allow_mix=rng.random() < 0.8,
        headroom=rng.choice([0.0, 0.2]),
    )
