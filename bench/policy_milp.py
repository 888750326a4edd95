"""Where the policy solve's HiGHS time goes: finding the optimum, or proving it.

The plan's policy solve hands HiGHS one cost MILP per vendor scope (``solver.min_cost``), with
a bound: the value of a fleet known to be feasible (the cheapest one-option fleet,
``formulation.one_option_objective``). This replays those MILPs of cold 4-bucket plans (the
requests of ``bench/plan_latency.py``) through :func:`highs.solve_milp` twice: with the
planner's bound, and with the optimum itself as the bound. The difference is the time HiGHS
spends before it holds the optimum, i.e. the most any better first fleet (a primal heuristic)
could save; the bound's distance from the optimum says how good a first fleet must be.

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
from service.domain.planner.mixing import one_vendor_solve
from service.domain.solver import highs, min_cost
from service.native_stdout import divert_native_stdout

_COST_SOLVE = "solve_milp"  # the name the cost solve (solver.min_cost) calls HiGHS through


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
            one_vendor_solve(fleet_problem(req, candidates), candidates, req)
    finally:
        setattr(min_cost, _COST_SOLVE, solve)
    return [(m, k) for m, k in seen if bool(m.integrality.any())]


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
    milps = policy_milps(real_snapshot(), args.plans, args.seed)
    planned: list[float] = []
    at_optimum: list[float] = []
    gaps: list[float] = []
    for model, known in milps:
        ms, result = timed_ms(model, known)
        if result.x is None:
            continue
        planned.append(ms)
        at_optimum.append(timed_ms(model, result.objective)[0])
        if known is not None and result.objective > 0:
            gaps.append((known / result.objective - 1) * 100)
    print("# The policy MILP: finding its optimum vs proving it\n")
    print(
        f"{len(planned)} MILPs of {args.plans} cold 4-bucket plans' policy solves; "
        f"{len(gaps)} had a bound, a median {statistics.median(gaps):.1f}% above the "
        f"optimum (p90 {pct(gaps, 90):.1f}%).\n"
    )
    print("| bound passed to HiGHS | median ms | mean ms | p90 ms |")
    print("| --- | ---: | ---: | ---: |")
    for label, times in (
        ("the planner's (a known fleet's value)", planned),
        ("the optimum itself", at_optimum),
    ):
        print(
            f"| {label} | {statistics.median(times):.1f} | {statistics.mean(times):.1f} | "
            f"{pct(times, 90):.1f} |"
        )
    ratio = statistics.mean(at_optimum) / statistics.mean(planned)
    print(f"\nWith the optimum as its bound, HiGHS takes {ratio:.2f}x the time (means).")


if __name__ == "__main__":
    main()
