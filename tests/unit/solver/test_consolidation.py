"""Consolidation bounds (``prune.consolidation_bounds``): where ``n`` small units of a replica
type can be swapped for one larger unit of it at no extra cost, an optimal fleet needs at most
``n - 1`` of the small ones. Checked on hand-made scopes (which bounds, and when none) and
against brute force on random multi-GPU problems with volume-priced instance sizes."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from service.domain.solver import Bucket, FleetOption, FleetProblem, SolveStatus, solve_fleet
from service.domain.solver.prune import (
    Mode,
    canonicalize,
    consolidation_bounds,
    need_units,
    select,
)
from tests.unit.solver.solver_bruteforce import reference


def sized(
    gpu: str,
    sizes: tuple[int, ...],
    per_gpu_usd: tuple[float, ...],
    *,
    capacity: float = 2.0,
    cards_per_replica: int = 1,
    provider: str = "p",
) -> tuple[FleetOption, ...]:
    """One replica type of ``gpu`` sold as instances hosting ``sizes`` replicas, priced per
    replica as given."""
    return tuple(
        FleetOption(
            key=f"{gpu}|{provider}|{size}x",
            gpu_id=gpu,
            cards_per_unit=size * cards_per_replica,
            usd_per_hour=round(size * usd, 2),
            capacity_qps=(capacity * size,),
            replicas_per_unit=size,
            provider=provider,
            region="r",
        )
        for size, usd in zip(sizes, per_gpu_usd, strict=True)
    )


def bounds(problem: FleetProblem) -> dict[str, float]:
    canon = canonicalize(problem)
    cols = np.arange(len(canon.keys))
    found = consolidation_bounds(canon, cols, need_units(canon, cols))
    return dict(zip(canon.keys, found.tolist(), strict=True))


def test_volume_priced_sizes_bound_the_small_units() -> None:
    """1-, 2- and 8-replica instances, cheaper per replica the larger: two 1x make a 2x (at
    most one 1x), four 2x an 8x (at most three 2x); nothing bounds the 8x."""
    problem = FleetProblem(
        buckets=(Bucket("b0", 30.0),), options=sized("g", (1, 2, 8), (3.0, 2.9, 2.8))
    )
    assert bounds(problem) == {"g|p|1x": 1.0, "g|p|2x": 3.0, "g|p|8x": math.inf}
    canon = canonicalize(problem)
    sel = select(canon, Mode.COST)
    upper = dict(zip((canon.keys[c] for c in sel.cols), sel.upper.tolist(), strict=True))
    assert upper["g|p|1x"] == 1.0 and upper["g|p|2x"] == 3.0


def test_a_larger_unit_dearer_per_replica_bounds_nothing() -> None:
    problem = FleetProblem(buckets=(Bucket("b0", 30.0),), options=sized("g", (1, 8), (2.8, 3.0)))
    assert bounds(problem) == {"g|p|1x": math.inf, "g|p|8x": math.inf}


def test_under_a_card_cap_a_swap_may_not_add_cards() -> None:
    """The larger unit needs more cards per replica (a higher tensor-parallel degree sold per
    instance): with a binding card cap the swap could break it, so no bound; without a cap
    the cheaper swap is allowed."""
    small = sized("g", (1,), (3.0,))
    large = sized("g", (2,), (1.0,), cards_per_replica=2)
    free = FleetProblem(buckets=(Bucket("b0", 30.0),), options=small + large)
    assert bounds(free)["g|p|1x"] == 1.0
    capped = FleetProblem(
        buckets=(Bucket("b0", 30.0),), options=small + large, max_cards=(("g", 20),)
    )
    assert bounds(capped)["g|p|1x"] == math.inf


def test_a_line_minimum_leaves_room_for_it() -> None:
    """Lines of at least two replicas (two 1x units): from n + 1 units on, a swap of n would
    leave one unit, short of the minimum, so the bound is n + 2 - 1."""
    problem = FleetProblem(
        buckets=(Bucket("b0", 30.0),),
        options=sized("g", (1, 4), (3.0, 2.5)),
        line_min_replicas=2,
    )
    assert bounds(problem)["g|p|1x"] == 4 + 2 - 1


def test_under_spread_a_swap_stays_in_its_provider() -> None:
    options = sized("g", (1,), (3.0,), provider="a") + sized("g", (2,), (2.5,), provider="b")
    plain = FleetProblem(buckets=(Bucket("b0", 30.0),), options=options)
    assert bounds(plain)["g|a|1x"] == 1.0
    spread = FleetProblem(buckets=(Bucket("b0", 30.0),), options=options, min_providers=2)
    assert bounds(spread)["g|a|1x"] == math.inf


def volume_problem(seed: int) -> FleetProblem:
    """Two GPUs, each one replica type sold in two or three instance sizes with a random
    volume discount or premium; one or two shapes (the second not served by every GPU);
    random min_replicas, line minimum and card cap. Small enough for brute force."""
    rng = random.Random(seed)
    n_buckets = rng.randint(1, 2)
    buckets = tuple(Bucket(f"b{s}", round(rng.uniform(0.5, 6.0), 1)) for s in range(n_buckets))
    options: list[FleetOption] = []
    for gpu in ("g", "h"):
        per_replica = [round(rng.uniform(0.6, 2.5), 2) for _ in range(n_buckets)]
        if gpu == "h" and n_buckets == 2 and rng.random() < 0.5:
            per_replica[1] = 0.0
        tp = rng.choice([1, 2])
        base = rng.uniform(1.0, 4.0) * tp
        for size in sorted(rng.sample([1, 2, 4, 8], rng.randint(2, 3))):
            options.append(
                FleetOption(
                    key=f"{gpu}|{size}x",
                    gpu_id=gpu,
                    cards_per_unit=tp * size,
                    usd_per_hour=round(base * size * rng.uniform(0.8, 1.05), 2),
                    capacity_qps=tuple(c * size for c in per_replica),
                    replicas_per_unit=size,
                )
            )
    return FleetProblem(
        buckets=buckets,
        options=tuple(options),
        min_replicas=rng.choice([0, 1, 2, 5]),
        line_min_replicas=rng.choice([0, 0, 2]),
        max_cards=(("g", rng.choice([8, 12, 40])),) if rng.random() < 0.4 else (),
    )


@pytest.mark.parametrize("seed", range(60))
def test_bounded_solves_match_brute_force(seed: int) -> None:
    problem = volume_problem(seed)
    want = reference(problem)
    got = solve_fleet(problem)
    if want.cost_cents is None:
        assert got.status is SolveStatus.INFEASIBLE
        return
    assert got.status is SolveStatus.OPTIMAL, got.reasons
    assert (round(got.usd_per_hour * 100), got.total_cards) == (want.cost_cents, want.cards)


def test_the_random_problems_are_bounded_somewhere() -> None:
    """The brute-force cases above exercise the bound: most problems have one."""
    bounded = sum(
        any(math.isfinite(v) for v in bounds(volume_problem(seed)).values()) for seed in range(60)
    )
    assert bounded >= 30
