"""The OpenAPI contract: committed files match the app, operations are documented, examples are
valid against their schemas, limits and units reach the schema."""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from litestar.testing import TestClient
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from service.api.schemas.plan_request import MIN_QPS
from service.app import create_app
from service.openapi_export import openapi_document, render
from service.settings import Settings

OPENAPI_DIR = Path(__file__).parents[2] / "openapi"
BASE = "urn:gpuplan-openapi"


@cache
def document() -> dict[str, Any]:
    return openapi_document()


def operations() -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, item in document()["paths"].items():
        for method, op in item.items():
            yield path, method, op


def test_committed_files_match_what_the_app_generates() -> None:
    as_json, as_yaml = render(document())
    assert (OPENAPI_DIR / "openapi.json").read_text() == as_json, "run `make openapi`"
    assert (OPENAPI_DIR / "openapi.yaml").read_text() == as_yaml, "run `make openapi`"


def test_the_app_serves_the_same_document_and_interactive_docs(tmp_path: Path) -> None:
    app = create_app(Settings(database_url=f"sqlite+aiosqlite:///{tmp_path / 'x.db'}"))
    with TestClient(app) as client:
        served = client.get("/docs/openapi.json")
        assert served.status_code == 200
        assert served.json() == json.loads(render(document())[0])
        ui = client.get("/docs")
        assert ui.status_code == 200 and "<html" in ui.text.lower()
        assert client.get("/docs/swagger").status_code == 200


def test_every_operation_has_a_stable_id_summary_and_problem_responses() -> None:
    ids = [op["operationId"] for _, _, op in operations()]
    assert len(ids) == len(set(ids))
    for path, method, op in operations():
        assert op.get("summary"), (method, path)
        for status, response in op["responses"].items():
            code = int(status)
            if code >= 400 and not (path == "/readyz" and code == 503):
                media = response["content"]
                assert list(media) == ["application/problem+json"], (method, path, status)
                assert media["application/problem+json"]["schema"] == {
                    "$ref": "#/components/schemas/Problem"
                }
        if path.startswith("/v1/") and path != "/v1/models":
            assert "422" in op["responses"] or "503" in op["responses"], (method, path)


def test_write_operations_document_auth_and_rate_limits() -> None:
    for path, method, op in operations():
        if method in {"put", "post"} and path in {"/v1/prices", "/v1/gpus/{gpu_id}"}:
            assert {"401", "403", "413", "429"} <= set(op["responses"]), path
            assert op.get("security") == [{"bearerAuth": []}]


@cache
def registry() -> Registry[Any]:
    resource = Resource.from_contents(document(), default_specification=DRAFT202012)
    return Registry().with_resources([(BASE, resource)])


def validator(schema: dict[str, Any]) -> Draft202012Validator:
    def rebase(node: Any) -> Any:
        if isinstance(node, dict):
            return {
                k: (
                    BASE + v
                    if k == "$ref" and isinstance(v, str) and v.startswith("#")
                    else rebase(v)
                )
                for k, v in node.items()
            }
        if isinstance(node, list):
            return [rebase(x) for x in node]
        return node

    return Draft202012Validator(rebase(schema), registry=registry())


def examples() -> Iterator[tuple[str, dict[str, Any], Any]]:
    for path, method, op in operations():
        where = f"{method.upper()} {path}"
        bodies = [("request", op.get("requestBody", {}).get("content", {}))]
        bodies += [(status, r.get("content") or {}) for status, r in op["responses"].items()]
        for label, content in bodies:
            for media in content.values():
                schema = media.get("schema", {})
                for name, ex in (media.get("examples") or {}).items():
                    yield f"{where} {label} {name}", schema, ex["value"]
                for i, value in enumerate(schema.get("examples") or []):
                    yield f"{where} {label} schema-example {i}", schema, value


def test_there_are_examples_for_every_json_operation() -> None:
    found = " | ".join(label for label, _, _ in examples())
    for path, method, _ in operations():
        if path in {"/metrics", "/healthz"}:
            continue
        assert f"{method.upper()} {path} " in found, (method, path)


@pytest.mark.parametrize(
    ("label", "schema", "value"), list(examples()), ids=lambda x: x if isinstance(x, str) else ""
)
def test_examples_are_valid_against_their_schema(
    label: str, schema: dict[str, Any], value: Any
) -> None:
    errors = sorted(validator(schema).iter_errors(value), key=lambda e: list(e.path))
    assert not errors, f"{label}: " + "; ".join(f"{list(e.path)}: {e.message}" for e in errors[:5])


def test_the_gpu_examples_are_what_a_freshly_seeded_service_answers(tmp_path: Path) -> None:
    """The GPU examples are built from the bundled catalog, so a new ``GpuSpec`` field and a
    new value in ``gpus.csv`` reach them without editing an example."""
    shown = {label: value for label, _, value in examples()}
    app = create_app(Settings(database_url=f"sqlite+aiosqlite:///{tmp_path / 'x.db'}"))
    with TestClient(app) as client:
        one = client.get("/v1/gpus/h100-sxm").json()
        listed = {gpu["id"]: gpu for gpu in client.get("/v1/gpus").json()["gpus"]}
    assert shown["GET /v1/gpus/{gpu_id} 200 gpuout-example-1"] == one
    assert shown["GET /v1/gpus 200 gpulistout-example-1"]["gpus"] == [
        listed["mi300x"],
        listed["mi325x"],
    ]
    for status in ("200", "201"):
        assert shown[f"PUT /v1/gpus/{{gpu_id}} {status} gpuwriteout-example-1"]["gpu"] == one


def test_an_invalid_example_would_be_caught() -> None:
    schema = {"$ref": "#/components/schemas/PlanRequestIn"}
    assert list(validator(schema).iter_errors({"model": "x", "workload": {"qps": -1}}))
    assert list(validator(schema).iter_errors({"model": "x", "workload": {"qps": 1}, "colour": 1}))


def test_limits_and_units_reach_the_schema() -> None:
    schemas = document()["components"]["schemas"]
    qps = schemas["WorkloadIn"]["properties"]["qps"]
    assert qps["minimum"] == MIN_QPS and qps["maximum"] == 1_000_000
    assert "per second" in qps["description"]
    mix = schemas["WorkloadIn"]["properties"]["mix"]
    assert any(v.get("maxItems") == 16 for v in mix.get("anyOf", [mix]))
    assert schemas["PlanRequestIn"]["additionalProperties"] is False
    assert "GB/s" in schemas["GpuSpecIn"]["properties"]["memory_bandwidth_gbps"]["description"]
    batch = schemas["PriceBatchIn"]["properties"]["observations"]
    assert batch["maxItems"] == 10_000
    assert "USD" in schemas["FleetLineOut"]["properties"]["usd_per_hour"]["description"]
