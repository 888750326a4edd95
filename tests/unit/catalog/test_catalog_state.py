"""The catalog snapshot state (usecases/catalog_state.py) against a fake repository: what it
answers, when it reloads, and what it does while the database is away."""

from __future__ import annotations

import asyncio
import contextlib
import time
from datetime import UTC, datetime, timedelta

import pytest

from service.domain.catalog import CatalogSnapshot, GpuSpec
from service.domain.errors import InvalidInput
from service.store.errors import DatabaseUnavailable, ValueRefused
from service.usecases.catalog_state import CatalogState, CatalogUnavailable

T0 = datetime(2026, 7, 1, tzinfo=UTC)
GPU = GpuSpec(
    id="l4",
    vendor="NVIDIA",
    name="L4",
    architecture="Ada Lovelace (AD104)",
    launch_year=2023,
    memory_gb=24,
    memory_type="GDDR6",
    memory_bandwidth_gbps=300,
)


class FakeRepository:
    """A catalog at ``revision_now``; ``down`` makes every call fail as an outage would."""

    def __init__(self, revision: int = 1) -> None:
        self.revision_now = revision
        self.down = False
        self.refuse_moments = False
        self.snapshot_calls: list[datetime | None] = []

    async def snapshot(self, as_of: datetime | None = None) -> CatalogSnapshot:
        self._fail_if_down()
        if as_of is not None and self.refuse_moments:
            raise ValueRefused(OverflowError("date value out of range"))
        self.snapshot_calls.append(as_of)
        return CatalogSnapshot(
            revision=self.revision_now, gpus=(GPU,), prices=(), prices_as_of=as_of
        )

    async def revision(self) -> int:
        self._fail_if_down()
        return self.revision_now

    def _fail_if_down(self) -> None:
        if self.down:
            raise DatabaseUnavailable(ConnectionRefusedError("refused"))


def state_of(repo: FakeRepository) -> CatalogState:
    return CatalogState(repo, refresh_interval_s=3600, timeout_s=1.0)


async def test_the_first_read_loads_the_snapshot_once() -> None:
    repo = FakeRepository(revision=3)
    state = state_of(repo)
    assert state.loaded_revision is None
    first = await state.current()
    again = await state.current()
    assert first.snapshot.revision == 3 and not first.stale
    assert again.snapshot is first.snapshot
    assert repo.snapshot_calls == [None]
    assert state.database_ok and state.loaded_revision == 3


async def test_no_snapshot_and_no_database_is_catalog_unavailable() -> None:
    repo = FakeRepository()
    repo.down = True
    state = state_of(repo)
    with pytest.raises(CatalogUnavailable) as caught:
        await state.current()
    assert caught.value.retry_after_s > 0
    assert not state.database_ok
    assert state.last_error == "ConnectionRefusedError"  # the driver's error, not the wrapper


async def test_an_outage_keeps_answering_from_the_last_snapshot_marked_stale() -> None:
    repo = FakeRepository(revision=2)
    state = state_of(repo)
    await state.current()
    repo.down = True
    state.report_failure(DatabaseUnavailable(TimeoutError()))
    view = await state.current()
    assert view.snapshot.revision == 2 and view.stale
    repo.down = False
    await state.poll_once()
    assert not (await state.current()).stale


async def test_a_write_in_this_process_makes_the_next_read_reload() -> None:
    repo = FakeRepository(revision=5)
    state = state_of(repo)
    await state.current()
    repo.revision_now = 6
    assert (await state.current()).snapshot.revision == 5  # nobody said it moved yet
    state.advance(6)
    assert (await state.current()).snapshot.revision == 6
    assert len(repo.snapshot_calls) == 2


async def test_a_known_newer_revision_with_the_database_down_answers_stale() -> None:
    repo = FakeRepository(revision=5)
    state = state_of(repo)
    await state.current()
    state.advance(7)
    repo.down = True
    view = await state.current()
    assert view.snapshot.revision == 5 and view.stale


async def test_the_poll_notices_other_writers_and_outages() -> None:
    repo = FakeRepository(revision=1)
    state = state_of(repo)
    await state.current()
    repo.revision_now = 4
    await state.poll_once()
    assert state.loaded_revision == 4
    repo.down = True
    await state.poll_once()
    assert not state.database_ok and state.last_error == "ConnectionRefusedError"
    assert state.loaded_revision == 4
    repo.down = False
    await state.poll_once()
    assert state.database_ok and state.last_error is None


async def test_as_of_reads_are_cached_per_revision_and_moment() -> None:
    repo = FakeRepository(revision=1)
    state = state_of(repo)
    past = T0 - timedelta(days=30)
    first = await state.as_of(past)
    second = await state.as_of(past)
    assert first.snapshot.prices_as_of == past and second.snapshot is first.snapshot
    assert repo.snapshot_calls == [None, past]
    state.advance(2)
    repo.revision_now = 2
    await state.as_of(past)  # a new revision is a new key
    assert repo.snapshot_calls == [None, past, None, past]


async def test_the_as_of_cache_keeps_the_32_most_recent_moments() -> None:
    repo = FakeRepository()
    state = state_of(repo)
    moments = [T0 - timedelta(hours=h) for h in range(33)]
    for moment in moments:
        await state.as_of(moment)
    calls = len(repo.snapshot_calls)
    await state.as_of(moments[-1])  # recent: still held
    assert len(repo.snapshot_calls) == calls
    await state.as_of(moments[0])  # the oldest was evicted
    assert len(repo.snapshot_calls) == calls + 1


async def test_as_of_needs_the_database() -> None:
    repo = FakeRepository()
    state = state_of(repo)
    await state.current()
    repo.down = True
    with pytest.raises(CatalogUnavailable):
        await state.as_of(T0)
    assert not state.database_ok


async def test_a_moment_the_database_refuses_is_the_callers_error_not_an_outage() -> None:
    repo = FakeRepository()
    state = state_of(repo)
    await state.current()
    repo.refuse_moments = True
    for hours in range(50):
        with pytest.raises(InvalidInput):
            await state.as_of(T0 + timedelta(hours=hours))
    assert state.database_ok and state.last_error is None
    assert not (await state.current()).stale


async def test_an_unexpected_error_is_raised_as_it_is_and_marks_nothing_down() -> None:
    repo = FakeRepository()
    state = state_of(repo)
    await state.current()

    async def broken(as_of: datetime | None = None) -> CatalogSnapshot:
        raise RuntimeError("a bug")

    repo.snapshot = broken  # type: ignore[method-assign]
    with pytest.raises(RuntimeError):
        await state.as_of(T0)
    assert state.database_ok


async def test_once_known_down_nothing_on_a_request_path_calls_the_database() -> None:
    repo = FakeRepository(revision=2)
    state = state_of(repo)
    await state.current()
    assert not state.known_down
    repo.down = True
    await state.poll_once()
    assert state.known_down
    calls = len(repo.snapshot_calls)
    state.advance(3)  # a newer revision is known, but the database is not tried
    assert (await state.current()).stale
    with pytest.raises(CatalogUnavailable):
        await state.as_of(T0)
    assert len(repo.snapshot_calls) == calls
    repo.down = False
    await state.poll_once()  # the probe closes the circuit
    assert not state.known_down
    assert (await state.current()).snapshot.revision == 2 and state.database_ok


async def test_start_survives_an_outage_and_stop_ends_the_poll() -> None:
    repo = FakeRepository()
    repo.down = True
    state = CatalogState(repo, refresh_interval_s=0.01, timeout_s=1.0)
    await state.start()
    assert state.loaded_revision is None
    repo.down = False
    for _ in range(200):
        if state.loaded_revision is not None:
            break
        await asyncio.sleep(0.01)
    assert state.loaded_revision == 1 and state.database_ok
    await state.stop()
    repo.revision_now = 9
    await asyncio.sleep(0.05)
    assert state.loaded_revision == 1


async def test_stop_ends_the_poll_even_when_a_cancel_is_lost() -> None:
    """On Python 3.11 ``asyncio.wait_for`` can drop a cancellation that arrives as its inner
    call completes; the poll must end anyway, or the service's shutdown waits for ever."""
    state = CatalogState(FakeRepository(), refresh_interval_s=0.0, timeout_s=1.0)
    polling = asyncio.Event()
    lost: list[bool] = []

    async def poll_losing_the_cancel() -> None:
        polling.set()
        if lost:  # only the first cancel is lost, so a failing run ends instead of hanging
            await asyncio.sleep(1)
            return
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.sleep(1)
        lost.append(True)

    state.poll_once = poll_losing_the_cancel  # type: ignore[method-assign]
    await state.start()
    await polling.wait()
    started = time.monotonic()
    await asyncio.wait_for(state.stop(), timeout=2)
    assert time.monotonic() - started < 0.5


async def test_on_load_runs_once_per_snapshot_loaded() -> None:
    repo = FakeRepository(revision=1)
    loads: list[int | None] = []
    state = CatalogState(
        repo,
        refresh_interval_s=3600,
        timeout_s=1.0,
        on_load=lambda: loads.append(state.loaded_revision),
    )
    await state.current()
    await state.current()  # same revision: nothing loaded
    assert loads == [1]
    repo.revision_now = 2
    await state.poll_once()
    await state.current()
    assert loads == [1, 2]
