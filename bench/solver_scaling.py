"""Fleet-solver timings as the catalog grows: options 1x..10x (about 40..400) and buckets 1..16.

Run by hand (not a timed test)::

    .venv/bin/python bench/solver_scaling.py [--seeds 7] [--factors 1,2,5,10] [--buckets 1,2,4,8,16]
        [--packed] [--min-replicas 0]

Instances are catalog-shaped (see ``instance``): per GPU, tensor-parallel degrees 1/2/4/8 whose
memory admits only some request shapes, sub-linear TP scaling, 1-5 offers at different per-card
prices, 3 % of offers capped. ``--packed`` also sells each offer of degree ``t < 8`` as a whole
8-card instance hosting ``8 // t`` replicas (billed units, ``replicas_per_unit > 1``; about 1.7x
the options), and ``--min-replicas`` sets the redundancy (model replicas). Without them the
instances are the historical ones. Columns (milliseconds, median and max over seeds):

* ``main``: ``solve_fleet`` (mix allowed, no budget);
* ``alts``: ``cheapest_single_type`` (one fleet per GPU: the "alternatives" list);
* ``budget``: ``max_qps_within_budget`` with a budget of 70 % of the cheapest fleet;
* ``plan``: main + alts + budget, what one plan costs when it is over budget.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable
from dataclasses import replace
from functools import partial

from service.domain.solver import (
    Bucket,
    FleetOption,
    FleetProblem,
    cheapest_single_type,
    max_qps_within_budget,
    solve_fleet,
)
from service.domain.solver.prune import Mode, canonicalize, select
from service.native_stdout import divert_native_stdout

GPUS_PER_FACTOR = 3


def instance(
    seed: int, factor: int, n_buckets: int, *, packed: bool = False, min_replicas: int = 0
) -> FleetProblem:
    """About 40 * ``factor`` options over 3 * ``factor`` GPUs and ``n_buckets`` shapes (more
    with ``packed``: 8-card instances hosting several replicas, see the module docstring)."""
    rng = random.Random(seed * 1000 + factor * 17 + n_buckets)
    need = [1 + 3 * s / max(1, n_buckets - 1) for s in range(n_buckets)]
    buckets = tuple(
        Bucket(f"b{s:02d}", round(rng.uniform(20.0, 200.0) / n_buckets, 2))
        for s in range(n_buckets)
    )
    options: list[FleetOption] = []
    for i in range(GPUS_PER_FACTOR * factor):
        gpu = f"gpu{i:02d}"
        memory = rng.choice([16, 24, 48, 80, 141, 192])
        speed = rng.uniform(0.3, 3.0)
        per_card = [round(speed * rng.uniform(0.5, 1.8), 4) for _ in range(rng.randint(1, 5))]
        for tp in (1, 2, 4, 8):
            caps = tuple(
                round(speed * tp**0.85 * 10 / need[s], 4) if memory * tp >= 20 * need[s] else 0.0
                for s in range(n_buckets)
            )
            if max(caps) == 0:
                continue
            for o, price in enumerate(per_card):
                options.append(
                    FleetOption(
                        key=f"{gpu}|tp{tp}|offer{o}",
                        gpu_id=gpu,
                        cards_per_unit=tp,
                        usd_per_hour=round(price * tp, 4),
                        capacity_qps=caps,
                        max_units=rng.randint(2, 30) if rng.random() < 0.03 else None,
                    )
                )
                if packed and tp < 8:
                    per = 8 // tp  # replicas one 8-card instance hosts
                    options.append(
                        FleetOption(
                            key=f"{gpu}|tp{tp}|x8|offer{o}",
                            gpu_id=gpu,
                            cards_per_unit=8,
                            usd_per_hour=round(price * 8 * rng.uniform(0.8, 1.05), 4),
                            capacity_qps=tuple(round(c * per, 4) for c in caps),
                            max_units=rng.randint(1, 8) if rng.random() < 0.03 else None,
                            replicas_per_unit=per,
                        )
                    )
    return FleetProblem(
        buckets=buckets, options=tuple(options), min_replicas=min_replicas, time_limit_s=2.0
    )


def _ms(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1e3


def main() -> None:
    divert_native_stdout()  # HiGHS' stray printf stays out of the tables
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=7)
    parser.add_argument("--factors", default="1,2,5,10")
    parser.add_argument("--buckets", default="1,2,4,8,16")
    parser.add_argument("--packed", action="store_true", help="add multi-replica instances")
    parser.add_argument("--min-replicas", type=int, default=0, help="redundancy, in replicas")
    args = parser.parse_args()
    factors = [int(f) for f in args.factors.split(",")]
    bucket_counts = [int(b) for b in args.buckets.split(",")]

    solve_fleet(instance(0, 1, 1))  # warm imports and HiGHS
    header = (
        f"{'options':>7} {'kept':>5} {'buckets':>7} | {'main p50':>8} {'max':>7} | "
        f"{'alts p50':>8} {'max':>7} | {'budget p50':>10} {'max':>7} | {'plan p50':>8} {'max':>7}"
    )
    print(header)
    print("-" * len(header))
    for factor in factors:
        for n_buckets in bucket_counts:
            main_ms: list[float] = []
            alts_ms: list[float] = []
            budget_ms: list[float] = []
            kept: list[int] = []
            n_options = 0
            for seed in range(args.seeds):
                problem = instance(
                    seed, factor, n_buckets, packed=args.packed, min_replicas=args.min_replicas
                )
                n_options = len(problem.options)
                kept.append(select(canonicalize(problem), Mode.COST).size)
                solution = solve_fleet(problem)
                main_ms.append(_ms(partial(solve_fleet, problem)))
                alts_ms.append(_ms(partial(cheapest_single_type, problem)))
                budget = max(0.01, round(0.7 * solution.usd_per_hour, 2))
                tight = replace(problem, budget_usd_per_hour=budget)
                budget_ms.append(_ms(partial(max_qps_within_budget, tight)))
            plan_ms = [a + b + c for a, b, c in zip(main_ms, alts_ms, budget_ms, strict=True)]
            print(
                f"{n_options:>7} {int(statistics.median(kept)):>5} {n_buckets:>7} | "
                f"{statistics.median(main_ms):>8.1f} {max(main_ms):>7.1f} | "
                f"{statistics.median(alts_ms):>8.1f} {max(alts_ms):>7.1f} | "
                f"{statistics.median(budget_ms):>10.1f} {max(budget_ms):>7.1f} | "
                f"{statistics.median(plan_ms):>8.1f} {max(plan_ms):>7.1f}"
            )


if __name__ == "__main__":
    main()
