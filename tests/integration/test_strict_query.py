"""Strict query strings on every documented GET operation, on both backends: an unknown name is
a 400 naming it and the closest valid one, a repeated one a 400, a missing required one a 422,
each an RFC 9457 problem whose ``field`` is the parameter."""

from __future__ import annotations

from typing import Any

import pytest

from service.api.schemas.estimate import ESTIMATE_FIELDS
from service.api.schemas.plan_fields import PLAN_FIELDS
from tests.conftest import Client
from tests.support.plan_text import plan_table

pytestmark = pytest.mark.integration

PLAN = "/v1/plan?model=llama-3.1-8b&qps=2&prompt_tokens=256&output_tokens=64"
ESTIMATE = "/v1/estimate?model=llama-3.1-8b&gpu=l4&prompt_tokens=256&output_tokens=64"
H100_PRICES = "/v1/gpus/h100/prices"

# (url, status, field, suggestion or None, words the detail must hold)
ROWS: dict[str, tuple[str, int, str, str | None, tuple[str, ...]]] = {
    "plan typo": (PLAN + "&tpot=50", 400, "tpot", "tpot_ms", ("did you mean tpot_ms",)),
    "plan body path": (PLAN + "&slo.ttft_ms=900", 400, "slo.ttft_ms", "ttft_ms", ()),
    "plan other case": (PLAN + "&QPS=3", 400, "QPS", "qps", ()),
    "plan dashes": (
        PLAN + "&budget-usd-per-hour=9",
        400,
        "budget-usd-per-hour",
        "budget_usd_per_hour",
        (),
    ),
    "plan body only": (PLAN + "&regions=us-east-1", 400, "regions", None, ("constraints.regions",)),
    "plan nothing close": (PLAN + "&zzz=1", 400, "zzz", None, ("takes model, qps",)),
    "plan repeated": (PLAN + "&qps=3", 400, "qps", None, ("2 times",)),
    "plan bare": ("/v1/plan", 422, "model", None, ("model, qps, prompt_tokens, output_tokens",)),
    "plan missing one": (
        "/v1/plan?model=llama-3.1-8b&qps=2&prompt_tokens=256",
        422,
        "output_tokens",
        None,
        ("output_tokens",),
    ),
    "estimate cli alias": (ESTIMATE + "&tp=2", 400, "tp", "tensor_parallel", ()),
    "estimate typo": (ESTIMATE + "&precison=fp8", 400, "precison", "precision", ()),
    "estimate repeated": (ESTIMATE + "&gpu=h100", 400, "gpu", None, ()),
    "estimate bare": ("/v1/estimate", 422, "model", None, ("gpu",)),
    "gpus typo": ("/v1/gpus?vendr=NVIDIA", 400, "vendr", "vendor", ()),
    "gpus repeated": ("/v1/gpus?vendor=NVIDIA&vendor=AMD", 400, "vendor", None, ()),
    "gpu unknown": ("/v1/gpus/h100?format=text", 400, "format", None, ("no query parameters",)),
    "prices typo": (H100_PRICES + "?sinc=2026-01-01T00:00:00Z", 400, "sinc", "since", ()),
    "prices repeated": (H100_PRICES + "?limit=1&limit=2", 400, "limit", None, ()),
    "models unknown": ("/v1/models?page=2", 400, "page", None, ("no query parameters",)),
    "model unknown": ("/v1/models/llama-3.1-8b?verbose=1", 400, "verbose", None, ()),
    "stored plan typo": ("/v1/plans/" + "0" * 32 + "?fromat=text", 400, "fromat", "format", ()),
    "catalog unknown": ("/v1/catalog?x=1", 400, "x", None, ()),
    "healthz unknown": ("/healthz?probe=1", 400, "probe", None, ()),
    "readyz unknown": ("/readyz?probe=1", 400, "probe", None, ()),
    "metrics unknown": ("/metrics?name=x", 400, "name", None, ()),
}


@pytest.mark.parametrize("case", list(ROWS), ids=list(ROWS))
async def test_query_strings_are_strict(client: Client, case: str) -> None:
    url, status, field, suggestion, words = ROWS[case]
    response = await client.get(url)
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    problem = response.json()
    assert problem["status"] == status
    assert problem["field"] == field
    assert problem["instance"] == url.split("?")[0]
    assert problem.get("suggestions") == ([suggestion] if suggestion else None)
    if suggestion:
        assert f"did you mean {suggestion}?" in problem["detail"]
    for word in words:
        assert word in problem["detail"], problem["detail"]
    assert problem["errors"][0]["field"] == field


async def test_every_unknown_and_missing_name_is_listed(client: Client) -> None:
    unknown = await client.get(PLAN + "&tpot=50&ttft=900")
    assert unknown.status_code == 400
    assert [e["field"] for e in unknown.json()["errors"]] == ["tpot", "ttft"]
    assert "(and 1 more)" in unknown.json()["detail"]
    missing = await client.get("/v1/plan")
    required = [f.name for f in PLAN_FIELDS if f.required]
    assert [e["field"] for e in missing.json()["errors"]] == required


async def test_an_unknown_name_outranks_a_missing_one(client: Client) -> None:
    """``?tpot=50`` alone: the typo is named first, since fixing it may be all that is needed."""
    response = await client.get("/v1/plan?tpot=50")
    assert response.status_code == 400
    assert response.json()["field"] == "tpot"


@pytest.mark.parametrize(
    ("url", "fields"),
    [(PLAN, PLAN_FIELDS), (ESTIMATE, ESTIMATE_FIELDS)],
    ids=["plan", "estimate"],
)
async def test_the_tables_decide_what_the_query_string_takes(
    client: Client, url: str, fields: Any
) -> None:
    """Every field the table offers the query string passes the name check (a value it does
    not like is then a 422 about the value, not a 400 about the name); every field it keeps
    for the body is a 400 pointing there."""
    given = {pair.split("=")[0] for pair in url.split("?")[1].split("&")}
    for f in fields:
        if f.name in given:
            continue
        response = await client.get(f"{url}&{f.name}=-1")
        if f.query:
            assert response.status_code != 400 or response.json()["field"] != f.name, f.name
        else:
            assert response.status_code == 400, f.name
            assert f.path in response.json()["detail"], f.name


async def test_valid_query_strings_still_answer(client: Client) -> None:
    for url in (
        PLAN + "&tpot_ms=120&format=text",
        ESTIMATE + "&tensor_parallel=1",
        "/v1/gpus?vendor=NVIDIA&has_nvlink=true",
        H100_PRICES + "?limit=2",
        "/v1/models",
        "/healthz",
    ):
        response = await client.get(url)
        assert response.status_code == 200, (url, response.text)


async def test_write_operations_keep_their_query_strings(client: Client) -> None:
    """The check is for GET operations; a POST answers as before."""
    body = {
        "model": "llama-3.1-8b",
        "workload": {"qps": 2, "prompt_tokens": 256, "output_tokens": 64},
    }
    response = await client.post("/v1/plans?format=text", json=body)
    assert response.status_code == 200, response.text
    assert plan_table(response.text).startswith("gpuplan plan")
