"""Uncached plan latency on the real catalog, and how it grows with the catalog and the mix.

Measures the planner itself (performance model + MILP + assembly), i.e. what one plan-cache miss
costs, with the helper process the service gives each running solve (``SolverPool``):

- ``real``: the bundled catalog (every GPU, every current offer: prices.csv and the SkyPilot
  snapshot), 1 and 4 request buckets.
  *cold*: every plan has request shapes and an SLO never seen before, so nothing inside the
  performance model is memoised; *warm*: the same shapes with a different QPS each time (the
  per-shape capacities are reused, the MILP and assembly are not).
- ``catalog``: synthetic GPU types and offers at 1x..10x the real catalog (4 buckets, cold).
- ``buckets``: 1..16 buckets on the real catalog (cold).
- ``phases``: the steps of cold 4-bucket plans timed one by one on one thread, with the
  planner's own building blocks in the order ``plan`` runs them: what the helper thread
  takes off the critical path, and what stays on it.

Before each case the heap is settled as the server settles it after loading a catalog
(``service.heap.settle_heap``: what is loaded stays out of the garbage collector's scans).

Run: ``.venv/bin/python bench/plan_latency.py [--quick]``. Prints markdown tables.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import time
from dataclasses import replace

from service.domain.catalog import CatalogSnapshot, GpuSpec, PricePoint
from service.domain.llm import resolve_model
from service.domain.perfmodel import Slo
from service.domain.planner import PlanConstraints, PlanRequest, WorkloadBucket, plan
from service.domain.planner.assemble import assemble_fleet, single_type_alternatives
from service.domain.planner.candidates import build_candidates, fleet_problem
from service.domain.planner.explain import priced_constraints
from service.domain.planner.mixing import (
    one_vendor_solve,
    relaxed_costs_within_rule,
    scope_vendors,
)
from service.domain.planner.offers import cheapest_per_shape, offers_for
from service.domain.planner.request import Spread
from service.domain.solver import cheapest_single_type
from service.heap import settle_heap
from service.native_stdout import divert_native_stdout
from service.usecases.seed_catalog import seed_snapshot
from service.usecases.solver_pool import HelperProcesses

MODEL = resolve_model("llama-3.1-70b")


def real_snapshot() -> CatalogSnapshot:
    """The catalog a fresh install serves: gpus.csv, prices.csv and the SkyPilot snapshot."""
    return seed_snapshot()


def scaled_snapshot(base: CatalogSnapshot, factor: int, rng: random.Random) -> CatalogSnapshot:
    """``factor`` copies of every GPU (specs and prices jittered by up to 15%) with their offers."""
    gpus: list[GpuSpec] = list(base.gpus)
    prices: list[PricePoint] = list(base.prices)
    for copy in range(1, factor):
        for g in base.gpus:
            jitter = rng.uniform(0.85, 1.15)
            clone = replace(
                g,
                id=f"{g.id}-x{copy}",
                aliases=(),
                memory_bandwidth_gbps=g.memory_bandwidth_gbps * jitter,
                fp16_tflops=g.fp16_tflops * jitter if g.fp16_tflops else None,
                fp8_tflops=g.fp8_tflops * jitter if g.fp8_tflops else None,
            )
            gpus.append(clone)
            for p in base.prices:
                if p.gpu_id == g.id:
                    prices.append(replace(p, gpu_id=clone.id, usd=p.usd * rng.uniform(0.8, 1.2)))
    return CatalogSnapshot(revision=1, gpus=tuple(gpus), prices=tuple(prices))


def request(
    rng: random.Random,
    buckets: int,
    *,
    cold: bool,
    base_shapes: list[tuple[int, int]],
    spread: Spread | None = None,
) -> PlanRequest:
    if cold:
        shapes = [(rng.randint(100, 6000), rng.randint(50, 800)) for _ in range(buckets)]
        slo = Slo(
            ttft_ms=rng.uniform(800, 4000), tpot_ms=rng.uniform(40, 120), e2e_ms=None, percentile=95
        )
    else:
        shapes = base_shapes[:buckets]
        slo = Slo(ttft_ms=2000, tpot_ms=60, e2e_ms=None, percentile=95)
    shares = [rng.uniform(0.5, 1.5) for _ in shapes]
    total = sum(shares)
    return PlanRequest(
        model=MODEL,
        precision="fp8",
        kv_precision="fp8",
        engine="vllm",
        qps=rng.uniform(5, 80),
        buckets=tuple(
            WorkloadBucket(f"b{i}", s / total, p, o)
            for i, ((p, o), s) in enumerate(zip(shapes, shares, strict=True))
        ),
        slo=slo,
        constraints=PlanConstraints(headroom=0.2, min_replicas=2, spread=spread or Spread()),
    )


def solver_offers(snapshot: CatalogSnapshot) -> int:
    """On-demand offers the MILP is given with no provider or region filter: the cheapest of
    each (GPU, instance shape)."""
    constraints = PlanConstraints()
    return sum(
        len(cheapest_per_shape(offers_for(gpu, snapshot.prices, constraints)[0]))
        for gpu in snapshot.gpus
    )


_HELPERS: list[HelperProcesses] = []


def helpers() -> HelperProcesses:
    """The helper process the service gives each running solve (``SolverPool``), started on
    first use (not on import: the helper re-imports this module)."""
    if not _HELPERS:
        _HELPERS.append(HelperProcesses(1))
    return _HELPERS[0]


def _helper_cpu_s() -> float:
    """CPU seconds the helper process has used so far (``/proc``; 0.0 where there is none,
    e.g. a platform without it, where the helpers are threads of this process)."""
    pid = helpers().submit(os.getpid).result()
    if pid == os.getpid():
        return 0.0
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


CPU_MS: list[float] = []
"""CPU ms per plan of the plans :func:`measure` timed last, this process and its helper
together (one figure: the mean, as the helper's clock counts in ticks of 10 ms): unlike the
wall clock, barely moved by other processes on a shared machine."""


STATUSES: list[str] = []
"""The status of each plan :func:`measure` timed last."""


def measure(
    snapshot: CatalogSnapshot,
    n: int,
    buckets: int,
    *,
    cold: bool,
    seed: int,
    spread: Spread | None = None,
) -> list[float]:
    """ms per plan, with the helper process the service gives each solve (see SolverPool);
    the mean CPU ms per plan goes to :data:`CPU_MS`, each plan's status to :data:`STATUSES`."""
    rng = random.Random(seed)
    base_shapes = [(512, 128), (2048, 256), (8000, 400), (300, 800)] * 4
    settle_heap()  # as the server does after each catalog load (service/heap.py)
    times = []
    CPU_MS.clear()
    STATUSES.clear()
    cpu = time.process_time()
    helper = _helper_cpu_s()
    for _ in range(n):
        req = request(rng, buckets, cold=cold, base_shapes=base_shapes, spread=spread)
        started = time.perf_counter()
        answer = plan(req, snapshot, executor=helpers())
        times.append((time.perf_counter() - started) * 1000)
        STATUSES.append(answer.status)
    used = time.process_time() - cpu + _helper_cpu_s() - helper
    CPU_MS.append(used * 1000 / n)
    return times


PHASES = (
    ("candidates (performance model, offers)", "main"),
    ("policy solve (MILP per vendor scope; prices the replica floors)", "main"),
    ("assembly of the plan's fleet", "main"),
    ("single-type solves", "helper"),
    ("what-if re-solves (constraints other than the replica floors)", "helper"),
    ("assembly of the single-type alternatives", "main"),
)


def phase_times(snapshot: CatalogSnapshot, n: int, seed: int) -> list[list[float]]:
    """ms of each of :data:`PHASES` per cold 4-bucket plan, one thread, in ``plan``'s order."""
    rng = random.Random(seed)
    settle_heap()
    out: list[list[float]] = [[] for _ in PHASES]
    for _ in range(n):
        req = request(rng, 4, cold=True, base_shapes=[])
        marks = [time.perf_counter()]
        candidates = build_candidates(req, snapshot)
        problem = fleet_problem(req, candidates)
        marks.append(time.perf_counter())
        labels = priced_constraints(req)
        solution, _, _ = one_vendor_solve(
            problem, candidates, req, price_min_replicas="min_replicas" in labels
        )
        marks.append(time.perf_counter())
        if solution.has_fleet:
            assemble_fleet(req, candidates, solution)
        marks.append(time.perf_counter())
        singles = cheapest_single_type(problem)
        marks.append(time.perf_counter())
        vendors = scope_vendors(candidates, req)
        others = tuple(label for label in labels if label != "min_replicas")
        if others:
            relaxed_costs_within_rule(problem, vendors, others, singles)
        marks.append(time.perf_counter())
        single_type_alternatives(req, candidates, singles)
        marks.append(time.perf_counter())
        for k in range(len(PHASES)):
            out[k].append((marks[k + 1] - marks[k]) * 1000)
    return out


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def row(label: str, times: list[float]) -> str:
    return (
        f"| {label} | {len(times)} | {statistics.median(times):.1f} | {pct(times, 99):.1f} | "
        f"{max(times):.1f} | {CPU_MS[0]:.1f} |"
    )


def python_speed_ms() -> float:
    """Median ms of three runs of a fixed pure-Python loop (1M steps): how fast this machine
    runs Python at the moment. On a shared virtual machine it moves by up to 2x from one minute
    to the next, and the plan latencies with it."""
    runs = []
    for _ in range(3):
        started = time.perf_counter()
        total = 0
        for i in range(1_000_000):
            total += i * i
        runs.append((time.perf_counter() - started) * 1000)
    return statistics.median(runs)


def main() -> None:
    divert_native_stdout()  # HiGHS' stray printf stays out of the tables
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="fewer samples (a smoke run)")
    args = parser.parse_args()
    n = 40 if args.quick else 200
    snap = real_snapshot()
    options = sum(1 for p in snap.prices if p.kind == "on_demand")
    kept = solver_offers(snap)
    speed = python_speed_ms()
    print("# Uncached plan latency\n")
    print(
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}; a fixed pure-Python loop of 1M steps took "
        f"{speed:.0f} ms before the first table (median of 3; the plans' latencies move with it)."
    )
    print(
        f"Model llama-3.1-70b fp8, real catalog: {len(snap.gpus)} GPUs, {options} on-demand "
        f"offers, {kept} left after pruning offers dominated on price within the same GPU and "
        "instance shape (what the MILP sees); ms per plan, wall clock, and CPU ms per plan "
        "(mean; this process's threads and its helper process: less moved than the wall clock "
        "by other load on a shared machine).\n"
    )
    print("| case | plans | p50 ms | p99 ms | max ms | CPU ms |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    helpers().warm()
    measure(snap, 3, 4, cold=False, seed=99)  # imports and first-use setup
    for buckets in (1, 4):
        print(
            row(
                f"real catalog, {buckets} bucket(s), cold",
                measure(snap, n, buckets, cold=True, seed=buckets),
            )
        )
        print(
            row(
                f"real catalog, {buckets} bucket(s), warm",
                measure(snap, n, buckets, cold=False, seed=buckets),
            )
        )
    print("\n## Spread over regions (real catalog, 4 buckets, cold)\n")
    print(
        "`spread.min_regions`: every fleet line in a named region, the fleet surviving the loss "
        "of any one; offers are pruned per region instead of per GPU and instance shape, in the "
        "`min_regions` cheapest regions offering each GPU and shape, so the MILP sees more "
        "options.\n"
    )
    print("| min_regions | plans | MILP options (mean) | p50 ms | p99 ms | max ms | time-limited |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for k in (2, 3):
        spread = Spread(min_regions=k)
        times = measure(snap, max(10, n // 10), 4, cold=True, seed=300 + k, spread=spread)
        limited = sum(1 for s in STATUSES if s == "time_limit")
        sizes = [
            len(
                build_candidates(
                    request(random.Random(i), 4, cold=True, base_shapes=[], spread=spread), snap
                ).items
            )
            for i in range(5)
        ]
        print(
            f"| {k} | {len(times)} | {statistics.mean(sizes):.0f} | "
            f"{statistics.median(times):.1f} | {pct(times, 99):.1f} | {max(times):.1f} | "
            f"{limited} |"
        )
    print("\n## Catalog growth (4 buckets, cold)\n")
    print("| catalog | GPU types | offers | after pruning | plans | p50 ms | p99 ms | max ms |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for factor in (1, 2, 5, 10):
        scaled = scaled_snapshot(snap, factor, random.Random(factor))
        times = measure(scaled, max(10, n // (2 * factor)), 4, cold=True, seed=100 + factor)
        offers = sum(1 for p in scaled.prices if p.kind == "on_demand")
        print(
            f"| {factor}x | {len(scaled.gpus)} | {offers} | {solver_offers(scaled)} | "
            f"{len(times)} | "
            f"{statistics.median(times):.1f} | {pct(times, 99):.1f} | {max(times):.1f} |"
        )
    print("\n## Request buckets (real catalog, cold)\n")
    print("| buckets | plans | p50 ms | p99 ms | max ms |")
    print("| ---: | ---: | ---: | ---: | ---: |")
    for buckets in (1, 2, 4, 8, 16):
        times = measure(snap, max(10, n // 4), buckets, cold=True, seed=200 + buckets)
        print(
            f"| {buckets} | {len(times)} | {statistics.median(times):.1f} | "
            f"{pct(times, 99):.1f} | {max(times):.1f} |"
        )
    print("\n## Where the time goes (real catalog, 4 buckets, cold, one thread)\n")
    phases = phase_times(snap, max(20, n // 2), seed=300)
    print(
        "Each step timed alone with the planner's building blocks, in the order `plan` runs "
        "them. A plan hands the single-type solves and the what-ifs to a helper process "
        "beside its policy solve (which prices the replica floors itself), so the main "
        "thread's steps are the least a plan can take on this machine.\n"
    )
    print("| step | thread | p50 ms | p90 ms |")
    print("| --- | --- | ---: | ---: |")
    for (label, thread), times in zip(PHASES, phases, strict=True):
        print(f"| {label} | {thread} | {statistics.median(times):.1f} | {pct(times, 90):.1f} |")
    main_path = [
        sum(times[i] for (_, thread), times in zip(PHASES, phases, strict=True) if thread == "main")
        for i in range(len(phases[0]))
    ]
    total = [sum(step[i] for step in phases) for i in range(len(phases[0]))]
    print(
        f"| all steps, one after the other | both | {statistics.median(total):.1f} | "
        f"{pct(total, 90):.1f} |"
    )
    print(
        f"| the main thread's steps alone | main | {statistics.median(main_path):.1f} | "
        f"{pct(main_path, 90):.1f} |"
    )


if __name__ == "__main__":
    try:
        main()
    finally:
        for pool in _HELPERS:
            pool.shutdown()
