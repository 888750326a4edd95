"""Worker threads for CPU-bound solves, off the event loop and under a cap, and the helper
processes their plans hand work to.

At most ``workers`` solves run and ``queue`` wait; one more is refused at once with
``ServiceUnavailable`` (HTTP 503 + Retry-After) instead of joining an ever-growing backlog.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import os
import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from multiprocessing.context import ForkServerContext
from typing import Any, Protocol, TypeVar

from service.usecases.errors import ServiceUnavailable
from service.usecases.helper_pipe import Helper

T = TypeVar("T")

log = logging.getLogger("gpuplan.solver")

# What a helper process needs imported before its first job (numpy, SciPy's HiGHS and the
# planner): loaded once in the fork server, so each worker starts in milliseconds.
_PRELOAD = ["service.domain.planner.aside", "service.usecases.helper_pipe"]


class HelperProcesses(Executor):
    """Processes for the work a plan does beside its policy's solve (the single-type and
    what-if solves, ``planner.aside``): unlike threads they share no GIL with the solve that
    waits for them. Each is a :class:`~service.usecases.helper_pipe.Helper`, forked from a
    server that has the planner imported (``forkserver`` start method, where the platform has
    it; else threads), started at its first job (or by :meth:`warm`) and handed one job at a
    time, straight through its pipe. A helper that died is replaced at the next submission;
    the plan that was waiting on it does the work itself (``planner.plan``). Helpers end on
    their own once the server is gone (``parent_watch``), should it be killed before it can
    shut them down."""

    def __init__(self, workers: int) -> None:
        self._workers = workers
        self._ready = threading.Condition()
        self._helpers: list[Helper] = []
        self._idle: list[Helper] = []
        self._closed = False
        self._threads: ThreadPoolExecutor | None = None
        self._context: ForkServerContext | None = None
        if "forkserver" in multiprocessing.get_all_start_methods():
            context = multiprocessing.get_context("forkserver")
            context.set_forkserver_preload(_PRELOAD)
            self._context = context
        else:
            self._use_threads()

    def _use_threads(self) -> None:
        self._threads = ThreadPoolExecutor(
            max_workers=self._workers, thread_name_prefix="solver-aux"
        )

    def _idle_again(self, helper: Helper) -> None:
        with self._ready:
            self._idle.append(helper)
            self._ready.notify()

    def _take(self) -> Helper | None:
        """An idle, live helper (started if fewer than ``workers`` run), waiting for one to
        finish its job if all are busy; ``None`` when helpers cannot be started here."""
        with self._ready:
            while True:
                if self._closed:
                    raise RuntimeError("cannot submit after shutdown")
                while self._idle:
                    helper = self._idle.pop()
                    if not helper.broken:
                        return helper
                    self._helpers.remove(helper)
                    helper.stop(wait=False)
                if len(self._helpers) < self._workers:
                    assert self._context is not None
                    try:
                        helper = Helper(self._context, os.getpid(), self._idle_again)
                    except OSError:  # no processes here (some sandboxes): threads do the work
                        return None
                    self._helpers.append(helper)
                    return helper
                self._ready.wait()

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        for _ in range(2):  # a helper found dead is replaced once
            helper = self._take() if self._threads is None else None
            if helper is None:
                if self._threads is None:
                    self._use_threads()
                assert self._threads is not None
                return self._threads.submit(fn, *args, **kwargs)
            try:
                return helper.run(fn, args, kwargs)
            except BrokenProcessPool:
                continue  # handed back broken: the next _take replaces it
        raise BrokenProcessPool("helper processes keep dying")

    def warm(self) -> bool:
        """Start the helpers now rather than at the first plan (a helper's first job waits
        for its process); ``False`` when processes cannot serve here and threads will.

        A helper whose process ends before answering (one that cannot import the server's
        main module, say: a server started from standard input; a sandbox that kills forked
        children) would fail every plan's first try: the pool turns to threads instead, so
        plans keep their helper and the server starts."""
        try:
            for future in [self.submit(int) for _ in range(self._workers)]:
                future.result()
        except BrokenProcessPool as exc:
            log.warning(
                "helper processes cannot run here (%s); solving beside plans in threads", exc
            )
            with self._ready:
                helpers, self._helpers, self._idle = self._helpers, [], []
                if self._threads is None:
                    self._use_threads()
            for helper in helpers:
                helper.stop(wait=False)
            return False
        return True

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._ready:
            self._closed = True
            helpers, self._helpers, self._idle = self._helpers, [], []
            self._ready.notify_all()
        for helper in helpers:
            helper.stop(wait=wait and not cancel_futures)
        if self._threads is not None:
            self._threads.shutdown(wait=wait, cancel_futures=cancel_futures)


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
