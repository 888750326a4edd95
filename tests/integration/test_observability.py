"""Metrics, structured access logs, request ids and CORS."""

from __future__ import annotations

import json
import logging
from dataclasses import replace
from pathlib import Path

import pytest
from litestar.testing import AsyncTestClient

from service.app import create_app
from service.observability.logging import JsonFormatter
from tests.conftest import ADMIN_KEY, base_settings
from tests.support.bodies import SMALL_PLAN
from tests.support.databases import SqliteDatabases

pytestmark = pytest.mark.integration

PLAN = SMALL_PLAN


async def test_metrics_cover_requests_solves_cache_revision_and_queue(
    sqlite_databases: SqliteDatabases, tmp_path: Path
) -> None:
    app = create_app(base_settings(await sqlite_databases.fresh(), tmp_path))
    async with AsyncTestClient(app) as client:
        await client.post("/v1/plans", json=PLAN)
        await client.post("/v1/plans", json=PLAN)
        await client.get("/v1/gpus/nope")
        text = (await client.get("/metrics")).text
        revision = (await client.get("/v1/catalog")).json()["catalog_revision"]
    assert 'gpuplan_http_requests_total{method="POST",route="/v1/plans",status="200"} 2.0' in text
    assert (
        'gpuplan_http_requests_total{method="GET",route="/v1/gpus/{gpu_id}",status="404"} 1.0'
        in text
    )
    assert (
        'gpuplan_http_request_duration_seconds_bucket{le="0.005",method="POST",route="/v1/plans"}'
        in text
    )
    assert "gpuplan_solve_duration_seconds_count 1.0" in text
    assert 'gpuplan_plan_cache_total{outcome="hit"} 1.0' in text
    assert 'gpuplan_plan_cache_total{outcome="miss"} 1.0' in text
    assert 'gpuplan_plan_cache_total{outcome="bypass"} 0.0' in text
    assert revision >= 1 and f"gpuplan_catalog_revision {float(revision)}" in text
    assert "gpuplan_solver_queue_depth 0.0" in text
    assert "gpuplan_catalog_stale 0.0" in text
    assert "gpuplan_plan_cache_entries 1.0" in text
    assert "gpuplan_plan_cache_bytes " in text


async def test_one_json_log_line_per_request_with_route_cache_and_request_id(
    sqlite_databases: SqliteDatabases, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    app = create_app(base_settings(await sqlite_databases.fresh(), tmp_path))
    caplog.set_level(logging.INFO, logger="gpuplan.access")
    async with AsyncTestClient(app) as client:
        await client.post("/v1/plans", json=PLAN, headers={"X-Request-ID": "req-1"})
        await client.post("/v1/plans", json=PLAN, headers={"X-Request-ID": "req-2"})
        await client.put(
            "/v1/gpus/x1",
            json={"nope": 1},
            headers={"Authorization": f"Bearer {ADMIN_KEY}", "X-Request-ID": "req-3"},
        )
    lines = [
        json.loads(JsonFormatter().format(r)) for r in caplog.records if r.name == "gpuplan.access"
    ]
    by_id = {line["request_id"]: line for line in lines}
    first, second, write = by_id["req-1"], by_id["req-2"], by_id["req-3"]
    assert first["method"] == "POST" and first["route"] == "/v1/plans" and first["status"] == 200
    assert (first["cache"], second["cache"]) == ("miss", "hit")
    assert first["duration_ms"] > 0 and first["level"] == "info" and first["msg"] == "request"
    assert write["status"] == 422
    assert ADMIN_KEY not in json.dumps(lines)


async def test_cors_allows_only_configured_origins(
    sqlite_databases: SqliteDatabases, tmp_path: Path
) -> None:
    settings = replace(
        base_settings(await sqlite_databases.fresh(), tmp_path),
        cors_origins=("https://portal.example.com",),
    )
    async with AsyncTestClient(create_app(settings)) as client:
        allowed = await client.options(
            "/v1/plans",
            headers={
                "Origin": "https://portal.example.com",
                "Access-Control-Request-Method": "POST",
            },
        )
        assert allowed.headers.get("access-control-allow-origin") == "https://portal.example.com"
        other = await client.get("/v1/catalog", headers={"Origin": "https://evil.example.com"})
        assert "access-control-allow-origin" not in other.headers
        # A portal page reads the plan's id, cache outcome and price age from the headers.
        plan = await client.post(
            "/v1/plans", json=PLAN, headers={"Origin": "https://portal.example.com"}
        )
        exposed = {
            h.strip().lower() for h in plan.headers["access-control-expose-headers"].split(",")
        }
        assert {"etag", "x-cache", "x-prices-age-days", "x-prices-stale"} <= exposed
        assert "x-prices-age-days" in plan.headers and "etag" in plan.headers
