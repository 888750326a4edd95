"""Adversarial inputs as one table, on both backends: each is a 4xx problem naming where the
fault is (never a 5xx), and none of them looks like a database outage afterwards.

The rows are the findings of an adversarial pass over the running service (JSON nested 1,000
deep, numbers that overflow, date-times past the ends of Python's range, strings too long for
their column or holding NUL, duplicate keys, wrong content types, a load too small to plan)
and their neighbours on other routes.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import pytest

from service.api.json_body import MAX_JSON_DEPTH
from tests.conftest import Client, admin
from tests.support.bodies import LLAMA_8B_HF_CONFIG, MINIMAL_GPU_SPEC

pytestmark = pytest.mark.integration

PLAN: dict[str, Any] = {
    "model": "llama-3.1-8b",
    "workload": {"qps": 6, "prompt_tokens": 256, "output_tokens": 64},
    "slo": {"tpot_ms": 120},
}
ESTIMATE: dict[str, Any] = {
    "model": "llama-3.1-8b",
    "gpu": "l4",
    "prompt_tokens": 256,
    "output_tokens": 64,
}
OBSERVATION: dict[str, Any] = {
    "gpu": "l40s",
    "provider": "racecloud",
    "region": "r1",
    "kind": "on_demand",
    "usd": 0.5,
    "instance_type": "rc.1x",
    "gpus_per_instance": 1,
    "observed_at": "2026-08-01T00:00:00Z",
}
SPEC = MINIMAL_GPU_SPEC
HF = LLAMA_8B_HF_CONFIG
FAR_FUTURE = "9999-12-31T23:59:59-23:59"  # past datetime.max once moved to UTC
JSON = {"Content-Type": "application/json"}
DEEP = "[" * 1_000 + "]" * 1_000


@dataclass(frozen=True)
class Bad:
    """One adversarial request and the answer it must get."""

    method: str
    path: str
    status: int
    named: str | None
    json: Any = None
    content: str | bytes | None = None
    params: dict[str, str] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    write: bool = False


def plan_with(**changes: Any) -> dict[str, Any]:
    return {**PLAN, **changes}


def workload(**changes: Any) -> dict[str, Any]:
    return plan_with(workload={**PLAN["workload"], **changes})


def raw_plan(replace: str, by: str) -> str:
    text = json.dumps(PLAN)
    assert text.count(replace) == 1
    return text.replace(replace, by)


TABLE: dict[str, Bad] = {
    # JSON shape: depth, duplicates, non-finite numbers, media type, size
    "plan nested 1000 deep": Bad("POST", "/v1/plans", 400, "body", content=DEEP),
    "estimate nested 1000 deep": Bad("POST", "/v1/estimate", 400, "body", content=DEEP),
    "ingest nested 1000 deep": Bad("POST", "/v1/prices", 400, "body", content=DEEP, write=True),
    "put gpu nested 1000 deep": Bad("PUT", "/v1/gpus/x1", 400, "body", content=DEEP, write=True),
    "hf_config nested past the limit": Bad(
        "POST",
        "/v1/plans",
        400,
        "body",
        content=json.dumps(plan_with(model={"hf_config": {**HF, "x": 1}})).replace(
            '"x": 1', '"x": ' + "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH
        ),
    ),
    "duplicate model key": Bad(
        "POST", "/v1/plans", 400, "model", content=raw_plan('"model":', '"model": "x", "model":')
    ),
    "duplicate nested key": Bad(
        "POST", "/v1/plans", 400, "workload.qps", content=raw_plan('"qps": 6', '"qps": 6, "qps": 7')
    ),
    "NaN qps": Bad(
        "POST", "/v1/plans", 400, "workload.qps", content=raw_plan('"qps": 6', '"qps": NaN')
    ),
    "Infinity qps": Bad(
        "POST", "/v1/plans", 400, "workload.qps", content=raw_plan('"qps": 6', '"qps": Infinity')
    ),
    "1e309 qps": Bad(
        "POST", "/v1/plans", 400, "workload.qps", content=raw_plan('"qps": 6', '"qps": 1e309')
    ),
    "-1e309 usd": Bad(
        "POST",
        "/v1/prices",
        400,
        "observations[0].usd",
        content=json.dumps({"observations": [OBSERVATION]}).replace("0.5", "-1e309"),
        write=True,
    ),
    "text/plain plan": Bad(
        "POST",
        "/v1/plans",
        415,
        "Content-Type",
        content=json.dumps(PLAN),
        headers={"Content-Type": "text/plain"},
    ),
    "form-encoded estimate": Bad(
        "POST",
        "/v1/estimate",
        415,
        "Content-Type",
        content="model=x",
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    ),
    "body over the limit": Bad(
        "POST", "/v1/plans", 413, None, content='{"model": "' + "a" * 300_000 + '"}'
    ),
    # numbers
    "qps 5e-324": Bad("POST", "/v1/plans", 422, "workload.qps", json=workload(qps=5e-324)),
    "qps 5e-324 by query": Bad(
        "GET",
        "/v1/plan",
        422,
        "qps",
        params={
            "model": "llama-3.1-8b",
            "qps": "5e-324",
            "prompt_tokens": "9",
            "output_tokens": "9",
        },
    ),
    "estimate qps 5e-324": Bad(
        "POST", "/v1/estimate", 422, "qps", json={**ESTIMATE, "qps": 5e-324}
    ),
    "a mix shape carrying 1e-12 req/s": Bad(
        "POST",
        "/v1/plans",
        422,
        "workload.mix",
        json=plan_with(
            workload={
                "qps": 1,
                "mix": [
                    {"share": 1 - 1e-12, "prompt_tokens": 256, "output_tokens": 64},
                    {"share": 1e-12, "prompt_tokens": 1024, "output_tokens": 64},
                ],
            }
        ),
    ),
    "hf vocab_size 1e308": Bad(
        "POST",
        "/v1/plans",
        422,
        "model.hf_config.vocab_size",
        json=plan_with(model={"hf_config": {**HF, "vocab_size": 1e308}}),
    ),
    "hf vocab_size 10**30": Bad(
        "POST",
        "/v1/plans",
        422,
        "model.hf_config.vocab_size",
        json=plan_with(model={"hf_config": {**HF, "vocab_size": 10**30}}),
    ),
    "hf intermediate_size past its bound": Bad(
        "POST",
        "/v1/estimate",
        422,
        "model.hf_config.intermediate_size",
        json={**ESTIMATE, "model": {"hf_config": {**HF, "intermediate_size": 10**9}}},
    ),
    "hf unread number 10**30": Bad(
        "POST",
        "/v1/plans",
        422,
        "model.hf_config.rope_scaling.factor",
        json=plan_with(model={"hf_config": {**HF, "rope_scaling": {"factor": 10**30}}}),
    ),
    # date-times
    "price history since far future": Bad(
        "GET", "/v1/gpus/h100-sxm/prices", 422, "since", params={"since": FAR_FUTURE}
    ),
    "price history until before 1970": Bad(
        "GET",
        "/v1/gpus/h100-sxm/prices",
        422,
        "until",
        params={"until": "0001-01-01T00:00:00+23:59"},
    ),
    "ingest observed_at far future": Bad(
        "POST",
        "/v1/prices",
        422,
        "observations[0].observed_at",
        json={"observations": [{**OBSERVATION, "observed_at": "9999-12-31T23:59:59-05:00"}]},
        write=True,
    ),
    "plan as_of far future": Bad(
        "POST", "/v1/plans", 422, "as_of", json=plan_with(as_of="9999-12-31T23:59:59-05:00")
    ),
    "plan as_of 1900": Bad(
        "POST", "/v1/plans", 422, "as_of", json=plan_with(as_of="1900-01-01T00:00:00Z")
    ),
    "forged cursor": Bad(
        "GET",
        "/v1/gpus/h100-sxm/prices",
        422,
        "cursor",
        params={"cursor": "WyI5OTk5LTEyLTMxVDIzOjU5OjU5LTIzOjU5IiwgNV0"},
    ),
    # strings: lengths that fit the columns, no NUL
    "vendor 65 characters": Bad(
        "PUT", "/v1/gpus/x1", 422, "vendor", json={**SPEC, "vendor": "v" * 65}, write=True
    ),
    "region 65 characters": Bad(
        "POST",
        "/v1/prices",
        422,
        "observations[0].region",
        json={"observations": [{**OBSERVATION, "region": "r" * 65}]},
        write=True,
    ),
    "NUL in a GPU name": Bad(
        "PUT", "/v1/gpus/x1", 422, "name", json={**SPEC, "name": "a\x00b"}, write=True
    ),
    "NUL in an alias": Bad(
        "PUT", "/v1/gpus/x1", 422, "aliases[0]", json={**SPEC, "aliases": ["a\x00"]}, write=True
    ),
    "NUL in a price source": Bad(
        "POST",
        "/v1/prices",
        422,
        "observations[0].source",
        json={"observations": [{**OBSERVATION, "source": "x\x00"}]},
        write=True,
    ),
    "NUL in a model name": Bad(
        "POST", "/v1/plans", 422, "model", json=plan_with(model="llama\x00")
    ),
    "NUL in a query parameter": Bad(
        "GET", "/v1/gpus/h100-sxm/prices", 422, "provider", params={"provider": "aws\x00"}
    ),
    "NUL in a filter": Bad("GET", "/v1/gpus", 422, "vendor", params={"vendor": "nv\x00"}),
    "NUL in a path parameter": Bad("GET", "/v1/gpus/h100%00", 422, "gpu_id"),
}


async def send(client: Client, bad: Bad) -> Any:
    headers = {**(admin() if bad.write else {}), **bad.headers}
    if bad.content is not None:
        headers = {**JSON, **headers}
    return await client.request(
        bad.method,
        bad.path,
        json=bad.json,
        content=bad.content,
        params=bad.params or None,
        headers=headers,
    )


async def catalog_stale(client: Client) -> float:
    metrics = (await client.get("/metrics")).text
    found = re.search(r"^gpuplan_catalog_stale (\S+)$", metrics, re.MULTILINE)
    assert found is not None
    return float(found.group(1))


@pytest.mark.parametrize("case", list(TABLE), ids=list(TABLE))
async def test_adversarial_input_is_a_4xx_naming_the_field(client: Client, case: str) -> None:
    bad = TABLE[case]
    response = await send(client, bad)
    assert response.status_code == bad.status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    problem = response.json()
    assert problem["status"] == bad.status and problem["detail"]
    assert problem.get("field") == bad.named, problem
    assert "Traceback" not in response.text and "SELECT" not in response.text
    ready = (await client.get("/readyz")).json()
    assert ready["status"] == "ready" and ready["database"]["ok"], ready
    assert await catalog_stale(client) == 0


@pytest.mark.parametrize("edge_check", ["on", "off"])
async def test_a_flood_of_bad_moments_never_looks_like_an_outage(
    client: Client, edge_check: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """50 plans with an impossible ``as_of`` and 50 ingests the database could not store
    (5 a second in the original finding held the staleness alert at 1): every answer is a 422
    and the database stays up the whole time, by the metric and by readiness. With the edge's
    window check taken out (``off``), the moments reach the database query: the store's
    refusal is still a 422 and still no outage."""
    if edge_check == "off":
        monkeypatch.setattr("service.usecases.planning.to_utc", lambda value, _field: value)
    samples: list[float] = []
    for i in range(50):
        moment = "9999-12-31T23:59:59-05:00" if i % 2 else "0001-01-01T00:00:00+05:00"
        plan = await client.post("/v1/plans", json=plan_with(as_of=moment))
        ingest = await client.post(
            "/v1/prices",
            json={"observations": [{**OBSERVATION, "source": f"bad \x00 {i}"}]},
            headers=admin(),
        )
        assert (plan.status_code, ingest.status_code) == (422, 422)
        samples.append(await catalog_stale(client))
    assert samples == [0.0] * 50
    ready = await client.get("/readyz")
    assert ready.status_code == 200 and ready.json()["status"] == "ready"
    good = await client.post("/v1/plans", json=plan_with(as_of="2026-01-01T00:00:00Z"))
    assert good.status_code == 200 and "x-catalog-stale" not in good.headers
