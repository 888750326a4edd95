"""Curves over HTTP: a plan's (by id) and a request's (POST body or query string) cost curves as
JSON with units and a Vega-Lite specification valid against the Vega-Lite schema, and as SVG
(parsed as XML) and PNG (signature and dimensions) pictures, light or dark, kept in the plan
cache under the plan id."""

from __future__ import annotations

import asyncio
import json
import struct
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import altair
import pytest
from jsonschema import Draft7Validator
from litestar import Litestar
from litestar.testing import TestClient

from service.app import create_app
from service.cache.memory import MemoryPlanCache
from service.settings import Settings
from service.usecases.charts import PNG_SCALE, curve_key, picture_key

BODY: dict[str, Any] = {
    "model": "llama-3.1-70b",
    "precision": "fp8",
    "workload": {
        "qps": 6,
        "mix": [
            {"share": 0.8, "prompt_tokens": 512, "output_tokens": 200},
            {"share": 0.2, "prompt_tokens": 4000, "output_tokens": 300},
        ],
    },
    "slo": {"ttft_ms": 1500, "tpot_ms": 60, "percentile": 95},
    "budget": {"usd_per_hour": 40},
    "constraints": {"gpus": ["h100-sxm", "a100-sxm-80gb", "l40s"]},
}
QUERY = "model=llama-3.1-8b&qps=5&prompt_tokens=512&output_tokens=128&tpot_ms=50&gpus=h100-sxm,l40s"
SVG = "{http://www.w3.org/2000/svg}"


@cache
def vega_lite_schema() -> Draft7Validator:
    path = Path(altair.__file__).parent / "vegalite" / "v6" / "schema" / "vega-lite-schema.json"
    return Draft7Validator(json.loads(path.read_text()))


@pytest.fixture(scope="module")
def cache_store() -> MemoryPlanCache:
    return MemoryPlanCache(max_entries=256)


@pytest.fixture(scope="module")
def client(
    tmp_path_factory: pytest.TempPathFactory, cache_store: MemoryPlanCache
) -> Iterator[TestClient[Litestar]]:
    db = tmp_path_factory.mktemp("curves") / "x.db"
    app = create_app(Settings(database_url=f"sqlite+aiosqlite:///{db}"), plan_cache=cache_store)
    with TestClient(app) as c:
        yield c


@pytest.fixture(scope="module")
def plan_id(client: TestClient[Litestar]) -> str:
    answer = client.post("/v1/plans", json=BODY)
    assert answer.status_code == 200
    pid: str = answer.json()["plan_id"]
    return pid


@pytest.mark.parametrize("curve", ["cost-vs-load", "cost-vs-slo", "per-gpu"])
def test_a_plans_curve_is_data_with_units_and_a_valid_vega_lite_spec(
    client: TestClient[Litestar], plan_id: str, curve: str
) -> None:
    answer = client.get(f"/v1/plans/{plan_id}/curves/{curve}")
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("application/json")
    body = answer.json()
    assert body["curve"] == curve and body["plan_id"] == plan_id
    errors = sorted(vega_lite_schema().iter_errors(body["vega_lite"]), key=str)
    assert not errors, errors[0].message
    spec = json.dumps(body["vega_lite"])
    assert "USD" in spec and body["title"]
    if curve == "per-gpu":
        assert {row["gpu"] for row in body["rows"]} <= set(BODY["constraints"]["gpus"])
        return
    assert body["y"]["unit"] == "USD/hour"
    assert body["x"]["unit"] == ("requests/s" if curve == "cost-vs-load" else "ms")
    assert body["series"] and all(s["points"] for s in body["series"])


def test_cost_vs_load_at_the_requested_load_is_the_plans_cost(
    client: TestClient[Litestar], plan_id: str
) -> None:
    planned = client.get(f"/v1/plans/{plan_id}").json()
    body = client.get(f"/v1/plans/{plan_id}/curves/cost-vs-load").json()
    assert body["requested_qps"] == BODY["workload"]["qps"]
    assert body["budget_usd_per_hour"] == BODY["budget"]["usd_per_hour"]
    mine = next(s for s in body["series"] if s["name"] == "plan")
    at = next(p for p in mine["points"] if p["x"] == BODY["workload"]["qps"])
    assert at["usd_per_hour"] == pytest.approx(planned["usd_per_hour"], abs=0.01)
    assert len(mine["points"]) == 40


def test_a_requests_curve_names_the_same_plan_by_body_or_query(
    client: TestClient[Litestar], plan_id: str
) -> None:
    posted = client.post("/v1/curves/per-gpu", json=BODY)
    assert posted.status_code == 200 and posted.json()["plan_id"] == plan_id
    by_query = client.get(f"/v1/curves/per-gpu?{QUERY}")
    assert by_query.status_code == 200, by_query.text
    same = client.get(f"/v1/plan?{QUERY}")
    assert by_query.json()["plan_id"] == same.json()["plan_id"]


def test_a_shared_routing_requests_curve_prices_every_line_serving_the_mix(
    client: TestClient[Litestar], plan_id: str
) -> None:
    """The same body with routing "shared" is another plan, and its cost-vs-load curve at the
    requested load is that plan's cost, never below the plan routed by shape."""
    body = {**BODY, "routing": "shared"}
    planned = client.post("/v1/plans", json=body).json()
    assert planned["request"]["routing"] == "shared" and planned["plan_id"] != plan_id
    curve = client.post("/v1/curves/cost-vs-load", json=body)
    assert curve.status_code == 200, curve.text
    assert curve.json()["plan_id"] == planned["plan_id"]
    mine = next(s for s in curve.json()["series"] if s["name"] == "plan")
    at = next(p for p in mine["points"] if p["x"] == BODY["workload"]["qps"])
    assert at["usd_per_hour"] == pytest.approx(planned["usd_per_hour"], abs=0.01)
    by_shape = client.get(f"/v1/plans/{plan_id}").json()
    assert planned["usd_per_hour"] >= by_shape["usd_per_hour"] - 1e-9
    query = client.get(f"/v1/curves/per-gpu?{QUERY}&routing=shared")
    assert query.status_code == 200, query.text
    assert (
        query.json()["plan_id"] == client.get(f"/v1/plan?{QUERY}&routing=shared").json()["plan_id"]
    )


def held(store: MemoryPlanCache, key: str) -> bool:
    return asyncio.run(store.get(key)) is not None


def _svg(body: bytes) -> ElementTree.Element:
    root = ElementTree.fromstring(body)  # noqa: S314 - our own server's answer
    assert root.tag == f"{SVG}svg"
    return root


def _texts(root: ElementTree.Element) -> str:
    return " ".join(t.text or "" for t in root.iter(f"{SVG}text"))


def _background(root: ElementTree.Element) -> str:
    rect = root.find(f"{SVG}rect")
    assert rect is not None
    return rect.get("fill", "")


@pytest.mark.parametrize("curve", ["cost-vs-load", "cost-vs-slo", "per-gpu"])
def test_a_chart_is_a_titled_svg_labelled_with_units(
    client: TestClient[Litestar], plan_id: str, curve: str
) -> None:
    answer = client.get(f"/v1/plans/{plan_id}/curves/{curve}.svg")
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("image/svg+xml")
    texts = _texts(_svg(answer.content))
    title = client.get(f"/v1/plans/{plan_id}/curves/{curve}").json()["title"]
    assert title in texts
    assert "USD" in texts
    if curve == "cost-vs-load":
        assert "(requests/s)" in texts and "(USD/hour)" in texts
    if curve == "cost-vs-slo":
        assert "(ms)" in texts


def test_light_and_dark_pictures_differ_in_background_and_are_cached_per_theme(
    client: TestClient[Litestar], plan_id: str, cache_store: MemoryPlanCache
) -> None:
    light = _svg(client.get(f"/v1/plans/{plan_id}/curves/cost-vs-load.svg").content)
    dark = _svg(client.get(f"/v1/plans/{plan_id}/curves/cost-vs-load.svg?theme=dark").content)
    assert _background(light).lower() in {"white", "#ffffff", "#fff"}
    assert _background(dark).lower() not in {"white", "#ffffff", "#fff", ""}
    for theme in ("light", "dark"):
        assert held(cache_store, picture_key(plan_id, "cost-vs-load", theme, "svg"))
    assert held(cache_store, curve_key(plan_id, "cost-vs-load"))


def test_a_png_chart_has_the_png_signature_and_twice_the_svg_size(
    client: TestClient[Litestar], plan_id: str
) -> None:
    svg = _svg(client.get(f"/v1/plans/{plan_id}/curves/per-gpu.svg").content)
    answer = client.get(f"/v1/plans/{plan_id}/curves/per-gpu.png")
    assert answer.status_code == 200 and answer.headers["content-type"] == "image/png"
    png = answer.content
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    length, kind = struct.unpack(">I4s", png[8:16])
    assert kind == b"IHDR" and length == 13
    width, height = struct.unpack(">II", png[16:24])
    assert width == round(float(svg.get("width", "0")) * PNG_SCALE)
    assert height == round(float(svg.get("height", "0")) * PNG_SCALE)


def test_bad_chart_names_plans_and_themes_are_problems_naming_the_field(
    client: TestClient[Litestar], plan_id: str
) -> None:
    unknown = client.get(f"/v1/plans/{'0' * 32}/curves/cost-vs-load")
    assert unknown.status_code == 404 and unknown.json()["field"] == "plan_id"
    bad_chart = client.get(f"/v1/plans/{plan_id}/curves/cost-vs-money")
    assert bad_chart.status_code in {400, 422} and bad_chart.json()["field"] == "chart"
    bad_theme = client.get(f"/v1/plans/{plan_id}/curves/per-gpu.svg?theme=sepia")
    assert bad_theme.status_code in {400, 422} and bad_theme.json()["field"] == "theme"
    bad_query = client.get(
        "/v1/curves/per-gpu?model=llama-3.1-8b&qps=-1&prompt_tokens=5&output_tokens=5"
    )
    assert bad_query.status_code == 422 and bad_query.json()["field"] == "qps"
    no_limit = dict(BODY, slo={"percentile": 95})
    answer = client.post("/v1/curves/cost-vs-slo", json=no_limit)
    assert answer.status_code == 422 and answer.json()["field"] == "slo.tpot_ms"
