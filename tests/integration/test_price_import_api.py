"""``POST /v1/prices/import`` end to end, on embedded SQLite and on real Postgres + Redis, with
the bundled SkyPilot files (service/data/skypilot/) as bodies."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import OTHER_KEY, Client, admin

pytestmark = pytest.mark.integration

SKYPILOT = Path(__file__).parents[2] / "service" / "data" / "skypilot"
CSV = {"Content-Type": "text/csv"}


def body(cloud: str) -> bytes:
    return (SKYPILOT / cloud / "vms.csv").read_bytes()


async def post(
    client: Client, content: bytes, headers: dict[str, str] | None = None, /, **params: str
) -> Any:
    return await client.post(
        "/v1/prices/import",
        params=params,
        content=content,
        headers={**admin(), **CSV, **(headers or {})},
    )


async def revision(client: Client) -> int:
    return int((await client.get("/v1/catalog")).json()["catalog_revision"])


async def price_points(client: Client) -> int:
    return int((await client.get("/v1/catalog")).json()["price_points"])


async def test_an_import_with_a_new_date_appends_every_offer_and_counts_what_it_left_out(
    client: Client,
) -> None:
    before, points = await revision(client), await price_points(client)
    response = await post(
        client, body("runpod"), cloud="runpod", observed_at="2026-12-01T06:00:00Z"
    )
    assert response.status_code == 200, response.text
    answer = response.json()
    made = sum(answer["offers"].values())
    assert answer["provider"] == "runpod" and answer["rows"] == 2000
    assert answer["inserted"] == made > 800 and answer["already_present"] == 0
    assert answer["catalog_revision"] == before + 1 == await revision(client)
    assert answer["observed_at"] == "2026-12-01T06:00:00Z" and not answer["observed_at_reused"]
    skipped = {t["reason"]: t for t in answer["skipped"]}
    assert skipped["duplicate_row"]["count"] == 14 and skipped["duplicate_row"]["scope"] == "row"
    assert {t["reason"] for t in answer["adjusted"]} >= {"spot_swapped", "zones_merged"}
    assert await price_points(client) == points + made
    l40s = await client.get(
        "/v1/gpus/l40s/prices",
        params={"provider": "runpod", "region": "US", "since": "2026-12-01T00:00:00Z"},
    )
    by_kind = {(p["instance_type"], p["kind"]): p["usd"] for p in l40s.json()["items"]}
    assert by_kind[("1x_L40S_SECURE", "on_demand")] == 0.86  # the swapped columns, fixed
    assert by_kind[("1x_L40S_SECURE", "spot")] == 0.43


async def test_importing_the_same_file_twice_adds_nothing_the_second_time(client: Client) -> None:
    first = (await post(client, body("lambda"), cloud="lambda")).json()
    assert first["observed_at_reused"]  # the bundled file was seeded: its date is reused
    assert first["inserted"] == 0 and first["already_present"] == 306
    assert first["observed_at"] == "2025-04-01T00:00:00Z"
    edited = body("lambda").replace(b",0.75,", b",0.74,")  # gpu_1x_a10: a new file
    new = (await post(client, edited, cloud="lambda")).json()
    again = (await post(client, edited, cloud="lambda")).json()
    assert new["inserted"] == 306 and not new["observed_at_reused"]
    assert again["inserted"] == 0 and again["observed_at_reused"]
    assert again["observed_at"] == new["observed_at"]
    assert again["catalog_revision"] == new["catalog_revision"]


@pytest.mark.parametrize(("cloud", "observations"), [("lambda", 306), ("aws", 1000)])
async def test_a_seeded_v9_file_imported_again_adds_nothing(
    client: Client, cloud: str, observations: int
) -> None:
    """The newer Lambda and AWS files a fresh catalog is seeded with (migrations 0013 and 0015)
    are recognised as already imported: the date is reused and nothing is inserted."""
    points = await price_points(client)
    answer = (await post(client, body(f"v9/{cloud}"), cloud=cloud)).json()
    assert answer["observed_at_reused"] and answer["observed_at"] == "2026-06-03T00:00:00Z"
    assert answer["inserted"] == 0 and answer["already_present"] > observations
    assert await price_points(client) == points


async def test_each_import_with_a_new_observed_at_appends_history(client: Client) -> None:
    for day in ("2026-12-01", "2026-12-02"):
        response = await post(client, body("azure"), cloud="azure", observed_at=f"{day}T00:00:00Z")
        assert response.json()["inserted"] == 233
    history = await client.get(
        "/v1/gpus/a10/prices",
        params={"provider": "azure", "region": "eastus", "kind": "on_demand"},
    )
    dates = [
        p["observed_at"][:10]
        for p in history.json()["items"]
        if p["instance_type"] == "Standard_NV36ads_A10_v5"
    ]
    assert dates == ["2026-12-02", "2026-12-01", "2025-01-01"]  # the seed is the oldest


@pytest.mark.parametrize(
    ("content", "params", "field", "message"),
    [
        (b"gpu_id,provider\nh100,x\n", {"cloud": "aws"}, "header", "missing columns"),
        (body("aws"), {"cloud": "oracle"}, "cloud", "Invalid enum value 'oracle'"),
        (body("aws"), {"cloud": "aws", "format": "vast"}, "format", "Invalid enum value 'vast'"),
        (b"", {"cloud": "aws"}, "body", "empty"),
        (b"\xff\xfe\x00bad", {"cloud": "aws"}, "body", "not UTF-8"),
        (
            body("aws"),
            {"cloud": "aws", "observed_at": "2999-01-01T00:00:00Z"},
            "observed_at",
            "future",
        ),
        (body("aws"), {"cloud": "aws", "observed_at": "1700000000"}, "observed_at", "ISO 8601"),
        (
            body("aws"),
            {"cloud": "aws", "observed_at": "2026-12-01T00:00:00"},
            "observed_at",
            "zone",
        ),
        (
            # one good row, then a price that is not a number: nothing is written
            body("lambda").split(b"\n", 2)[0]
            + b"\n"
            + body("lambda").split(b"\n", 2)[1]
            + b"\ngpu_1x_a10,A10,1.0,30.0,200.0,$0.75,us-east-1,A10,\n",
            {"cloud": "lambda", "observed_at": "2026-11-05T00:00:00Z"},
            "Price",
            "line 3: Price",
        ),
    ],
)
async def test_a_bad_file_is_a_422_naming_the_problem_and_writes_nothing(
    client: Client, content: bytes, params: dict[str, str], field: str, message: str
) -> None:
    before, points = await revision(client), await price_points(client)
    response = await post(client, content, **params)
    assert response.status_code == 422, response.text
    problem = response.json()
    assert problem["field"] == field and message in problem["detail"]
    assert await revision(client) == before
    assert await price_points(client) == points


async def test_the_body_must_be_csv(client: Client) -> None:
    for media in ("application/json", "multipart/form-data; boundary=x"):
        response = await post(client, body("lambda"), {"Content-Type": media}, cloud="lambda")
        assert response.status_code == 415
        assert response.json()["field"] == "Content-Type"
    plain = await post(client, body("lambda"), {"Content-Type": "text/plain"}, cloud="lambda")
    assert plain.status_code == 200


async def test_writes_need_an_admin_key(client: Client) -> None:
    before = await revision(client)
    anonymous = await client.post("/v1/prices/import?cloud=aws", content=body("aws"), headers=CSV)
    wrong = await client.post(
        "/v1/prices/import?cloud=aws",
        content=body("aws"),
        headers={**CSV, "Authorization": f"Bearer {OTHER_KEY}"},
    )
    assert (anonymous.status_code, wrong.status_code) == (401, 403)
    assert await revision(client) == before


async def test_a_body_over_the_ingest_limit_is_413(client: Client) -> None:
    header = body("aws").split(b"\n", 1)[0] + b"\n"
    row = body("aws").split(b"\n", 2)[1] + b"\n"
    huge = header + row * (9 * 1024 * 1024 // len(row) + 1)  # the default limit is 8 MiB
    response = await post(client, huge, cloud="aws")
    assert response.status_code == 413


async def test_the_bundled_snapshot_is_plannable(client: Client) -> None:
    """Every accelerator the snapshot prices is a catalog GPU with an on-demand offer."""
    listing = (await client.get("/v1/gpus")).json()["gpus"]
    priced = {g["id"] for g in listing if g["on_demand_prices"]}
    snapshot_gpus = {"a40", "rtx-3090", "rtx-4090", "rtx-a4500", "rtx-a5000", "quadro-rtx-6000"}
    assert snapshot_gpus | {"gh200", "p100-pcie-16gb", "p4"} <= priced
