"""Uncached curve cost: how long the cost-vs-load sweep (40 load points), the cost-vs-SLO curve
and the per-GPU table take for one plan, in-process, on the bundled catalog.

The cost-vs-load sweep builds the candidates once and re-solves only the MILP at each load
point, for the plan's policy and for each GPU alone, for the cheapest cost only (no
fewest-cards stage); a fleet that still carries the next load is reused (no solve), and a
solve a lower bound shows cannot change the plan's curve is skipped (the plan's own curve
needs few of the single-type solves the whole chart draws). Printed per request: the
candidates build, the plan's own 40-point curve, the whole chart (the plan's curve and every
single-type curve), the MILP solves the chart made out of the points it has, then the
cost-vs-SLO curve and the per-GPU table. Each figure is the median of ``--repeat`` runs, each
at a QPS never seen before (new MILPs; the performance model's per-shape capacities are
memoised after the first run, as in a service answering recurring shapes, and so are the
solver's per-GPU tables: cover tables per option set and the carrying inequalities per
capacity matrix); the first run's candidates build and whole chart, with nothing memoised,
are shown too.

Run: ``.venv/bin/python bench/curve_sweep.py [--repeat N]``. Prints a markdown table.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from service.domain.perfmodel import Slo
from service.domain.planner import (
    BudgetDraft,
    ConstraintsDraft,
    MixShare,
    PlanDraft,
    WorkloadDraft,
    canonical_request,
)
from service.domain.planner.candidates import build_candidates
from service.domain.planner.sweep import LOAD_POINTS, cost_vs_load, cost_vs_slo, per_gpu
from service.native_stdout import divert_native_stdout
from service.usecases.seed_catalog import seed_snapshot

ROOT = Path(__file__).resolve().parents[1]


def readme_request(qps: float) -> PlanDraft:
    """The README's plan request (service/api/examples/plan_request.json) at ``qps``."""
    body = json.loads((ROOT / "service/api/examples/plan_request.json").read_text())
    c = body["constraints"]

    return PlanDraft(
        model=body["model"],
        precision=body["precision"],
        engine=body["engine"],
        workload=WorkloadDraft(
            qps=qps,
            mix=tuple(
                MixShare(m["share"], m["prompt_tokens"], m["output_tokens"])
                for m in body["workload"]["mix"]
            ),
        ),
        slo=Slo(
            ttft_ms=body["slo"]["ttft_ms"],
            tpot_ms=body["slo"]["tpot_ms"],
            e2e_ms=None,
            percentile=body["slo"]["percentile"],
        ),
        budget=BudgetDraft(usd_per_hour=body["budget"]["usd_per_hour"]),
        constraints=ConstraintsDraft(
            pricing=c["pricing"],
            headroom=c["headroom"],
            min_replicas=c["min_replicas"],
            providers=tuple(c["providers"]),
        ),
    )


def small_request(qps: float) -> PlanDraft:
    return PlanDraft(
        model="llama-3.1-8b",
        workload=WorkloadDraft(qps=qps, prompt_tokens=512, output_tokens=128),
        slo=Slo(ttft_ms=None, tpot_ms=50, e2e_ms=None, percentile=95),
    )


def main() -> None:
    divert_native_stdout()  # HiGHS' stray printf stays out of the tables
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    snapshot = seed_snapshot()
    print(f"# Curve cost ({LOAD_POINTS}-point cost vs load), median of {args.repeat} runs\n")
    print(
        "| request | candidates, cold (s) | candidates (s) | plan curve (s) "
        "| whole chart, cold (s) | whole chart (s) | series | solves / points | cost vs SLO (s) "
        "| per GPU (s) |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for label, make in (
        ("README plan request (llama-3.1-70b, 2-shape mix, 4 clouds)", readme_request),
        ("llama-3.1-8b, one shape, every offer", small_request),
    ):
        build, plan_only, chart, slo, gpu = [], [], [], [], []
        series = solves = 0
        for i in range(args.repeat):
            qps = 40.0 + 0.37 * (i + 1)  # a new QPS each run: new MILPs
            request = canonical_request(make(qps), snapshot, time_limit_s=2.0)
            started = time.perf_counter()
            candidates = build_candidates(request, snapshot)
            build.append(time.perf_counter() - started)
            started = time.perf_counter()
            cost_vs_load(request, snapshot, candidates=candidates, single_types=False)
            plan_only.append(time.perf_counter() - started)
            started = time.perf_counter()
            curve = cost_vs_load(request, snapshot, candidates=candidates)
            chart.append(time.perf_counter() - started)
            series, solves = len(curve.series), curve.solves
            started = time.perf_counter()
            cost_vs_slo(request, snapshot)
            slo.append(time.perf_counter() - started)
            started = time.perf_counter()
            per_gpu(request, candidates)
            gpu.append(time.perf_counter() - started)
        med = statistics.median
        print(
            f"| {label} | {build[0]:.3f} | {med(build):.3f} | {med(plan_only):.3f} "
            f"| {chart[0]:.3f} | {med(chart):.3f} | {series} "
            f"| {solves} / {series * LOAD_POINTS} | {med(slo):.3f} | {med(gpu):.4f} |"
        )


if __name__ == "__main__":
    main()
