"""Faults, bounded and on loopback: the database going away, racing writers, slow solves, full
queues, write floods. The service must keep answering (stale or 503), never 500, and recover."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio
from litestar.testing import AsyncTestClient

from service.app import create_app
from service.settings import Settings
from tests.conftest import ADMIN_KEY, OTHER_KEY, Client, admin, base_settings
from tests.support.databases import PostgresDatabases, SqliteDatabases
from tests.support.proxy import ToggleProxy
from tests.support.server import live_server
from tests.support.services import Endpoints, unavailable

pytestmark = pytest.mark.integration

PLAN: dict[str, Any] = {
    "model": "llama-3.1-8b",
    "workload": {"qps": 6, "prompt_tokens": 256, "output_tokens": 64},
    "slo": {"tpot_ms": 120},
    "constraints": {"gpus": ["l4", "l40s", "h100"]},
}


def plan_body(qps: float) -> dict[str, Any]:
    return {**PLAN, "workload": {**PLAN["workload"], "qps": qps}}


def observation(i: int, gpu: str = "l40s") -> dict[str, Any]:
    return {
        "gpu": gpu,
        "provider": "racecloud",
        "region": f"r{i % 3}",
        "kind": "on_demand",
        "usd": 0.5 + i / 1000,
        "instance_type": "rc.1x",
        "gpus_per_instance": 1,
        "observed_at": f"2026-08-{1 + i // 24:02d}T{i % 24:02d}:00:00Z",
    }


async def is_ready(client: Client) -> bool:
    status: str = (await client.get("/readyz")).json()["status"]
    return status == "ready"


async def wait_for(predicate: Any, within_s: float = 10.0) -> None:
    deadline = time.monotonic() + within_s
    while not await predicate():
        assert time.monotonic() < deadline, "condition not reached in time"
        await asyncio.sleep(0.1)


@pytest_asyncio.fixture(loop_scope="session")
async def pg_behind_proxy(
    endpoints: Endpoints, postgres_databases: PostgresDatabases | None
) -> AsyncIterator[tuple[ToggleProxy, str]]:
    if postgres_databases is None:
        unavailable("Postgres", endpoints.why_missing)
    assert postgres_databases is not None
    url = await postgres_databases.fresh()
    proxy = ToggleProxy.for_url(url)
    await proxy.start()
    try:
        yield proxy, proxy.url(url)
    finally:
        await proxy.close()


def pg_settings(url: str, tmp_path: Path) -> Settings:
    return replace(base_settings(url, tmp_path), database_timeout_s=1.0, catalog_refresh_s=0.2)


# ---- Postgres outage ------------------------------------------------------------------------


async def test_postgres_outage_answers_from_the_snapshot_then_recovers(
    pg_behind_proxy: tuple[ToggleProxy, str], tmp_path: Path
) -> None:
    proxy, url = pg_behind_proxy
    async with AsyncTestClient(create_app(pg_settings(url, tmp_path))) as client:
        healthy = await client.post("/v1/plans", json=plan_body(6))
        assert healthy.status_code == 200 and "x-catalog-stale" not in healthy.headers

        await proxy.cut()

        async def noticed() -> bool:
            return (await client.get("/readyz")).json()["database"]["ok"] is False

        await wait_for(noticed)
        ready = (await client.get("/readyz")).json()
        assert ready["status"] == "degraded" and ready["catalog"]["stale"] is True
        statuses = []
        for qps in (6, 7, 8):  # 6: cached; 7 and 8: solved from the last snapshot
            response = await client.post("/v1/plans", json=plan_body(qps))
            statuses.append(response.status_code)
            assert response.headers["x-catalog-stale"] == "true"
        text = await client.post("/v1/plans", json=plan_body(9), params={"format": "text"})
        assert "catalog may be stale" in text.text
        estimate = await client.get(
            "/v1/estimate",
            params={
                "model": "llama-3.1-8b",
                "gpu": "l4",
                "prompt_tokens": 100,
                "output_tokens": 10,
            },
        )
        gpus = await client.get("/v1/gpus")
        assert statuses == [200, 200, 200]
        assert estimate.status_code == 200 and estimate.headers["x-catalog-stale"] == "true"
        assert gpus.status_code == 200 and gpus.headers["x-catalog-stale"] == "true"
        write = await client.post(
            "/v1/prices", json={"observations": [observation(0)]}, headers=admin()
        )
        assert write.status_code == 503 and "retry-after" in write.headers
        history = await client.get("/v1/gpus/l40s/prices")
        assert history.status_code == 503
        assert history.headers["content-type"].startswith("application/problem+json")

        await proxy.restore()

        await wait_for(lambda: is_ready(client))
        write = await client.post(
            "/v1/prices", json={"observations": [observation(0)]}, headers=admin()
        )
        assert write.status_code == 200
        fresh = await client.post("/v1/plans", json=plan_body(6))
        assert fresh.status_code == 200 and "x-catalog-stale" not in fresh.headers
        assert fresh.json()["catalog_revision"] == write.json()["catalog_revision"]


async def test_postgres_down_at_start_answers_503_then_recovers(
    pg_behind_proxy: tuple[ToggleProxy, str], tmp_path: Path
) -> None:
    proxy, url = pg_behind_proxy
    await proxy.cut()
    async with AsyncTestClient(create_app(pg_settings(url, tmp_path))) as client:
        ready = await client.get("/readyz")
        assert ready.status_code == 503 and ready.json()["status"] == "unavailable"
        for call in (
            client.post("/v1/plans", json=PLAN),
            client.get("/v1/gpus"),
            client.get(
                "/v1/estimate",
                params={
                    "model": "llama-3.1-8b",
                    "gpu": "l4",
                    "prompt_tokens": 9,
                    "output_tokens": 9,
                },
            ),
        ):
            response = await call
            assert response.status_code == 503, response.text
            assert int(response.headers["retry-after"]) > 0
        assert (await client.get("/healthz")).status_code == 200

        await proxy.restore()

        async def serving() -> bool:
            return (await client.post("/v1/plans", json=PLAN)).status_code == 200

        await wait_for(serving)
        assert (await client.get("/readyz")).json()["status"] == "ready"


async def test_while_postgres_hangs_calls_answer_at_once_and_the_poll_closes_the_circuit(
    pg_behind_proxy: tuple[ToggleProxy, str], tmp_path: Path
) -> None:
    """A hung database costs one timeout, not one per call: once it is known to be down,
    calls that need it answer 503 at once (the circuit is open) and reads answer from the
    snapshot; the background poll finds it back and closes the circuit."""
    proxy, url = pg_behind_proxy
    settings = pg_settings(url, tmp_path)
    async with AsyncTestClient(create_app(settings)) as client:
        assert (await client.get("/readyz")).json()["status"] == "ready"
        await proxy.freeze()

        async def noticed() -> bool:
            return (await client.get("/readyz")).json()["database"]["ok"] is False

        await wait_for(noticed)
        calls: dict[str, Callable[[], Awaitable[httpx.Response]]] = {
            "history": lambda: client.get("/v1/gpus/l40s/prices"),
            "summary": lambda: client.get("/v1/catalog"),
            "ingest": lambda: client.post(
                "/v1/prices", json={"observations": [observation(1)]}, headers=admin()
            ),
            "as_of": lambda: client.post(
                "/v1/plans", json={**PLAN, "as_of": "2026-01-01T00:00:00Z"}
            ),
            "readyz": lambda: client.get("/readyz"),
        }
        waited: dict[str, float] = {}
        for _ in range(3):
            for name, call in calls.items():
                started = time.monotonic()
                response = await call()
                waited[name] = max(waited.get(name, 0.0), time.monotonic() - started)
                expected = 200 if name == "readyz" else 503
                assert response.status_code == expected, (name, response.text)
        assert max(waited.values()) < settings.database_timeout_s / 3, waited
        plan = await client.post("/v1/plans", json=plan_body(13))
        assert plan.status_code == 200 and plan.headers["x-catalog-stale"] == "true"

        await proxy.restore()

        await wait_for(lambda: is_ready(client))
        write = await client.post(
            "/v1/prices", json={"observations": [observation(2)]}, headers=admin()
        )
        assert write.status_code == 200, write.text


# ---- racing writers and readers ----------------------------------------------------------


async def test_concurrent_ingests_and_plans_keep_rows_and_revisions_consistent(
    live_url: str,
) -> None:
    async with httpx.AsyncClient(base_url=live_url, timeout=60) as client:
        await _race_ingests_and_plans(client)


async def _race_ingests_and_plans(client: httpx.AsyncClient) -> None:
    start = (await client.get("/v1/catalog")).json()
    acknowledged: list[tuple[float, int]] = []  # (time the ingest answer arrived, revision)
    plans: list[tuple[float, int]] = []  # (time the plan request was sent, revision answered)

    async def ingest(batch: int) -> None:
        rows = [observation(batch * 10 + i) for i in range(10)]
        response = await client.post("/v1/prices", json={"observations": rows}, headers=admin())
        assert response.status_code == 200, response.text
        acknowledged.append((time.monotonic(), response.json()["catalog_revision"]))

    async def plan(i: int) -> None:
        sent = time.monotonic()
        response = await client.post("/v1/plans", json=plan_body(5 + i % 7))
        assert response.status_code == 200, response.text
        plans.append((sent, response.json()["catalog_revision"]))

    await asyncio.gather(*(ingest(b) for b in range(12)), *(plan(i) for i in range(30)))
    # Re-sending every batch inserts nothing: no duplicates, nothing lost.
    again = [observation(i) for i in range(120)]
    repeat = await client.post("/v1/prices", json={"observations": again}, headers=admin())
    assert repeat.json()["inserted"] == 0 and repeat.json()["already_present"] == 120

    end = (await client.get("/v1/catalog")).json()
    assert end["price_points"] == start["price_points"] + 120
    revisions = sorted(r for _, r in acknowledged)
    assert revisions == list(range(start["catalog_revision"] + 1, start["catalog_revision"] + 13))
    assert end["catalog_revision"] == revisions[-1]
    for sent, revision in plans:
        known = [r for acked, r in acknowledged if acked <= sent]
        assert revision >= max(known, default=0), (sent, revision, known)


# ---- slow solves and full queues ---------------------------------------------------------------


@pytest_asyncio.fixture(loop_scope="session")
async def sqlite_settings(sqlite_databases: SqliteDatabases, tmp_path: Path) -> Settings:
    return base_settings(await sqlite_databases.fresh(), tmp_path)


async def test_a_solve_past_its_deadline_answers_503_and_frees_the_worker(
    sqlite_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    import service.usecases.planning as planning
    from service.domain.planner import plan as real_plan

    def slow_plan(*args: Any, **kwargs: Any) -> Any:
        time.sleep(1.5)
        return real_plan(*args, **kwargs)

    monkeypatch.setattr(planning, "plan", slow_plan)
    app = create_app(replace(sqlite_settings, solver_workers=1))
    async with AsyncTestClient(app) as client:
        app.state.services.planning._deadline_s = 0.3
        started = time.monotonic()
        late = await client.post("/v1/plans", json=plan_body(11))
        assert late.status_code == 503 and "retry-after" in late.headers
        assert time.monotonic() - started < 1.4
        await asyncio.sleep(1.5)  # the worker finishes the solve and caches it
        app.state.services.planning._deadline_s = 5.0
        done = await client.post("/v1/plans", json=plan_body(11))
        assert done.status_code == 200 and done.headers["x-cache"] == "hit"


async def test_a_full_solver_queue_answers_503_with_retry_after(
    sqlite_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    import service.usecases.planning as planning
    from service.domain.planner import plan as real_plan

    def slow_plan(*args: Any, **kwargs: Any) -> Any:
        time.sleep(0.5)
        return real_plan(*args, **kwargs)

    monkeypatch.setattr(planning, "plan", slow_plan)
    app = create_app(replace(sqlite_settings, solver_workers=1, solver_queue=1))
    with live_server(app) as url:
        async with httpx.AsyncClient(base_url=url, timeout=30) as client:
            responses = await asyncio.gather(
                *(client.post("/v1/plans", json=plan_body(20 + i)) for i in range(5))
            )
    codes = sorted(r.status_code for r in responses)
    assert codes.count(200) == 2 and codes.count(503) == 3, codes
    for r in responses:
        if r.status_code == 503:
            assert r.headers["retry-after"] == "1"
            assert r.headers["content-type"].startswith("application/problem+json")


async def test_the_real_time_limit_is_respected(sqlite_settings: Settings) -> None:
    app = create_app(replace(sqlite_settings, solve_time_limit_s=0.05))
    mix = [
        {"share": 1 / 16, "prompt_tokens": 200 + 400 * i, "output_tokens": 50 + 40 * i}
        for i in range(16)
    ]
    body = {
        "model": "llama-3.1-70b",
        "precision": "fp8",
        "workload": {"qps": 400, "mix": mix},
        "slo": {"ttft_ms": 3000, "tpot_ms": 80},
    }
    async with AsyncTestClient(app) as client:
        started = time.monotonic()
        response = await client.post("/v1/plans", json=body)
    assert response.status_code in (200, 503)
    if response.status_code == 200:
        assert response.json()["status"] in {"optimal", "time_limit"}
        if response.json()["status"] == "time_limit":
            assert any("time limit" in s for s in response.json()["explanation"])
    assert time.monotonic() - started < 20


# ---- writes: rate limits and keys ------------------------------------------------------------


async def test_writes_are_rate_limited_per_key(sqlite_settings: Settings) -> None:
    app = create_app(replace(sqlite_settings, write_rate_limit_per_minute=3))
    async with AsyncTestClient(app) as client:
        codes = []
        for i in range(5):
            r = await client.post(
                "/v1/prices", json={"observations": [observation(i)]}, headers=admin()
            )
            codes.append(r.status_code)
        assert codes == [200, 200, 200, 429, 429]
        limited = r
        assert limited.headers["content-type"].startswith("application/problem+json")
        assert int(limited.headers["retry-after"]) > 0
        # Failed authentications are counted per client, apart from the key's writes.
        unauthenticated = await client.post("/v1/prices", json={"observations": [observation(9)]})
        assert unauthenticated.status_code == 401
        reads = [(await client.post("/v1/plans", json=PLAN)).status_code for _ in range(6)]
        assert set(reads) == {200}


async def test_keys_never_appear_in_logs_or_errors(
    sqlite_settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    async with AsyncTestClient(create_app(sqlite_settings)) as client:
        wrong = await client.post(
            "/v1/prices",
            json={"observations": [observation(1)]},
            headers={"Authorization": f"Bearer {OTHER_KEY}"},
        )
        right = await client.post(
            "/v1/prices", json={"observations": [observation(2)]}, headers=admin()
        )
        bad = await client.post(
            "/v1/prices", json={"observations": [{"gpu": "l4"}]}, headers=admin()
        )
    assert (wrong.status_code, right.status_code, bad.status_code) == (403, 200, 422)
    everything = caplog.text + wrong.text + right.text + bad.text
    assert OTHER_KEY not in everything and ADMIN_KEY not in everything
