"""settle_heap: what is alive after a catalog load leaves the collector's scans; what is
dropped later is still freed."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from litestar.testing import TestClient

from service.app import create_app
from service.heap import settle_heap
from service.settings import Settings


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


@pytest.mark.usefixtures("unfreeze")
def test_a_cycle_frozen_earlier_is_collected_at_the_next_settle() -> None:
    holder = Loaded()
    holder.self = holder  # type: ignore[attr-defined]
    gone = weakref.ref(holder)
    settle_heap()
    del holder
    assert gone() is not None  # frozen: the collector does not look at it
    gc.collect()
    assert gone() is not None
    settle_heap()
    assert gone() is None


@pytest.mark.usefixtures("unfreeze")
@pytest.mark.parametrize("settle", [True, False])
def test_the_server_settles_after_loading_its_catalog(tmp_path: Path, settle: bool) -> None:
    """``GPUPLAN_SETTLE_HEAP`` (on by default): the catalog the server loaded at start-up is
    frozen by the time it answers."""
    gc.unfreeze()
    settings = Settings(database_url=f"sqlite+aiosqlite:///{tmp_path / 'g.db'}")
    with TestClient(create_app(replace(settings, settle_heap=settle))) as client:
        assert client.get("/v1/gpus").status_code == 200
        assert (gc.get_freeze_count() > 0) is settle
