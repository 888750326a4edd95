"""The garbage collector in a long-lived server process: what is loaded once stays out of its
scans.

A full (generation 2) collection of CPython's cycle collector walks every tracked object. In
a running server nearly all of them are the catalog snapshot, the model presets and the
memoised performance-model results, which live until the next catalog load. Walking them took
about 95 ms per full collection on the real catalog (2-core machine, ``bench/plan_latency.py``)
and landed on whichever request happened to trigger it: the slowest plans of a run were those.

:func:`settle_heap` collects once and then moves every surviving object into the permanent
generation (``gc.freeze``), so later collections walk only what requests allocate. A frozen
object that is later dropped is still freed by reference counting (a catalog snapshot is
acyclic), so replacing the snapshot releases the old one; dropped cycles wait for the next
settle. That costs one full collection per catalog load, instead of one every few hundred
requests.
"""

from __future__ import annotations

import gc

__all__ = ["settle_heap"]


def settle_heap() -> None:
    """Collect garbage, then freeze what is alive (call after loading long-lived data).

    What an earlier call froze is thawed first, so that cycles among objects dropped since
    (a request in flight at the last load, say) are collected too rather than kept for ever."""
    gc.unfreeze()
    gc.collect()
    gc.freeze()
