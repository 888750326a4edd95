"""The plans API end to end: formats, determinism, ETags, caching and cache outages."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio
from litestar.testing import AsyncTestClient

from service.app import create_app
from service.settings import Settings
from service.store.csv_format import bundled_text, parse_purchase_gaps_csv
from tests.conftest import Client, admin, base_settings
from tests.support.databases import SqliteDatabases
from tests.support.plan_text import plan_table
from tests.support.proxy import ToggleProxy
from tests.support.services import Endpoints, unavailable

pytestmark = pytest.mark.integration

BODY: dict[str, Any] = {
    "model": "llama-3.1-8b",
    "workload": {"qps": 12, "prompt_tokens": 512, "output_tokens": 128},
    "slo": {"ttft_ms": 2000, "tpot_ms": 50, "percentile": 95},
    "constraints": {"gpus": ["l4", "L40S", "h100", "a10g"], "headroom": 0.2},
}


async def post_plan(client: Client, body: dict[str, Any] = BODY, **kwargs: Any) -> Any:
    return await client.post("/v1/plans", json=body, **kwargs)


async def test_post_plan_answers_the_documented_fields(client: Client) -> None:
    response = await post_plan(client)
    assert response.status_code == 200, response.text
    plan = response.json()
    for name in (
        "plan_id",
        "status",
        "catalog_revision",
        "prices_as_of",
        "usd_per_hour",
        "usd_per_month",
        "usd_per_million_output_tokens",
        "total_cards",
        "qps_capacity",
        "fleet",
        "alternatives",
        "savings_vs_best_single_type",
        "rejected",
        "max_qps_within_budget",
        "explanation",
        "assumptions",
    ):
        assert name in plan, name
    assert plan["status"] == "optimal"
    line = plan["fleet"][0]
    for name in (
        "gpu",
        "provider",
        "region",
        "instance_type",
        "pricing",
        "tensor_parallel",
        "replicas",
        "cards",
        "usd_per_hour",
        "qps_capacity",
        "assigned_qps",
        "ttft_ms",
        "tpot_ms",
        "utilization",
    ):
        assert name in line, name
    assert {a["gpu"] for a in plan["alternatives"]} <= {"l4", "l40s", "h100-sxm", "a10g"}
    assert plan["request"]["constraints"]["gpus"] == ["a10g", "h100-sxm", "l4", "l40s"]
    assert response.headers["etag"] == f'"{plan["plan_id"]}"'
    assert response.headers["x-cache"] in {"miss", "bypass"}


async def test_identical_requests_are_byte_identical_and_cached(client: Client) -> None:
    first = await post_plan(client)
    second = await post_plan(client)
    assert first.content == second.content
    assert second.headers["x-cache"] == "hit"
    reordered = {
        **BODY,
        "constraints": {**BODY["constraints"], "gpus": ["a10g", "l4", "h100-sxm", "l40s"]},
    }
    third = await post_plan(client, reordered)
    assert third.content == first.content and third.headers["x-cache"] == "hit"


async def test_if_none_match_answers_304(client: Client) -> None:
    first = await post_plan(client)
    etag = first.headers["etag"]
    again = await post_plan(client, headers={"If-None-Match": etag})
    assert again.status_code == 304 and again.content == b""
    plan_id = first.json()["plan_id"]
    by_id = await client.get(f"/v1/plans/{plan_id}", headers={"If-None-Match": etag})
    assert by_id.status_code == 304


async def test_get_plan_by_id_and_unknown_id(client: Client) -> None:
    first = await post_plan(client)
    plan_id = first.json()["plan_id"]
    fetched = await client.get(f"/v1/plans/{plan_id}")
    assert fetched.status_code == 200 and fetched.content == first.content
    missing = await client.get("/v1/plans/" + "0" * 32)
    assert missing.status_code == 404
    assert "POST" in missing.json()["detail"]
    bad = await client.get("/v1/plans/not-an-id")
    assert bad.status_code == 422


async def test_get_plan_from_query_matches_post(client: Client) -> None:
    query: dict[str, str | int | float] = {
        "model": "llama-3.1-8b",
        "qps": 12,
        "prompt_tokens": 512,
        "output_tokens": 128,
        "ttft_ms": 2000,
        "tpot_ms": 50,
        "gpus": "l4,l40s,h100,a10g",
        "headroom": 0.2,
    }
    response = await client.get("/v1/plan", params=query)
    assert response.status_code == 200, response.text
    posted = (await post_plan(client)).json()
    assert response.json()["plan_id"] == posted["plan_id"]


async def test_text_format_is_a_table(client: Client) -> None:
    by_query = await post_plan(client, params={"format": "text"})
    by_accept = await post_plan(client, headers={"Accept": "text/plain"})
    for response in (by_query, by_accept):
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/plain")
        text = response.text
        assert "FLEET" in text and "ALTERNATIVES" in text and "WHY" in text
        assert re.search(r"TOTAL\s+\d+\s+\d+", text)
    assert by_query.text == by_accept.text


async def test_flat_format_is_string_values(client: Client) -> None:
    response = await post_plan(client, params={"format": "flat"})
    flat = response.json()
    assert all(isinstance(v, str) for v in flat.values())
    assert int(flat["fleet_lines"]) >= 1
    assert flat["gpu_0"] and int(flat["cards_0"]) >= 1
    assert float(flat["usd_per_hour"]) > 0


async def test_budget_infeasible_and_as_of(client: Client) -> None:
    over = await post_plan(client, {**BODY, "budget": {"usd_per_hour": 0.01}})
    assert over.json()["status"] == "over_budget"
    assert over.json()["max_qps_within_budget"] < 12
    monthly = await post_plan(client, {**BODY, "budget": {"usd_per_month": 10_000_000}})
    assert monthly.json()["status"] == "optimal"
    impossible = await post_plan(client, {**BODY, "slo": {"tpot_ms": 0.5}})
    body = impossible.json()
    assert impossible.status_code == 200 and body["status"] == "infeasible"
    assert {r["gpu"] for r in body["rejected"]} == {"l4", "l40s", "h100-sxm", "a10g"}
    early = await post_plan(client, {**BODY, "as_of": "2025-06-01T00:00:00Z"})
    assert early.json()["prices_as_of"] == "2025-06-01T00:00:00Z"
    assert early.json()["plan_id"] != over.json()["plan_id"]


def merged(base: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """``changes`` merged into ``base`` object by object (lists and values replaced), as
    ``jq '.request * .relaxations[0].changes'`` does."""
    out = dict(base)
    for key, value in changes.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merged(out[key], value)
        else:
            out[key] = value
    return out


async def test_an_impossible_tpot_answers_relaxations_that_plan_at_their_cost(
    client: Client,
) -> None:
    """No card reaches a 2 ms TPOT on Llama 3.1 8B: the answer gives each rejected GPU's
    best latencies and the changes that would work; the plan's echoed request with a
    relaxation's changes merged in, posted back, is a feasible plan at the stated cost."""
    body = {**BODY, "slo": {"ttft_ms": 2000, "tpot_ms": 2, "percentile": 95}}
    answer = (await post_plan(client, body)).json()
    assert answer["status"] == "infeasible" and answer["fleet"] == []
    assert all(r["best_tpot_ms"] > 2 for r in answer["rejected"])
    relaxations = answer["relaxations"]
    assert relaxations and len(relaxations) <= 5
    assert [r["usd_per_hour"] for r in relaxations] == sorted(
        r["usd_per_hour"] for r in relaxations
    )
    assert "slo" in {r["kind"] for r in relaxations}
    for relaxation in relaxations:
        again = (await post_plan(client, merged(answer["request"], relaxation["changes"]))).json()
        assert again["status"] == "optimal", relaxation
        assert again["usd_per_hour"] == relaxation["usd_per_hour"]
        assert sorted({line["gpu"] for line in again["fleet"]}) == relaxation["gpus"]
        assert again["relaxations"] == []
    text = (await post_plan(client, body, params={"format": "text"})).text
    assert "RELAXATIONS" in text and "BEST TPOT p95" in text
    assert relaxations[0]["summary"] in text


async def test_a_price_write_invalidates_cached_plans(client: Client) -> None:
    first = await post_plan(client)
    assert (await post_plan(client)).headers["x-cache"] == "hit"
    used = first.json()["fleet"][0]["gpu"]
    # A GPU cloud the default provider policy admits (a provider the service does not know
    # has kind "other", used only when a request or GPUPLAN_DEFAULT_PROVIDERS names it).
    observation = {
        "gpu": used,
        "provider": "nebius",
        "region": "r1",
        "kind": "on_demand",
        "usd": 0.01,
        "instance_type": "ex.1x",
        "gpus_per_instance": 1,
        "observed_at": "2026-07-01T00:00:00Z",
    }
    ingest = await client.post("/v1/prices", json={"observations": [observation]}, headers=admin())
    assert ingest.status_code == 200
    after = await post_plan(client)
    assert after.headers["x-cache"] in {"miss", "bypass"}
    assert after.json()["catalog_revision"] == ingest.json()["catalog_revision"]
    assert after.json()["plan_id"] != first.json()["plan_id"]
    assert after.json()["usd_per_hour"] < first.json()["usd_per_hour"]
    assert "nebius" in {line["provider"] for line in after.json()["fleet"]}


@pytest.mark.parametrize(
    ("body", "status", "field"),
    [
        (
            {
                **BODY,
                "workload": {
                    "qps": 1,
                    "mix": [{"share": 0.5, "prompt_tokens": 10, "output_tokens": 10}],
                },
            },
            422,
            "workload.mix",
        ),
        ({**BODY, "workload": {"qps": 1, "prompt_tokens": 100}}, 422, "workload.output_tokens"),
        (
            {**BODY, "workload": {"qps": 1, "prompt_tokens": 200_000, "output_tokens": 10}},
            422,
            "workload.prompt_tokens",
        ),
        ({**BODY, "model": "llama-9-700b"}, 404, "model"),
        ({**BODY, "constraints": {"gpus": ["h1000"]}}, 404, "constraints.gpus[0]"),
        ({**BODY, "budget": {"usd_per_hour": 1, "usd_per_month": 730}}, 422, "budget"),
        ({**BODY, "colour": "blue"}, 422, "colour"),
        (
            {**BODY, "workload": {"qps": -1, "prompt_tokens": 1, "output_tokens": 1}},
            422,
            "workload.qps",
        ),
        (
            {**BODY, "workload": {"qps": "many", "prompt_tokens": 1, "output_tokens": 1}},
            422,
            "workload.qps",
        ),
        (
            {**BODY, "workload": {"qps": 1, "prompt_tokens": 10**30, "output_tokens": 1}},
            422,
            "workload.prompt_tokens",
        ),
        (
            {
                **BODY,
                "workload": {
                    "qps": 1,
                    "mix": [{"share": 1, "prompt_tokens": 1, "output_tokens": 1}] * 17,
                },
            },
            422,
            "workload.mix",
        ),
    ],
)
async def test_bad_requests_name_the_field(
    client: Client, body: dict[str, Any], status: int, field: str
) -> None:
    response = await post_plan(client, body)
    assert response.status_code == status, response.text
    problem = response.json()
    assert problem["field"] == field, problem
    assert "Traceback" not in response.text


QUERY: dict[str, Any] = {
    "model": "llama-3.1-8b",
    "qps": 12,
    "prompt_tokens": 512,
    "output_tokens": 128,
    "gpus": "l4,l40s",
}


@pytest.mark.parametrize(
    ("changes", "status", "field"),
    [
        ({"prompt_tokens": 200_000}, 422, "prompt_tokens"),
        ({"gpus": "l4,h1000"}, 404, "gpus"),
        ({"gpus": ",".join(f"g{i}" for i in range(65))}, 422, "gpus"),
        ({"exclude_gpus": "nope"}, 404, "exclude_gpus"),
        ({"model": "llama-9-700b"}, 404, "model"),
        ({"qps": -1}, 422, "qps"),
        ({"percentile": 10}, 422, "percentile"),
        ({"pricing": "free"}, 422, "pricing"),
        ({"max_gpu_types": 0}, 422, "max_gpu_types"),
        ({"min_mix_savings_percent": 101}, 422, "min_mix_savings_percent"),
        ({"allow_mixed_vendors": "perhaps"}, 422, "allow_mixed_vendors"),
        ({"headroom": -0.1}, 422, "headroom"),
        ({"routing": "round_robin"}, 422, "routing"),
        ({"min_providers": 0}, 422, "min_providers"),
        ({"min_regions": "two"}, 422, "min_regions"),
    ],
)
async def test_query_errors_name_the_query_parameter(
    client: Client, changes: dict[str, Any], status: int, field: str
) -> None:
    response = await client.get("/v1/plan", params={**QUERY, **changes})
    assert response.status_code == status, response.text
    assert response.json()["field"] == field, response.json()


MIX_QUERY: dict[str, Any] = {
    **QUERY,
    "max_gpu_types": 1,
    "min_mix_savings_percent": 5,
    "allow_mixed_vendors": "true",
}


async def test_the_mixing_policy_and_headroom_travel_by_body_and_query(client: Client) -> None:
    by_query = (await client.get("/v1/plan", params=MIX_QUERY)).json()
    body = {
        "model": "llama-3.1-8b",
        "workload": {"qps": 12, "prompt_tokens": 512, "output_tokens": 128},
        "constraints": {
            "gpus": ["l4", "l40s"],
            "mixing": {
                "max_gpu_types": 1,
                "min_mix_savings_percent": 5,
                "allow_mixed_vendors": True,
            },
        },
    }
    by_body = (await post_plan(client, body)).json()
    assert by_query["plan_id"] == by_body["plan_id"]
    echoed = by_body["request"]["constraints"]
    assert echoed["mixing"] == {
        "max_gpu_types": 1,
        "min_mix_savings_percent": 5.0,
        "allow_mixed_vendors": True,
    }
    assert echoed["allow_mix"] is False
    assert echoed["headroom"] is None  # left out: the model's validation error
    assert by_body["mixing"]["rule"] == "single_type_required"
    assert any(a.startswith("Headroom") for a in by_body["assumptions"])
    plain = (await client.get("/v1/plan", params=QUERY)).json()
    assert plain["request"]["constraints"]["mixing"] == {
        "max_gpu_types": 2,
        "min_mix_savings_percent": 10.0,
        "allow_mixed_vendors": False,
    }


async def test_server_settings_change_the_defaults_a_request_leaves_out(
    sqlite_databases: SqliteDatabases, tmp_path: Path
) -> None:
    settings = replace(
        base_settings(await sqlite_databases.fresh(), tmp_path),
        headroom=0.5,
        max_gpu_types=3,
        min_mix_savings_percent=0.0,
        allow_mixed_vendors=True,
    )
    async with AsyncTestClient(create_app(settings)) as client:
        plain = (await client.get("/v1/plan", params=QUERY)).json()
        constraints = plain["request"]["constraints"]
        assert constraints["headroom"] == 0.5
        assert constraints["mixing"] == {
            "max_gpu_types": 3,
            "min_mix_savings_percent": 0.0,
            "allow_mixed_vendors": True,
        }
        asked = (await client.get("/v1/plan", params={**QUERY, "headroom": 0.1})).json()
        assert asked["request"]["constraints"]["headroom"] == 0.1
        assert asked["plan_id"] != plain["plan_id"]


async def test_query_plans_are_cached_and_answer_304(client: Client) -> None:
    first = await client.get("/v1/plan", params=QUERY)
    assert first.status_code == 200 and first.headers["x-cache"] in {"miss", "bypass"}
    again = await client.get("/v1/plan", params={**QUERY, "gpus": "L40S,l4,l4"})
    assert again.headers["x-cache"] == "hit" and again.content == first.content
    held = await client.get(
        "/v1/plan", params=QUERY, headers={"If-None-Match": first.headers["etag"]}
    )
    assert held.status_code == 304 and held.headers["etag"] == first.headers["etag"]
    text = await client.get("/v1/plan", params={**QUERY, "format": "text"})
    assert plan_table(text.text).startswith(f"gpuplan plan {first.json()['plan_id']}")


async def test_list_and_body_limits(client: Client) -> None:
    too_many_gpus = {**BODY, "constraints": {"gpus": [f"g{i}" for i in range(65)]}}
    response = await post_plan(client, too_many_gpus)
    assert response.status_code == 422 and response.json()["field"] == "constraints.gpus"
    too_many_tp = {**BODY, "constraints": {"tensor_parallel": [3]}}
    response = await post_plan(client, too_many_tp)
    assert response.status_code == 422 and response.json()["field"].startswith(
        "constraints.tensor_parallel"
    )
    huge = b'{"model": "' + b"x" * (300 * 1024) + b'"}'
    response = await client.post(
        "/v1/plans", content=huge, headers={"content-type": "application/json"}
    )
    assert response.status_code == 413
    assert response.headers["content-type"].startswith("application/problem+json")


async def test_nan_and_infinity_are_rejected(client: Client) -> None:
    for literal in (b"NaN", b"Infinity", b"1e999"):
        raw = (
            b'{"model":"llama-3.1-8b","workload":{"qps":'
            + literal
            + b',"prompt_tokens":1,"output_tokens":1}}'
        )
        response = await client.post(
            "/v1/plans", content=raw, headers={"content-type": "application/json"}
        )
        assert 400 <= response.status_code < 500, (literal, response.text)


async def test_concurrent_identical_misses_solve_once(live_url: str) -> None:
    body = {**BODY, "workload": {"qps": 17.5, "prompt_tokens": 300, "output_tokens": 90}}
    async with httpx.AsyncClient(base_url=live_url, timeout=60) as client:
        before = _solves(await client.get("/metrics"))
        responses = await asyncio.gather(*(client.post("/v1/plans", json=body) for _ in range(6)))
        after = _solves(await client.get("/metrics"))
    assert {r.status_code for r in responses} == {200}
    assert len({r.content for r in responses}) == 1
    assert after == before + 1
    assert sorted(r.headers["x-cache"] for r in responses).count("hit") < 6


def _solves(metrics: Any) -> float:
    match = re.search(r"^gpuplan_solve_duration_seconds_count (\S+)$", metrics.text, re.M)
    return float(match.group(1)) if match else 0.0


async def test_estimate_and_models(client: Client) -> None:
    body: dict[str, str | int] = {
        "model": "llama-2-70b",
        "gpu": "A100",
        "prompt_tokens": 1024,
        "output_tokens": 256,
    }
    response = await client.post("/v1/estimate", json=body)
    assert response.status_code == 200, response.text
    est = response.json()
    for name in (
        "fits",
        "reason",
        "gpu",
        "tensor_parallel",
        "max_concurrency",
        "concurrency",
        "ttft_ms",
        "tpot_ms",
        "e2e_ms",
        "output_tokens_per_s",
        "requests_per_s",
        "bottleneck",
        "memory",
        "assumptions",
    ):
        assert name in est
    assert est["gpu"] == "a100-sxm-80gb" and est["tensor_parallel"] == 2 and est["fits"]
    one = await client.post("/v1/estimate", json={**body, "tensor_parallel": 1})
    assert one.json()["fits"] is False and "GB" in one.json()["reason"]
    shape: dict[str, str | int] = {"prompt_tokens": 512, "output_tokens": 128}
    loaded = await client.get(
        "/v1/estimate",
        params={
            "model": "llama-3.1-8b",
            "gpu": "l4",
            "prompt_tokens": 512,
            "output_tokens": 128,
            "qps": 1,
        },
    )
    assert loaded.status_code == 200 and loaded.json()["latency"]["ttft_ms"]["p95"] > 0
    # A 70B model in fp8 needs two 48 GB L40S: by default over PCIe, as plans do.
    pcie: dict[str, str | int] = {
        "model": "llama-3.1-70b",
        "gpu": "l40s",
        "precision": "fp8",
        **shape,
    }
    over_pcie = (await client.get("/v1/estimate", params=pcie)).json()
    assert over_pcie["fits"] and over_pcie["tensor_parallel"] == 2
    assert any("over PCIe" in a for a in over_pcie["assumptions"])
    nvlink_only = await client.get(
        "/v1/estimate", params={**pcie, "allow_pcie_tensor_parallel": "false"}
    )
    assert nvlink_only.json()["fits"] is False and nvlink_only.json()["tensor_parallel"] == 1
    models = (await client.get("/v1/models")).json()
    assert models["count"] >= 22
    assert (await client.get("/v1/models/Llama-3.1-70B")).json()["id"] == "llama-3.1-70b"
    unknown = await client.get("/v1/models/llama-9")
    assert unknown.status_code == 404 and unknown.json()["suggestions"]
    assert (await client.post("/v1/estimate", json={**body, "gpu": "h1000"})).status_code == 404
    zero = await client.post("/v1/estimate", json={**body, "prompt_tokens": 0})
    assert zero.status_code == 422 and zero.json()["field"] == "prompt_tokens"
    long = await client.post("/v1/estimate", json={**body, "prompt_tokens": 5000})
    assert long.status_code == 422 and long.json()["field"] == "prompt_tokens"
    query = {**body, "model": "llama-2-70b", "gpu": "a100"}
    by_query = await client.get("/v1/estimate", params=query)
    assert by_query.status_code == 200 and by_query.json() == response.json()
    refused: tuple[tuple[dict[str, str | int], int, str], ...] = (
        ({"gpu": "h1000"}, 404, "gpu"),
        ({"prompt_tokens": 5000}, 422, "prompt_tokens"),
        ({"tensor_parallel": 80}, 422, "tensor_parallel"),
        ({"model": "llama-9"}, 404, "model"),
    )
    for changes, status, field in refused:
        bad = await client.get("/v1/estimate", params={**query, **changes})
        assert bad.status_code == status and bad.json()["field"] == field, bad.text


# ---- Redis outage ---------------------------------------------------------------------------


@pytest_asyncio.fixture(loop_scope="session")
async def redis_proxy(endpoints: Endpoints) -> AsyncIterator[tuple[ToggleProxy, str]]:
    if endpoints.redis_url is None:
        unavailable("Redis", endpoints.why_missing)
    assert endpoints.redis_url is not None
    proxy = ToggleProxy.for_url(endpoints.redis_url)
    await proxy.start()
    try:
        yield proxy, proxy.url(endpoints.redis_url)
    finally:
        await proxy.close()


async def test_redis_stopped_mid_stream_then_back(
    redis_proxy: tuple[ToggleProxy, str],
    sqlite_databases: SqliteDatabases,
    tmp_path: Path,
    redis_prefix: str,
) -> None:
    proxy, url = redis_proxy
    settings: Settings = replace(
        base_settings(await sqlite_databases.fresh(), tmp_path), redis_url=url, redis_timeout_ms=200
    )
    app = create_app(settings, cache_prefix=redis_prefix)
    async with AsyncTestClient(app) as client:
        assert (await post_plan(client)).headers["x-cache"] == "miss"
        assert (await post_plan(client)).headers["x-cache"] == "hit"
        await proxy.cut()
        outcomes = []
        for qps in (3, 4, 5):
            response = await post_plan(
                client, {**BODY, "workload": {**BODY["workload"], "qps": qps}}
            )
            assert response.status_code == 200, response.text
            outcomes.append(response.headers["x-cache"])
        assert set(outcomes) == {"bypass"}
        # A plan this process already holds is still answered from its in-process tier.
        assert (await post_plan(client)).headers["x-cache"] == "hit"
        ready = (await client.get("/readyz")).json()
        assert ready["status"] == "degraded" and ready["cache"]["ok"] is False
        await proxy.restore()
        await asyncio.sleep(1.2)  # the cache circuit breaker's cool-down
        again = [(await post_plan(client)).headers["x-cache"] for _ in range(3)]
        assert again[-1] == "hit", again
        assert (await client.get("/readyz")).json()["status"] == "ready"


@pytest.mark.parametrize("pricing", ["on_demand", "owned"])
async def test_the_echoed_request_posted_back_is_the_same_plan(
    client: Client, pricing: str
) -> None:
    body = {**BODY, "constraints": {**BODY["constraints"], "pricing": pricing}}
    first = await post_plan(client, body)
    assert first.status_code == 200, first.text
    echoed = first.json()["request"]
    assert (echoed["constraints"]["owned"] is None) == (pricing != "owned")
    again = await post_plan(client, echoed)
    assert again.status_code == 200, again.text
    assert again.json()["plan_id"] == first.json()["plan_id"]
    assert again.json()["request"] == echoed


MIX_BODY: dict[str, Any] = {
    "model": "llama-3.1-8b",
    "workload": {
        "qps": 12,
        "mix": [
            {"share": 0.8, "prompt_tokens": 256, "output_tokens": 64},
            {"share": 0.2, "prompt_tokens": 8000, "output_tokens": 256},
        ],
    },
    "slo": {"ttft_ms": 1000, "tpot_ms": 100},
    "constraints": {"gpus": ["l4", "h100"], "headroom": 0.2},
}


async def test_shared_routing_travels_by_body_query_and_echo(client: Client) -> None:
    """routing "shared" is taken by the body and the query string, shown in the echoed request
    (which posts back as the same plan) and answered with every line serving every shape;
    routing by shape (the default) is left out of the echo, so its plan ids do not move."""
    shared = await post_plan(client, {**MIX_BODY, "routing": "shared"})
    assert shared.status_code == 200, shared.text
    plan = shared.json()
    assert plan["request"]["routing"] == "shared"
    assert plan["routing"]["mode"] == "shared"
    assert plan["fleet"]
    for line in plan["fleet"]:
        assert {b["bucket"] for b in line["buckets"]} == {"b0", "b1"}
    again = await post_plan(client, plan["request"])
    assert again.json()["plan_id"] == plan["plan_id"]
    assert again.json()["request"] == plan["request"]
    default = (await post_plan(client, MIX_BODY)).json()
    assert "routing" not in default["request"]
    assert default["plan_id"] != plan["plan_id"]
    assert default["usd_per_hour"] <= plan["usd_per_hour"]
    explicit = (await post_plan(client, {**MIX_BODY, "routing": "by_shape"})).json()
    assert explicit["plan_id"] == default["plan_id"]
    by_query = (await client.get("/v1/plan", params={**QUERY, "routing": "shared"})).json()
    by_body = (
        await post_plan(
            client,
            {
                "model": "llama-3.1-8b",
                "workload": {"qps": 12, "prompt_tokens": 512, "output_tokens": 128},
                "constraints": {"gpus": ["l4", "l40s"]},
                "routing": "shared",
            },
        )
    ).json()
    assert by_query["plan_id"] == by_body["plan_id"]
    assert by_query["request"]["routing"] == "shared"


SPREAD_BODY: dict[str, Any] = {
    "model": "llama-3.1-8b",
    "workload": {"qps": 12, "prompt_tokens": 512, "output_tokens": 128},
    "constraints": {
        "gpus": ["h100", "l40s"],
        "min_replicas": 2,
        "spread": {"min_providers": 2, "min_regions": 2},
    },
}


async def test_min_replicas_and_spread_travel_by_body_query_and_echo(client: Client) -> None:
    """Every line hosts min_replicas, the fleet spans two providers and survives losing either
    (plan.redundancy says 100% or more is left); the query string and the echoed request give
    the same plan; a spread the provider list cannot give is infeasible, naming the setting."""
    response = await post_plan(client, SPREAD_BODY)
    assert response.status_code == 200, response.text
    plan = response.json()
    assert plan["request"]["constraints"]["spread"] == {"min_providers": 2, "min_regions": 2}
    assert all(line["replicas"] >= 2 for line in plan["fleet"])
    redundancy = plan["redundancy"]
    assert redundancy["providers"] >= 2 and redundancy["regions"] >= 2
    assert redundancy["without_worst_provider_percent"] >= 100
    assert redundancy["without_worst_region_percent"] >= 100
    again = await post_plan(client, plan["request"])
    assert again.json()["plan_id"] == plan["plan_id"]
    query: dict[str, Any] = {
        "model": "llama-3.1-8b",
        "qps": 12,
        "prompt_tokens": 512,
        "output_tokens": 128,
        "gpus": "h100,l40s",
        "min_replicas": 2,
        "min_providers": 2,
        "min_regions": 2,
    }
    by_query = (await client.get("/v1/plan", params=query)).json()
    assert by_query["plan_id"] == plan["plan_id"]
    plain = await post_plan(client, {**SPREAD_BODY, "constraints": {"gpus": ["h100", "l40s"]}})
    assert "spread" not in plain.json()["request"]["constraints"]
    one_provider = {
        **SPREAD_BODY,
        "constraints": {**SPREAD_BODY["constraints"], "providers": ["lambda"]},
    }
    infeasible = (await post_plan(client, one_provider)).json()
    assert infeasible["status"] == "infeasible"
    assert any("spread.min_providers is 2" in s for s in infeasible["explanation"])


async def test_an_owned_plan_names_the_documented_reason_a_gpu_has_no_purchase_price(
    client: Client,
) -> None:
    """The reasons of service/data/purchase_gaps.csv travel with the catalog (migration 0011):
    a GPU without a purchase price is rejected with its own reason, not as an SLO failure."""
    gaps = {g.gpu_id: g.reason for g in parse_purchase_gaps_csv(bundled_text("purchase_gaps.csv"))}
    constraints = {**BODY["constraints"], "pricing": "owned", "gpus": ["h200-nvl", "l4"]}
    mixed = await post_plan(client, {**BODY, "constraints": constraints})
    assert mixed.status_code == 200, mixed.text
    plan = mixed.json()
    assert plan["status"] == "optimal"
    assert {line["gpu"] for line in plan["fleet"]} == {"l4"}
    (rejected,) = plan["rejected"]
    assert rejected["gpu"] == "h200-nvl" and rejected["code"] == "no_price"
    assert rejected["reason"] == (
        f"no owned price for h200-nvl: {gaps['h200-nvl']}; give card_usd for it in "
        "constraints.owned"
    )
    alone = await post_plan(client, {**BODY, "constraints": {**constraints, "gpus": ["h200-nvl"]}})
    assert alone.status_code == 200, alone.text
    assert alone.json()["status"] == "no_price"
    assert [r["reason"] for r in alone.json()["rejected"]] == [rejected["reason"]]
    text = await client.get(
        "/v1/plan",
        params={
            "model": "llama-3.1-8b",
            "qps": 12,
            "prompt_tokens": 512,
            "output_tokens": 128,
            "ttft_ms": 2000,
            "tpot_ms": 50,
            "pricing": "owned",
            "gpus": "h200-nvl",
            "format": "text",
        },
    )
    assert text.status_code == 200, text.text
    assert "status: no_price" in text.text
    assert gaps["h200-nvl"] in " ".join(text.text.split())


async def test_a_plan_is_the_same_with_helper_processes_as_with_threads(
    sqlite_databases: SqliteDatabases, tmp_path: Path
) -> None:
    """The service's default: each solve hands its single-type and what-if solves to a helper
    process (the other tests run threads, to start faster); the answer is byte for byte the
    same."""
    bodies = []
    for processes in (True, False):
        settings = replace(
            base_settings(await sqlite_databases.fresh(), tmp_path / str(processes)),
            solver_helper_processes=processes,
        )
        async with AsyncTestClient(create_app(settings)) as client:
            response = await post_plan(client)
            assert response.status_code == 200, response.text
            bodies.append(response.content)
    assert bodies[0] == bodies[1]
