"""Where the policy solve's HiGHS time goes: finding the optimum, or proving it.

The plan's policy solve hands HiGHS one cost MILP per vendor scope (``solver.min_cost``), with
a bound: the value of a fleet known to be feasible, the cheapest of one option alone
(``formulation.one_option_objective``) and of the two-option fleets ``solver.first_fleet``
scores. This replays those MILPs of cold 4-bucket plans (the requests of
``bench/plan_latency.py``) through :func:`highs.solve_milp` with three bounds: one option
alone, the planner's, and the optimum itself. The last is the time HiGHS needs once it holds
the optimum, i.e. the floor for any first fleet (a primal heuristic); the bounds' distance
from the optimum says how good a first fleet must be.

Diagnostic, not a target: it is not part of ``bench/run_all.py``. Timings are the fastest of
three runs of each MILP; compare the rows with each other, not with another machine.

Run: ``PYTHONPATH=. .venv/bin/python bench/policy_milp.py [--plans N]``.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable

from bench.plan_latency import pct, real_snapshot, request
from service.domain.catalog import CatalogSnapshot
from service.domain.planner.candidates import build_candidates, fleet_problem
from service.domain.planner.explain import priced_constraints
from service.domain.planner.mixing import one_vendor_solve
from service.domain.solver import highs, min_cost
from service.native_stdout import divert_native_stdout

_COST_SOLVE = "solve_milp"  # the name the cost solve (solver.min_cost) calls HiGHS through
_PAIRS = "two_option_objective"  # the name it scores two-option fleets through


def policy_milps(
    snapshot: CatalogSnapshot, n: int, seed: int
) -> list[tuple[highs.MilpModel, float | None]]:
    """The MILPs (with the bound the planner passed) that the policy solves of ``n`` cold
    4-bucket plans hand to :func:`highs.solve_milp`, recorded as they are solved."""
    rng = random.Random(seed)
    seen: list[tuple[highs.MilpModel, float | None]] = []
    solve: Callable[..., highs.MilpResult] = getattr(min_cost, _COST_SOLVE)

    def recording(
        model: highs.MilpModel, *, time_limit_s: float, known_value: float | None = None
    ) -> highs.MilpResult:
        seen.append((model, known_value))
        return solve(model, time_limit_s=time_limit_s, known_value=known_value)

    setattr(min_cost, _COST_SOLVE, recording)
    try:
        for _ in range(n):
            req = request(rng, 4, cold=True, base_shapes=[])
            candidates = build_candidates(req, snapshot)
            floors = "min_replicas" in priced_constraints(req)  # as the plan solves it
            one_vendor_solve(
                fleet_problem(req, candidates), candidates, req, price_min_replicas=floors
            )
    finally:
        setattr(min_cost, _COST_SOLVE, solve)
    return [(m, k) for m, k in seen if bool(m.integrality.any())]


def one_option_bounds(snapshot: CatalogSnapshot, n: int, seed: int) -> list[float | None]:
    """The bounds the same MILPs get from one option alone (no two-option fleets)."""
    pairs = getattr(min_cost, _PAIRS)
    setattr(min_cost, _PAIRS, lambda canon, sel, model: None)
    try:
        return [known for _, known in policy_milps(snapshot, n, seed)]
    finally:
        setattr(min_cost, _PAIRS, pairs)


def timed_ms(model: highs.MilpModel, known: float | None) -> tuple[float, highs.MilpResult]:
    """Fastest of three runs (ms) of one solve, and its result."""
    best = float("inf")
    result = highs.solve_milp(model, time_limit_s=10.0, known_value=known)
    for _ in range(3):
        started = time.perf_counter()
        result = highs.solve_milp(model, time_limit_s=10.0, known_value=known)
        best = min(best, (time.perf_counter() - started) * 1000)
    return best, result


def main() -> None:
    divert_native_stdout()  # HiGHS' stray printf stays out of the table
    parser = argparse.ArgumentParser()
    parser.add_argument("--plans", type=int, default=40, help="cold 4-bucket plans to replay")
    parser.add_argument("--seed", type=int, default=400)
    args = parser.parse_args()
    snapshot = real_snapshot()
    milps = policy_milps(snapshot, args.plans, args.seed)
    alone = one_option_bounds(snapshot, args.plans, args.seed)
    assert len(alone) == len(milps), "the same plans must give the same MILPs"
    rows: dict[str, list[float]] = {"alone": [], "planner": [], "optimum": []}
    above: dict[str, list[float]] = {"alone": [], "planner": []}
    for (model, known), single in zip(milps, alone, strict=True):
        ms, result = timed_ms(model, known)
        if result.x is None or known is None or single is None or result.objective <= 0:
            continue
        rows["planner"].append(ms)
        rows["alone"].append(timed_ms(model, single)[0])
        rows["optimum"].append(timed_ms(model, result.objective)[0])
        above["alone"].append((single / result.objective - 1) * 100)
        above["planner"].append((known / result.objective - 1) * 100)
    print("# The policy MILP: finding its optimum vs proving it\n")
    print(
        f"{len(rows['planner'])} MILPs of {args.plans} cold 4-bucket plans' policy solves; "
        "ms per HiGHS solve (the fastest of 3 runs), and how far above the optimum the bound "
        "lies (median, p90).\n"
    )
    print("| bound passed to HiGHS | above the optimum | median ms | mean ms | p90 ms |")
    print("| --- | ---: | ---: | ---: | ---: |")
    labels = {
        "alone": "one option alone",
        "planner": "the planner's (one option or two)",
        "optimum": "the optimum itself",
    }
    for key, label in labels.items():
        times = rows[key]
        gap = above.get(key)
        where = f"{statistics.median(gap):.1f}%, {pct(gap, 90):.1f}%" if gap else "0"
        print(
            f"| {label} | {where} | {statistics.median(times):.1f} | "
            f"{statistics.mean(times):.1f} | {pct(times, 90):.1f} |"
        )


if __name__ == "__main__":
    main()
