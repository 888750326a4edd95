"""The helper processes a plan hands its single-type and what-if solves to: the same plan as
with threads or none, work in another process, and a pool that lost its worker is replaced."""

from __future__ import annotations

import gc
import os
import pickle
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool

import pytest

from service.domain.perfmodel import Slo
from service.domain.planner import PlanRequest, WorkloadBucket, plan
from service.usecases import helper_pipe
from service.usecases.parent_watch import server_gone
from service.usecases.seed_catalog import seed_snapshot
from service.usecases.solver_pool import HelperProcesses
from tests.support.plan_requests import plan_request


@pytest.fixture(scope="module")
def helpers() -> Iterator[HelperProcesses]:
    pool = HelperProcesses(1)
    yield pool
    pool.shutdown()


def two_shape_request(qps: float) -> PlanRequest:
    return plan_request(
        model="llama-3.1-70b",
        precision="fp8",
        kv_precision="fp8",
        qps=qps,
        buckets=(WorkloadBucket("chat", 0.7, 900, 250), WorkloadBucket("rag", 0.3, 5000, 300)),
        slo=Slo(ttft_ms=2500, tpot_ms=70, e2e_ms=None, percentile=95),
        headroom=0.2,
        min_replicas=2,
    )


def test_a_plan_is_the_same_with_helper_processes_threads_or_none(
    helpers: HelperProcesses,
) -> None:
    snapshot = seed_snapshot()
    with ThreadPoolExecutor(max_workers=1) as threads:
        for qps in (6.0, 40.0):
            request = two_shape_request(qps)
            alone = plan(request, snapshot)
            assert alone.fleet is not None and alone.alternatives
            assert repr(plan(request, snapshot, executor=threads)) == repr(alone)
            assert repr(plan(request, snapshot, executor=helpers)) == repr(alone)


def test_the_work_runs_in_another_process(helpers: HelperProcesses) -> None:
    assert helpers.submit(os.getpid).result(timeout=60) != os.getpid()


def test_a_helper_settles_its_heap_before_its_first_job(helpers: HelperProcesses) -> None:
    # What the helper inherited sits in the permanent generation, out of the collections
    # its jobs trigger, as in the server (service.heap); an unsettled process has none there.
    assert helpers.submit(gc.get_freeze_count).result(timeout=60) > 10_000


def _end_at_once(conn: object, server_pid: int) -> None:
    """A helper process that ends before answering anything."""
    os._exit(3)


def test_a_pool_whose_helpers_cannot_run_serves_plans_from_threads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # As when the server runs from standard input: a forked helper cannot import its main
    # module and ends at once. The server must still start, and plans still get their helper.
    monkeypatch.setattr(helper_pipe, "serve", _end_at_once)
    pool = HelperProcesses(1)
    try:
        assert pool.warm() is False
        assert pool.submit(os.getpid).result(timeout=60) == os.getpid()  # a thread here
        snapshot = seed_snapshot()
        request = two_shape_request(6.0)
        assert repr(plan(request, snapshot, executor=pool)) == repr(plan(request, snapshot))
    finally:
        pool.shutdown()


def test_a_pool_that_lost_its_worker_is_replaced() -> None:
    pool = HelperProcesses(1)
    try:
        lost = pool.submit(os.getpid).result(timeout=60)
        os.kill(lost, signal.SIGKILL)
        answered = None
        for _ in range(20):
            try:
                answered = pool.submit(os.getpid).result(timeout=60)
                if answered != lost:
                    break
            except BrokenProcessPool:
                continue  # submitted before the pool saw its worker die
        assert answered is not None and answered not in (lost, os.getpid())
    finally:
        pool.shutdown()


def server_that_ends(how: str) -> list[str]:
    """The command of a process that warms a service's solver pool, then ends ``how``."""
    script = "\n".join(
        [
            "import asyncio, os, signal",
            "from service.usecases.solver_pool import SolverPool",
            "class Gauges:",
            "    def solver_load(self, running, queued):",
            "        pass",
            "pool = SolverPool(1, 1, Gauges(), helper_processes=True)",
            "asyncio.run(pool.warm())",
            how,
        ]
    )
    return [sys.executable, "-c", script]


# as the server ends: its shutdown, then the signal again, which runs no exit handlers
SHUT_DOWN_THEN_SIGTERM = "pool.shutdown(); os.kill(os.getpid(), signal.SIGTERM)"
KILLED = "os.kill(os.getpid(), signal.SIGKILL)"  # no shutdown at all


def test_a_pool_shut_down_before_the_server_dies_by_sigterm_leaves_nothing_on_stderr() -> None:
    """The server re-raises SIGTERM after its shutdown, so no exit handler runs: the helper
    pool's semaphores must be released by the shutdown itself, or the resource tracker warns
    of leaked semaphores on stderr, a line that breaks JSON-only logs; and a worker left
    running would outlive the server holding its stderr (here: the run would time out)."""
    done = subprocess.run(
        server_that_ends(SHUT_DOWN_THEN_SIGTERM), capture_output=True, text=True, timeout=30
    )
    assert done.returncode == -signal.SIGTERM
    assert done.stderr == ""


def test_helper_processes_end_soon_after_a_killed_server() -> None:
    """A server killed outright cannot stop its helpers: they notice and end, so nothing of it
    is left holding its stderr (the run ends; orphans would keep it open to the timeout)."""
    server = subprocess.Popen(
        server_that_ends(KILLED), stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    # not reaped until its pipes close: a dead server that is still a zombie counts as gone
    server.communicate(timeout=30)
    assert server.returncode == -signal.SIGKILL


def test_a_server_is_gone_once_its_process_has_ended() -> None:
    assert not server_gone(os.getpid())
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    deadline = time.monotonic() + 10
    while not server_gone(child.pid):  # ended, not yet reaped: a zombie
        assert time.monotonic() < deadline
        time.sleep(0.01)
    child.wait()  # reaped: its pid names no process now
    assert server_gone(child.pid)


def test_a_job_that_raises_hands_its_exception_back(helpers: HelperProcesses) -> None:
    with pytest.raises(ZeroDivisionError):
        helpers.submit(divmod, 1, 0).result(timeout=60)
    assert helpers.submit(os.getpid).result(timeout=60) != os.getpid()  # still serving


def test_a_job_that_does_not_pickle_fails_at_submission_and_the_helper_stays(
    helpers: HelperProcesses,
) -> None:
    with pytest.raises((pickle.PicklingError, AttributeError, TypeError)):
        helpers.submit(lambda: 1)
    assert helpers.submit(os.getpid).result(timeout=60) != os.getpid()


def test_each_of_several_helpers_takes_a_job_and_shutdown_ends_them() -> None:
    pool = HelperProcesses(2)
    try:
        # two jobs at once land in two processes: the second does not wait for the first
        slow = pool.submit(time.sleep, 2.0)
        pids = {pool.submit(os.getpid).result(timeout=60)}
        assert not slow.done()
        slow.result(timeout=60)
        pids |= {f.result(timeout=60) for f in [pool.submit(os.getpid) for _ in range(2)]}
        assert len(pids) == 2 and os.getpid() not in pids
    finally:
        pool.shutdown()
    assert all(server_gone(pid) for pid in pids)
