"""The planning use case without a network: single flight, the two cache tiers, lookups,
If-None-Match, and a failing cache that makes requests bypass it."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator
from datetime import datetime
from functools import cache
from typing import Any

import pytest
import pytest_asyncio

import service.usecases.planning as planning_module
from service.cache.base import CacheUnavailable
from service.cache.codec import PlanCodec, plan_key
from service.cache.memory import MemoryPlanCache
from service.domain.catalog import CatalogSnapshot, latest_per_offer
from service.domain.planner import ConstraintsDraft, PlanDraft, WorkloadDraft, plan
from service.store.csv_format import bundled_text, parse_gpus_csv, parse_prices_csv
from service.usecases.catalog_state import SnapshotView
from service.usecases.errors import ServiceUnavailable
from service.usecases.planning import PlanningService, UnknownPlan
from service.usecases.solver_pool import SolverPool


@cache
def snapshot() -> CatalogSnapshot:
    gpus = tuple(parse_gpus_csv(bundled_text("gpus.csv")))
    prices = latest_per_offer(parse_prices_csv(bundled_text("prices.csv")))
    return CatalogSnapshot(revision=1, gpus=gpus, prices=prices)


class Snapshots:
    async def current(self) -> SnapshotView:
        return SnapshotView(snapshot(), stale=False)

    async def as_of(self, moment: datetime) -> SnapshotView:
        return SnapshotView(snapshot(), stale=False)


class Recorder:
    def __init__(self) -> None:
        self.outcomes: list[str] = []
        self.solves = 0

    def cache_lookup(self, outcome: str) -> None:
        self.outcomes.append(outcome)

    def solve_finished(self, seconds: float) -> None:
        self.solves += 1

    def solver_load(self, running: int, queued: int) -> None:
        return None


class DeadCache(MemoryPlanCache):
    backend = "redis"

    async def get(self, key: str) -> bytes | None:
        raise CacheUnavailable("ConnectionError")

    async def set(self, key: str, value: bytes, ttl_s: int) -> None:
        raise CacheUnavailable("ConnectionError")


def draft(qps: float = 12.0) -> PlanDraft:
    return PlanDraft(
        model="llama-3.1-8b",
        workload=WorkloadDraft(qps=qps, prompt_tokens=512, output_tokens=128),
        constraints=ConstraintsDraft(gpus=("l4", "l40s")),
    )


@pytest.fixture
def solves(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts planner runs; each takes at least 50 ms so concurrent callers overlap."""
    calls: list[int] = []
    real = plan

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(threading.get_ident())
        time.sleep(0.05)
        return real(*args, **kwargs)

    monkeypatch.setattr(planning_module, "plan", counted)
    return calls


def service(cache: MemoryPlanCache, metrics: Recorder) -> PlanningService:
    return PlanningService(
        Snapshots(),
        cache,
        SolverPool(workers=2, queue=8, gauges=metrics),
        metrics,
        ttl_s=600,
        time_limit_s=2.0,
    )


@pytest_asyncio.fixture(loop_scope="session")
async def planning() -> AsyncIterator[tuple[PlanningService, MemoryPlanCache, Recorder]]:
    cache, metrics = MemoryPlanCache(), Recorder()
    svc = service(cache, metrics)
    yield svc, cache, metrics
    await svc.close()


async def test_concurrent_identical_misses_solve_once(
    planning: tuple[PlanningService, MemoryPlanCache, Recorder], solves: list[int]
) -> None:
    svc, _, metrics = planning
    outcomes = await asyncio.gather(*(svc.solve(draft()) for _ in range(8)))
    assert len(solves) == 1 and metrics.solves == 1
    assert len({o.plan_id for o in outcomes}) == 1
    assert all(o.solved is outcomes[0].solved for o in outcomes)
    assert {o.cache for o in outcomes} == {"miss"}
    again = await svc.solve(draft())
    assert again.cache == "hit" and again.solved == outcomes[0].solved and len(solves) == 1


class LateMissCache(MemoryPlanCache):
    """Answers every read with a miss, the second one only after a plan was stored: a read
    sent while another caller's solve ran and answered once that solve had finished."""

    def __init__(self) -> None:
        super().__init__()
        self.stored = asyncio.Event()
        self.reads = 0

    async def get(self, key: str) -> bytes | None:
        self.reads += 1
        if self.reads > 1:
            await self.stored.wait()
            await asyncio.sleep(0.02)  # the finished solve leaves the flights meanwhile
        return None

    async def set(self, key: str, value: bytes, ttl_s: int) -> None:
        await super().set(key, value, ttl_s)
        self.stored.set()


async def test_a_miss_answered_after_the_solve_finished_does_not_solve_again(
    solves: list[int],
) -> None:
    cache, metrics = LateMissCache(), Recorder()
    svc = service(cache, metrics)
    try:
        first = asyncio.create_task(svc.solve(draft(14)))
        await asyncio.sleep(0.01)  # the first solve is running (it takes 50 ms at least)
        second = await svc.solve(draft(14))
        assert cache.reads == 2 and second.cache == "miss"
        assert (await first).solved is second.solved
        assert len(solves) == 1 and metrics.solves == 1
    finally:
        await svc.close()


async def test_the_cache_holds_the_encoded_value_and_lookup_returns_it(
    planning: tuple[PlanningService, MemoryPlanCache, Recorder], solves: list[int]
) -> None:
    svc, cache, _ = planning
    outcome = await svc.solve(draft(13))
    assert outcome.solved is not None
    raw = await cache.get(plan_key(outcome.plan_id))
    assert raw is not None and PlanCodec().decode(raw) == outcome.solved
    assert await svc.lookup(outcome.plan_id) == outcome.solved
    with pytest.raises(UnknownPlan) as unknown:
        await svc.lookup("0" * 32)
    assert unknown.value.field == "plan_id"


async def test_a_shared_hit_from_another_process_is_decoded_once(solves: list[int]) -> None:
    shared, metrics = MemoryPlanCache(), Recorder()
    writer, reader = service(shared, metrics), service(shared, metrics)
    try:
        solved = (await writer.solve(draft(14))).solved
        outcome = await reader.solve(draft(14))
        assert outcome.cache == "hit" and outcome.solved == solved and len(solves) == 1
    finally:
        await writer.close()
        await reader.close()


async def test_a_plan_the_caller_holds_is_neither_looked_up_nor_solved(
    planning: tuple[PlanningService, MemoryPlanCache, Recorder], solves: list[int]
) -> None:
    svc, _, metrics = planning
    first = await svc.solve(draft(15))
    held = await svc.solve(draft(15), known=lambda plan_id: plan_id == first.plan_id)
    assert held.solved is None and held.cache is None and held.plan_id == first.plan_id
    assert len(solves) == 1 and metrics.outcomes == ["miss"]


async def test_a_dead_cache_means_bypass_not_an_outage(solves: list[int]) -> None:
    metrics = Recorder()
    svc = service(DeadCache(), metrics)
    try:
        first = await svc.solve(draft(16))
        assert first.cache == "bypass" and first.solved is not None
        again = await svc.solve(draft(16))  # the local tier still holds what this process solved
        assert again.cache == "hit" and len(solves) == 1
        with pytest.raises(ServiceUnavailable):
            await svc.lookup("0" * 32)
    finally:
        await svc.close()
