"""The catalog HTTP API end to end, on embedded SQLite and on real Postgres + Redis."""

from __future__ import annotations

import csv
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import OTHER_KEY, Client, admin
from tests.support.seed import newest_seeded_observation, seeded_price_count

pytestmark = pytest.mark.integration

DATA = Path(__file__).parents[2] / "service" / "data"
ALL_IDS = {
    *("h100-sxm", "h100-pcie", "h100-nvl", "h200-sxm", "h200-nvl", "b200", "gb200"),
    *("a100-sxm-80gb", "a100-sxm-40gb", "a100-pcie-80gb", "a100-pcie-40gb"),
    *("rtx-a6000", "rtx-a4000", "rtx-6000-ada", "rtx-4000-ada", "rtx-pro-6000-blackwell"),
    *("quadro-rtx-4000", "quadro-p6000", "l40s", "l40", "l4", "a10g", "a10", "t4"),
    *("v100-sxm2-32gb", "v100-pcie-16gb", "mi300x", "mi325x", "gaudi3"),
    *("a40", "rtx-3090", "rtx-4090", "rtx-a4500", "rtx-a5000", "quadro-rtx-6000", "gh200"),
    *("p100-pcie-16gb", "p4"),
}


def observation(**overrides: Any) -> dict[str, Any]:
    body = {
        "gpu": "h100-sxm",
        "provider": "examplecloud",
        "region": "eu-west-1",
        "kind": "on_demand",
        "usd": 2.5,
        "instance_type": "ex.8xh100",
        "gpus_per_instance": 8,
        "observed_at": "2026-09-01T00:00:00Z",
        "source": "test",
    }
    body.update(overrides)
    return body


async def revision(client: Client) -> int:
    response = await client.get("/v1/catalog")
    assert response.status_code == 200
    return int(response.json()["catalog_revision"])


async def history(client: Client, gpu: str = "h100-sxm", **params: Any) -> list[dict[str, Any]]:
    response = await client.get(f"/v1/gpus/{gpu}/prices", params={"limit": 1000, **params})
    assert response.status_code == 200, response.text
    items: list[dict[str, Any]] = response.json()["items"]
    return items


# ---- GPUs ----------------------------------------------------------------------------------


async def test_lists_every_gpu_with_datasheet_specs(client: Client) -> None:
    response = await client.get("/v1/gpus")
    assert response.status_code == 200
    body = response.json()
    gpus = {g["id"]: g for g in body["gpus"]}
    assert set(gpus) == ALL_IDS
    assert body["count"] == len(ALL_IDS)
    assert response.headers["x-catalog-revision"] == str(body["catalog_revision"])
    # Spot checks against the vendor datasheets (dense tensor figures).
    h100 = gpus["h100-sxm"]
    assert (h100["memory_gb"], h100["memory_bandwidth_gbps"]) == (80.0, 3350.0)
    assert (h100["fp16_tflops"], h100["fp8_tflops"], h100["fp4_tflops"]) == (989.5, 1979.0, None)
    assert h100["has_nvlink"] is True and h100["nvlink_domain"] == 8
    assert gpus["l40s"]["fp16_tflops"] == 362.05 and gpus["l40s"]["has_nvlink"] is False
    assert gpus["rtx-a6000"]["memory_bandwidth_gbps"] == 768.0
    assert gpus["a100-sxm-80gb"]["memory_bandwidth_gbps"] == 2039.0
    assert gpus["mi300x"]["memory_gb"] == 192.0
    assert gpus["b200"]["fp4_tflops"] is not None
    assert gpus["t4"]["fp8_tflops"] is None


async def test_every_priced_gpu_lists_a_price(client: Client) -> None:
    with (DATA / "prices.csv").open() as f:
        priced = {row["gpu_id"] for row in csv.DictReader(f) if row["kind"] == "on_demand"}
    gpus = {g["id"]: g for g in (await client.get("/v1/gpus")).json()["gpus"]}
    for gpu_id in priced:
        assert gpus[gpu_id]["on_demand_prices"], gpu_id
    aws = {p["provider"]: p for p in gpus["h100-sxm"]["on_demand_prices"]}["aws"]
    assert aws["usd_per_gpu_hour"] > 0 and aws["instance_type"]


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"vendor": "amd"}, {"mi300x", "mi325x"}),
        ({"min_memory_gb": 150}, {"b200", "gb200", "mi300x", "mi325x"}),
        (
            {"has_nvlink": "true", "form_factor": "pcie"},
            {
                *("h100-pcie", "h100-nvl", "h200-nvl", "a100-pcie-80gb", "a100-pcie-40gb"),
                *("rtx-a6000", "rtx-a5000", "rtx-a4500", "a40", "rtx-3090", "quadro-rtx-6000"),
            },
        ),
    ],
)
async def test_filters(client: Client, params: dict[str, Any], expected: set[str]) -> None:
    response = await client.get("/v1/gpus", params=params)
    assert response.status_code == 200
    assert {g["id"] for g in response.json()["gpus"]} == expected


@pytest.mark.parametrize(
    ("name", "gpu_id"),
    [
        ("H100", "h100-sxm"),
        ("a100", "a100-sxm-80gb"),
        ("A6000", "rtx-a6000"),
        ("A4000", "rtx-a4000"),
        ("V100", "v100-sxm2-32gb"),
        ("P6000", "quadro-p6000"),
        ("RTX 4000", "quadro-rtx-4000"),
        ("l40s", "l40s"),
        ("L4", "l4"),
        ("h100-sxm", "h100-sxm"),
    ],
)
async def test_get_by_id_or_alias(client: Client, name: str, gpu_id: str) -> None:
    response = await client.get(f"/v1/gpus/{name}")
    assert response.status_code == 200
    assert response.json()["id"] == gpu_id


async def test_unknown_gpu_is_404_with_closest_ids(client: Client) -> None:
    response = await client.get("/v1/gpus/h100-sxmm")
    assert response.status_code == 404
    assert response.headers["content-type"].startswith("application/problem+json")
    problem = response.json()
    assert problem["status"] == 404 and problem["field"] == "id"
    assert problem["suggestions"][0] == "h100-sxm"
    assert "h100-sxm" in problem["detail"]


async def test_sql_metacharacters_are_just_data(client: Client) -> None:
    response = await client.get("/v1/gpus/x'; DROP TABLE gpus; --")
    assert response.status_code == 404
    response = await client.get("/v1/gpus", params={"vendor": "' OR 1=1 --"})
    assert response.status_code == 200 and response.json()["count"] == 0
    response = await client.get("/v1/gpus/h100-sxm/prices", params={"provider": "aws' OR '1'='1"})
    assert response.status_code == 200 and response.json()["items"] == []
    assert len((await client.get("/v1/gpus")).json()["gpus"]) == len(ALL_IDS)


# ---- PUT /v1/gpus/{id} ------------------------------------------------------------------------


def spec(**overrides: Any) -> dict[str, Any]:
    body = {
        "vendor": "NVIDIA",
        "name": "Example X1",
        "architecture": "Hopper (GH100)",
        "launch_year": 2026,
        "memory_gb": 120,
        "memory_type": "HBM3e",
        "memory_bandwidth_gbps": 4000,
        "fp16_tflops": 900,
        "fp8_tflops": 1800,
        "interconnect": "NVLink",
        "interconnect_bandwidth_gbps": 900,
        "nvlink_domain": 8,
        "pcie_gen": 5,
        "form_factor": "SXM",
        "aliases": ["X1", "Example X1"],
        "sources": ["test fixture"],
    }
    body.update(overrides)
    return body


async def test_put_gpu_requires_an_admin_key_and_changes_nothing_without(client: Client) -> None:
    before = await revision(client)
    missing = await client.put("/v1/gpus/x1", json=spec())
    assert missing.status_code == 401
    assert missing.headers["www-authenticate"].lower().startswith("bearer")
    wrong = await client.put(
        "/v1/gpus/x1", json=spec(), headers={"Authorization": f"Bearer {OTHER_KEY}"}
    )
    assert wrong.status_code == 403
    assert OTHER_KEY not in wrong.text
    basic = await client.put("/v1/gpus/x1", json=spec(), headers={"Authorization": "Basic abc"})
    assert basic.status_code == 401
    assert await revision(client) == before
    assert (await client.get("/v1/gpus/x1")).status_code == 404


async def test_put_gpu_creates_then_replaces_and_bumps_revision(client: Client) -> None:
    before = await revision(client)
    created = await client.put("/v1/gpus/x1", json=spec(), headers=admin())
    assert created.status_code == 201, created.text
    assert created.json()["created"] is True
    assert created.json()["catalog_revision"] == before + 1
    assert (await client.get("/v1/gpus/X1")).json()["memory_gb"] == 120.0

    replaced = await client.put("/v1/gpus/x1", json=spec(memory_gb=144), headers=admin())
    assert replaced.status_code == 200
    assert replaced.json()["created"] is False
    assert replaced.json()["catalog_revision"] == before + 2
    assert (await client.get("/v1/gpus/x1")).json()["memory_gb"] == 144.0
    assert len((await client.get("/v1/gpus")).json()["gpus"]) == len(ALL_IDS) + 1


async def test_put_gpu_refuses_an_alias_owned_by_another_gpu(client: Client) -> None:
    before = await revision(client)
    response = await client.put("/v1/gpus/x1", json=spec(aliases=["h100"]), headers=admin())
    assert response.status_code == 409
    assert response.json()["field"] == "aliases[0]"
    assert await revision(client) == before


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (spec(memory_gb=-1), "memory_gb"),
        (spec(memory_bandwidth_gbps="fast"), "memory_bandwidth_gbps"),
        (spec(colour="green"), "colour"),
        ({k: v for k, v in spec().items() if k != "vendor"}, "vendor"),
        (spec(vendor="V" * 65), "vendor"),  # longer than its column: refused before the database
    ],
)
async def test_put_gpu_validation_names_the_field(
    client: Client, body: dict[str, Any], field: str
) -> None:
    response = await client.put("/v1/gpus/x1", json=body, headers=admin())
    assert response.status_code == 422, response.text
    assert field in response.json()["detail"]


async def test_put_gpu_rejects_a_bad_id(client: Client) -> None:
    response = await client.put("/v1/gpus/Bad%20Id", json=spec(), headers=admin())
    assert 400 <= response.status_code < 500
    assert "gpu_id" in response.text


# ---- prices ---------------------------------------------------------------------------------


async def test_ingest_bumps_revision_and_the_point_shows_in_history(client: Client) -> None:
    before = await revision(client)
    response = await client.post(
        "/v1/prices", json={"observations": [observation()]}, headers=admin()
    )
    assert response.status_code == 200, response.text
    assert response.json() == {"inserted": 1, "already_present": 0, "catalog_revision": before + 1}
    assert await revision(client) == before + 1
    newest = (await history(client))[0]
    assert newest["provider"] == "examplecloud" and newest["usd"] == 2.5
    assert newest["observed_at"] == "2026-09-01T00:00:00Z"
    assert newest["gpus_per_instance"] == 8 and newest["unit"] == "gpu_hour"
    listed = (await client.get("/v1/gpus/h100-sxm")).json()["on_demand_prices"]
    assert "examplecloud" in {p["provider"] for p in listed}


async def test_reingest_is_idempotent(client: Client) -> None:
    batch = {"observations": [observation(), observation(observed_at="2026-09-02T00:00:00Z")]}
    first = await client.post("/v1/prices", json=batch, headers=admin())
    second = await client.post("/v1/prices", json=batch, headers=admin())
    assert first.json()["inserted"] == 2
    assert second.json() == {
        "inserted": 0,
        "already_present": 2,
        "catalog_revision": first.json()["catalog_revision"],
    }
    assert len(await history(client, provider="examplecloud")) == 2


async def test_ingest_aliases_resolve(client: Client) -> None:
    response = await client.post(
        "/v1/prices", json={"observations": [observation(gpu="H100")]}, headers=admin()
    )
    assert response.json()["inserted"] == 1
    assert (await history(client, provider="examplecloud"))[0]["gpu"] == "h100-sxm"


@pytest.mark.parametrize(
    ("bad", "status", "field"),
    [
        (observation(gpu="h100-sxmm"), 404, "observations[1].gpu"),
        (observation(usd=-3), 422, "observations[1].usd"),
        (observation(kind="hourly"), 422, "observations[1].kind"),
        (observation(observed_at="2026-09-01T00:00:00"), 422, "observations[1].observed_at"),
        (observation(extra=1), 422, "observations[1].extra"),
    ],
)
async def test_one_bad_row_writes_nothing(
    client: Client, bad: dict[str, Any], status: int, field: str
) -> None:
    before = await revision(client)
    count = len(await history(client))
    batch = {"observations": [observation(observed_at="2026-10-01T00:00:00Z"), bad]}
    response = await client.post("/v1/prices", json=batch, headers=admin())
    assert response.status_code == status, response.text
    assert response.json()["field"] == field
    assert await revision(client) == before
    assert len(await history(client)) == count


async def test_ingest_without_a_valid_key_changes_nothing(client: Client) -> None:
    before = await revision(client)
    batch = {"observations": [observation()]}
    assert (await client.post("/v1/prices", json=batch)).status_code == 401
    wrong = await client.post(
        "/v1/prices", json=batch, headers={"Authorization": f"Bearer {OTHER_KEY}"}
    )
    assert wrong.status_code == 403
    assert await revision(client) == before
    assert await history(client, provider="examplecloud") == []


async def test_ingest_limits(client: Client) -> None:
    too_many = {
        "observations": [
            observation(observed_at=f"2026-01-01T00:00:{i % 60:02d}Z") for i in range(10_001)
        ]
    }
    response = await client.post("/v1/prices", json=too_many, headers=admin())
    assert response.status_code == 422
    assert response.json()["field"] == "observations"
    empty = await client.post("/v1/prices", json={"observations": []}, headers=admin())
    assert empty.status_code == 422


async def test_ingest_accepts_ten_thousand_rows(client: Client) -> None:
    start = datetime(2025, 1, 1, tzinfo=UTC)
    rows = [
        observation(observed_at=(start + timedelta(minutes=i)).strftime("%Y-%m-%dT%H:%M:%SZ"))
        for i in range(10_000)
    ]
    assert len({r["observed_at"] for r in rows}) == 10_000
    response = await client.post("/v1/prices", json={"observations": rows}, headers=admin())
    assert response.status_code == 200, response.text[:300]
    assert response.json()["inserted"] == 10_000


async def test_oversized_body_is_413(client: Client) -> None:
    huge = b'{"vendor": "' + b"x" * (600 * 1024) + b'"}'
    response = await client.put(
        "/v1/gpus/x1", content=huge, headers={**admin(), "content-type": "application/json"}
    )
    assert response.status_code == 413
    assert response.headers["content-type"].startswith("application/problem+json")


async def test_history_is_newest_first_filtered_and_paginated(client: Client) -> None:
    rows = [
        observation(observed_at=f"2026-08-{day:02d}T00:00:00Z", usd=2 + day / 100)
        for day in range(1, 8)
    ]
    rows.append(observation(provider="othercloud", observed_at="2026-08-15T00:00:00Z"))
    await client.post("/v1/prices", json={"observations": rows}, headers=admin())

    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        params: dict[str, Any] = {"provider": "examplecloud", "limit": 3}
        if cursor:
            params["cursor"] = cursor
        page = (await client.get("/v1/gpus/h100-sxm/prices", params=params)).json()
        seen += [item["observed_at"] for item in page["items"]]
        pages += 1
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert pages == 3
    assert seen == sorted(seen, reverse=True) and len(seen) == len(set(seen)) == 7

    window = await history(
        client, provider="examplecloud", since="2026-08-03T00:00:00Z", until="2026-08-05T00:00:00Z"
    )
    assert [i["observed_at"][:10] for i in window] == ["2026-08-05", "2026-08-04", "2026-08-03"]
    spot = await history(client, kind="spot")
    assert spot and all(i["kind"] == "spot" for i in spot)


async def test_bad_cursor_and_naive_since_are_422(client: Client) -> None:
    bad = await client.get("/v1/gpus/h100-sxm/prices", params={"cursor": "not-a-cursor"})
    assert bad.status_code == 422 and bad.json()["field"] == "cursor"
    naive = await client.get("/v1/gpus/h100-sxm/prices", params={"since": "2026-08-01T00:00:00"})
    assert naive.status_code == 422 and naive.json()["field"] == "since"
    limit = await client.get("/v1/gpus/h100-sxm/prices", params={"limit": 0})
    assert limit.status_code == 422 and limit.json()["field"] == "limit"
    # A bare number is not read as a Unix timestamp: the parameters are ISO 8601 date-times.
    for name, raw in (("until", "0"), ("since", "1700000000"), ("until", "1.5")):
        number = await client.get("/v1/gpus/h100-sxm/prices", params={name: raw})
        assert number.status_code == 422 and number.json()["field"] == name


async def test_catalog_summary(client: Client) -> None:
    body = (await client.get("/v1/catalog")).json()
    assert body["gpus"] == len(ALL_IDS)
    assert body["price_points"] == seeded_price_count()
    newest = newest_seeded_observation()
    assert body["newest_observed_at"] == newest.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert body["catalog_revision"] >= 1


# ---- probes -----------------------------------------------------------------------------------


async def test_health_and_readiness(client: Client) -> None:
    assert (await client.get("/healthz")).json() == {"status": "ok"}
    ready = await client.get("/readyz")
    assert ready.status_code == 200
    body = ready.json()
    assert body["status"] == "ready"
    assert body["database"]["ok"] is True and body["cache"]["ok"] is True
    assert body["catalog"]["loaded_revision"] >= 1


async def test_request_id_is_echoed_or_generated(client: Client) -> None:
    echoed = await client.get("/healthz", headers={"X-Request-ID": "abc-123"})
    assert echoed.headers["x-request-id"] == "abc-123"
    generated = await client.get("/v1/gpus/nope")
    assert len(generated.headers["x-request-id"]) == 32
    assert generated.json()["request_id"] == generated.headers["x-request-id"]
