"""The solver pool: solves run in worker threads, at most workers + queue admitted; one more
is refused at once with ServiceUnavailable; the gauges follow running and queued solves."""

from __future__ import annotations

import asyncio
import os
import threading

import pytest

from service.usecases.errors import ServiceUnavailable
from service.usecases.solver_pool import SolverPool


class Gauges:
    def __init__(self) -> None:
        self.seen: list[tuple[int, int]] = []

    def solver_load(self, running: int, queued: int) -> None:
        self.seen.append((running, queued))


async def test_capacity_refuses_the_next_solve_and_gauges_follow_the_load() -> None:
    gauges = Gauges()
    pool = SolverPool(workers=1, queue=1, gauges=gauges)
    release = threading.Event()
    try:
        first = asyncio.create_task(pool.run(lambda: release.wait(5) and "first"))
        second = asyncio.create_task(pool.run(lambda: "second"))
        await asyncio.sleep(0.05)
        assert (pool.running, pool.queued) == (1, 1)
        assert gauges.seen[-1] == (1, 1)
        with pytest.raises(ServiceUnavailable) as refused:
            await pool.run(lambda: "third")
        assert refused.value.retry_after_s == 1
        release.set()
        assert await first == "first" and await second == "second"
        assert gauges.seen[-1] == (0, 0)
        assert (pool.running, pool.queued) == (0, 0)
        assert await pool.run(lambda: "after") == "after"
    finally:
        release.set()
        pool.shutdown()


async def test_work_runs_off_the_event_loop_thread() -> None:
    pool = SolverPool(workers=2, queue=0, gauges=Gauges())
    try:
        name = await pool.run(lambda: threading.current_thread().name)
        assert name.startswith("solver") and name != threading.current_thread().name
    finally:
        pool.shutdown()


async def test_helpers_are_processes_or_threads_as_asked() -> None:
    processes = SolverPool(workers=1, queue=0, gauges=Gauges())
    threads = SolverPool(workers=1, queue=0, gauges=Gauges(), helper_processes=False)
    try:
        await processes.warm()
        await threads.warm()
        assert processes.helpers.submit(os.getpid).result(timeout=60) != os.getpid()
        assert threads.helpers.submit(os.getpid).result(timeout=60) == os.getpid()
    finally:
        processes.shutdown()
        threads.shutdown()
