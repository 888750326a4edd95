"""Worker threads for CPU-bound solves, off the event loop and under a cap, and the helper
processes their plans hand work to.

At most ``workers`` solves run and ``queue`` wait; one more is refused at once with
``ServiceUnavailable`` (HTTP 503 + Retry-After) instead of joining an ever-growing backlog.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Protocol, TypeVar

from service.usecases.errors import ServiceUnavailable
from service.usecases.parent_watch import exit_with

T = TypeVar("T")

# What a helper process needs imported before its first job (numpy, SciPy's HiGHS and the
# planner): loaded once in the fork server, so each worker starts in milliseconds.
_PRELOAD = ["service.domain.planner.aside", "service.usecases.parent_watch"]


class HelperProcesses(Executor):
    """Processes for the work a plan does beside its policy's solve (the single-type and
    what-if solves, ``planner.aside``): unlike threads they share no GIL with the solve that
    waits for them. Workers fork from a server that has the planner imported (``forkserver``
    start method, where the platform has it and can make the pool's semaphores; else
    threads). A pool that lost a worker is
    replaced at the next submission; the plans that were waiting on it do the work themselves
    (``planner.plan``). Workers end on their own once the server is gone (``parent_watch``),
    should it be killed before it can shut them down."""

    def __init__(self, workers: int) -> None:
        self._workers = workers
        self._lock = threading.Lock()
        self._pool = self._start()

    def _start(self) -> Executor:
        if "forkserver" not in multiprocessing.get_all_start_methods():
            return ThreadPoolExecutor(max_workers=self._workers, thread_name_prefix="solver-aux")
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(_PRELOAD)
        try:
            return ProcessPoolExecutor(
                max_workers=self._workers,
                mp_context=context,
                initializer=exit_with,
                initargs=(os.getpid(),),
            )
        except OSError:  # no POSIX semaphores here (some sandboxes): threads do the same work
            return ThreadPoolExecutor(max_workers=self._workers, thread_name_prefix="solver-aux")

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        with self._lock:
            try:
                return self._pool.submit(fn, *args, **kwargs)
            except BrokenProcessPool:
                self._pool.shutdown(wait=False, cancel_futures=True)
                self._pool = self._start()
                return self._pool.submit(fn, *args, **kwargs)

    def warm(self) -> None:
        """Start the workers now rather than at the first plan (a worker's first job waits
        for its process)."""
        for future in [self.submit(int) for _ in range(self._workers)]:
            future.result()

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._lock:
            self._pool.shutdown(wait=wait, cancel_futures=cancel_futures)


class SolverGauges(Protocol):
    """Where the pool reports its load (the service's metrics, or nothing)."""

    def solver_load(self, running: int, queued: int) -> None: ...


class SolverPool:
    """Worker threads for CPU-bound solves, at most ``workers`` running and ``queue`` waiting."""

    def __init__(
        self, workers: int, queue: int, gauges: SolverGauges, *, helper_processes: bool = True
    ) -> None:
        self._executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="solver")
        # Each running solve hands its single-type and what-if solves to a helper (one job per
        # plan, see planner.plan), so on several cores a plan finishes sooner: a process, which
        # shares no GIL with the solve; threads (``helper_processes`` false) suit a one-off
        # plan, which would wait for the process to start.
        self.helpers: Executor = (
            HelperProcesses(workers)
            if helper_processes
            else ThreadPoolExecutor(max_workers=workers, thread_name_prefix="solver-aux")
        )
        self._workers = workers
        self._limit = workers + queue
        self._admitted = 0
        self._gauges = gauges

    @property
    def queued(self) -> int:
        return max(self._admitted - self._workers, 0)

    @property
    def running(self) -> int:
        return min(self._admitted, self._workers)

    async def run(self, fn: Callable[[], T]) -> T:
        """``fn()`` in a worker thread; ``ServiceUnavailable`` when the pool is full."""
        if self._admitted >= self._limit:
            raise ServiceUnavailable(
                f"the planner is at capacity ({self._admitted} solves admitted); retry shortly",
                retry_after_s=1,
            )
        self._admitted += 1
        self._report()
        try:
            return await asyncio.get_running_loop().run_in_executor(self._executor, fn)
        finally:
            self._admitted -= 1
            self._report()

    async def warm(self) -> None:
        """Start the helper processes now (off the event loop), so the first plans do not wait
        for them."""
        if isinstance(self.helpers, HelperProcesses):
            await asyncio.to_thread(self.helpers.warm)

    def _report(self) -> None:
        self._gauges.solver_load(self.running, self.queued)

    def shutdown(self) -> None:
        """Stop taking work. The helper processes are waited for (a job they run ends within
        the solve time limit): their pool's queues hold named semaphores that only a clean
        shutdown releases, and the server may end by re-raising SIGTERM, which runs no exit
        handlers (the resource tracker then reports them leaked on stderr)."""
        self._executor.shutdown(wait=False, cancel_futures=True)
        self.helpers.shutdown(wait=True, cancel_futures=True)
