"""Standard output kept for what Python writes: native libraries' own writes go nowhere.

HiGHS 1.12, SciPy's MILP solver, prints a debug line with C's ``printf``
(``HighsMipSolverData::transformNewIntegerFeasibleSolution tmpSolver.run();``) each time
it repairs an incumbent found on its presolved model, whatever its output options say. On the
bundled catalog that is about one plan in a few hundred (a seven-column single-shape model is
enough). Written to file descriptor 1, it would land in the middle of ``gpuplan plan
--format json`` output piped to ``jq``, and on the server's standard output, which carries
nothing by contract (logs go to standard error).

:func:`divert_native_stdout` moves Python's ``sys.stdout`` to a duplicate of descriptor 1 and
points descriptor 1 itself at ``os.devnull``: everything written through ``sys.stdout`` (click,
``print``) reaches the real standard output as before; what native code writes to descriptor 1
is dropped. Processes started afterwards (the solver's helper processes, uvicorn's workers)
inherit the diverted descriptor. Called once, first thing, by the ``gpuplan`` entry point;
library use (tests, notebooks) is left alone.
"""

from __future__ import annotations

import os
import sys

_DIVERTED: list[bool] = []


def divert_native_stdout() -> bool:
    """Divert descriptor 1 as the module docstring says; ``True`` when done now or before.

    Left alone (``False``): a ``sys.stdout`` that is not descriptor 1 (a test runner's
    capture, ``click.testing.CliRunner``), or a process without a descriptor 1."""
    if _DIVERTED:
        return True
    stream = sys.stdout
    try:
        if stream is None or stream.fileno() != 1:
            return False
        stream.flush()
        kept = os.dup(1)
    except (OSError, ValueError, AttributeError):  # io.UnsupportedOperation is an OSError
        return False
    sink = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(sink, 1)
    finally:
        os.close(sink)
    sys.stdout = os.fdopen(
        kept,
        "w",
        buffering=1 if stream.line_buffering else -1,
        encoding=stream.encoding,
        errors=stream.errors,
    )
    _DIVERTED.append(True)
    return True
