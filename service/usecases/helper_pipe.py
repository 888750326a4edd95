"""One helper process and the pipe a plan's thread hands it a job through.

A job is pickled and written to the pipe by the thread that submits it, so the helper starts
on it at once. (``ProcessPoolExecutor`` passes each job through a manager and a feeder thread,
which must each get the GIL from a plan thread busy with its own solve: measured on cold
4-bucket plans, the helper started about 4 ms after the submission.) A reader thread per
helper takes the answer and completes the job's future; a helper that dies fails the job it
had with ``BrokenProcessPool`` and is marked broken, for its pool to replace.

No queues and no named semaphores: a shut-down helper leaves nothing for the resource tracker
to report. The helper ends with the server (``parent_watch``) should it be killed outright.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures.process import BrokenProcessPool
from multiprocessing.connection import Connection
from multiprocessing.context import ForkServerContext
from typing import Any

from service.heap import settle_heap
from service.usecases.parent_watch import exit_with

Job = tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]

STOP_TIMEOUT_S = 30.0
"""How long a shutdown waits for a helper to end (a running job ends within the solve time
limit) before it is killed."""


def serve(conn: Connection, server_pid: int) -> None:
    """The helper's loop: run each job read from ``conn`` and write back ``(True, result)`` or
    ``(False, exception)``; end on ``None``, a closed pipe, or the server's end.

    The heap is settled first, as the server settles its own (``service.heap``): what the
    helper inherited (numpy, SciPy, the planner) stays out of the collections its jobs'
    allocations trigger. Measured on the single-type and what-if solves of cold 4-bucket
    plans, a job took about 1.3 ms (8%) longer at the median without it; it costs about 25 ms
    once, when the helper starts."""
    exit_with(server_pid)
    settle_heap()
    while True:
        try:
            job: Job | None = conn.recv()
        except (EOFError, OSError):
            return
        if job is None:
            return
        fn, args, kwargs = job
        try:
            answer: tuple[bool, Any] = (True, fn(*args, **kwargs))
        except BaseException as exc:  # noqa: BLE001 - handed to the submitter, as a pool does
            answer = (False, exc)
        try:
            conn.send(answer)
        except Exception as exc:  # noqa: BLE001 - an answer that does not pickle
            conn.send((False, RuntimeError(f"the helper's answer could not be sent: {exc!r}")))


class Helper:
    """One helper process, one job at a time (its pool hands a job only to an idle helper)."""

    def __init__(
        self,
        context: ForkServerContext,
        server_pid: int,
        on_idle: Callable[[Helper], None],
    ) -> None:
        self._conn, child = context.Pipe()
        self._process = context.Process(
            target=serve, args=(child, server_pid), name="gpuplan-helper", daemon=True
        )
        self._process.start()
        child.close()
        self._on_idle = on_idle
        self._job: Future[Any] | None = None
        self._lock = threading.Lock()
        self.broken = False
        self._reader = threading.Thread(target=self._read, name="solver-aux-reader", daemon=True)
        self._reader.start()

    @property
    def pid(self) -> int | None:
        return self._process.pid

    def run(
        self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Future[Any]:
        """Hand ``fn(*args, **kwargs)`` to the process; its future. ``BrokenProcessPool`` when
        the process is gone, the pickling error when the job does not pickle. The pool gets
        the helper back (``on_idle``) once per job, answered or not, broken or not."""
        future: Future[Any] = Future()
        with self._lock:
            gone = self.broken
            if not gone:
                self._job = future
        if gone:
            self._on_idle(self)
            raise BrokenProcessPool("the helper process is gone")
        try:
            self._conn.send((fn, args, kwargs))
        except (OSError, EOFError) as exc:
            self._fail(BrokenProcessPool(f"the helper process is gone: {exc}"))
            raise BrokenProcessPool("the helper process is gone") from exc
        except Exception:
            with self._lock:
                self._job = None
            self._on_idle(self)
            raise
        return future

    def _read(self) -> None:
        while True:
            try:
                ok, value = self._conn.recv()
            except (EOFError, OSError):
                self._fail(BrokenProcessPool("the helper process ended while running a job"))
                return
            with self._lock:
                job, self._job = self._job, None
            self._on_idle(self)
            if job is not None:
                if ok:
                    job.set_result(value)
                else:
                    job.set_exception(value)

    def _fail(self, exc: BaseException) -> None:
        """The process is gone: fail the job it had (and hand the helper back, broken, for
        its pool to replace); an idle helper is only marked."""
        with self._lock:
            self.broken = True
            job, self._job = self._job, None
        if job is not None:
            self._on_idle(self)
            if not job.done():
                job.set_exception(exc)

    def stop(self, *, wait: bool) -> None:
        """End the process: after its running job (``wait``), else at once."""
        with self._lock:
            busy = self._job is not None and not self.broken
        if busy and not wait:
            self._process.kill()
        else:
            with contextlib.suppress(OSError, EOFError):  # already gone
                self._conn.send(None)
        self._process.join(STOP_TIMEOUT_S)
        if self._process.is_alive():
            self._process.kill()
            self._process.join()
        self._reader.join(STOP_TIMEOUT_S)  # the process's end of the pipe closed: EOF
        self._conn.close()
        self._process.close()
