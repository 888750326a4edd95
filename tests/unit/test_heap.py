"""settle_heap: what is alive after a catalog load leaves the collector's scans; what is
dropped later is still freed."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from service.heap import settle_heap


class Loaded:
    """Stands in for a long-lived object (a catalog snapshot)."""


@pytest.fixture
def unfreeze() -> Iterator[None]:
    yield
    gc.unfreeze()


@pytest.mark.usefixtures("unfreeze")
def test_live_objects_are_frozen_and_garbage_collected_first() -> None:
    kept = Loaded()
    cycle: list[object] = []
    cycle.append(cycle)
    dead = weakref.ref(cycle_holder := Loaded())
    cycle_holder.self = cycle_holder  # type: ignore[attr-defined]
    del cycle_holder, cycle
    settle_heap()
    assert dead() is None  # the cycle was collected before freezing
    assert gc.get_freeze_count() > 0
    assert not any(o is kept for o in gc.get_objects())  # out of the scanned generations


@pytest.mark.usefixtures("unfreeze")
def test_a_frozen_object_dropped_later_is_freed() -> None:
    loaded = Loaded()
    gone = weakref.ref(loaded)
    settle_heap()
    del loaded
    assert gone() is None
