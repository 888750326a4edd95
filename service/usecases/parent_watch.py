"""A helper process that ends with the server it works for.

A server that stops normally shuts its helper pool down (``solver_pool``). One killed outright
(SIGKILL, the OOM killer) cannot, and its workers, blocked on a queue whose other end they hold
themselves, would run on as orphans, each with the planner in memory. :func:`exit_with` is the
pool's worker initializer: it watches the server's pid and ends the worker once it is gone.
Kept apart from ``solver_pool`` so a worker imports only this (no database or cache modules).
"""

from __future__ import annotations

import os
import threading
import time

POLL_S = 1.0
"""How often a helper process checks that its server is still running."""


def server_gone(pid: int) -> bool:
    """Whether process ``pid`` has ended: nothing left to signal, one owned by another user
    (the pid was reused), or, where ``/proc`` tells, a zombie its parent has not reaped yet."""
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError):
        return True
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False  # no /proc here: a live pid is all there is to go by
    return state == "Z"


def exit_with(server_pid: int) -> None:
    """Start a daemon thread that ends this process within :data:`POLL_S` of the server's
    end (the worker's job, if any, is abandoned: nobody is left to take its answer)."""

    def watch() -> None:
        while not server_gone(server_pid):
            time.sleep(POLL_S)
        os._exit(0)

    threading.Thread(target=watch, name="server-watch", daemon=True).start()
