"""``POST /v1/benchmarks`` end to end on embedded SQLite and on real Postgres + Redis: the
tools' result files (tests/fixtures/benchmarks/) import with their provenance, once; an
incomplete file or missing context is a 422 naming it, and nothing is stored."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ADMIN_KEY, Client, admin

pytestmark = pytest.mark.integration

FIXTURES = Path(__file__).parents[1] / "fixtures" / "benchmarks"
VLLM = FIXTURES / "vllm-a100-qwen3-14b-in2000-out100.json"
A100 = {"gpu": "a100-sxm-80gb", "tensor_parallel": "1", "engine_version": "0.11.0",
        "precision": "bf16"}  # fmt: skip
H100 = {"gpu": "H100 SXM", "tensor_parallel": "1", "engine_version": "0.11.0",
        "precision": "bf16", "engine": "vllm"}  # fmt: skip
TRTLLM = {**H100, "engine": "trtllm", "engine_version": "1.0"}
SGLANG = {**H100, "engine": "sglang", "engine_version": "0.5.4", "model": "llama-3.1-8b"}


async def post(client: Client, body: bytes, media: str = "application/json", **params: str) -> Any:
    return await client.post(
        "/v1/benchmarks",
        params=params,
        content=body,
        headers={**admin(), "Content-Type": media},
    )


async def stored(client: Client) -> int:
    response = await client.get("/v1/benchmarks")
    assert response.status_code == 200, response.text
    return int(response.json()["count"])


async def test_a_vllm_result_imports_once_with_its_provenance(client: Client) -> None:
    body = VLLM.read_bytes()
    response = await post(
        client, body, labels="team:search,cluster:eu-1", filename=VLLM.name, **A100
    )
    assert response.status_code == 201, response.text
    answer = response.json()
    assert answer["format"] == "vllm" and answer["runs"] == 1 and answer["measurements"] == 9
    assert answer["labels"] == ["team:search", "cluster:eu-1"]
    assert answer["filename"] == VLLM.name and not answer["already_imported"]
    assert answer["content_sha256"] == hashlib.sha256(body).hexdigest()
    assert answer["key_id"] == hashlib.sha256(ADMIN_KEY.encode()).hexdigest()[:12]
    assert answer["context"] == {**A100, "tensor_parallel": 1}
    again = await post(client, body, **A100)
    assert again.status_code == 200 and again.json()["already_imported"]
    assert again.json()["id"] == answer["id"] and await stored(client) == 1


@pytest.mark.parametrize(
    ("name", "params", "media"),
    [
        ("guidellm-report.json", H100, "application/json"),
        ("genai-perf-profile_export_genai_perf.json", TRTLLM, "application/json"),
        ("sglang-bench_serving.jsonl", SGLANG, "application/x-ndjson"),
    ],
)  # fmt: skip
async def test_guidellm_genai_perf_and_sglang_files_import(
    client: Client, name: str, params: dict[str, str], media: str
) -> None:
    response = await post(client, (FIXTURES / name).read_bytes(), media, **params)
    assert response.status_code == 201, response.text
    assert response.json()["measurements"] > 5


@pytest.mark.parametrize(
    ("params", "mutate", "field"),
    [
        ({k: v for k, v in A100.items() if k != "gpu"}, None, "gpu"),
        ({k: v for k, v in A100.items() if k != "precision"}, None, "precision"),
        ({k: v for k, v in A100.items() if k != "engine_version"}, None, "engine_version"),
        ({**A100, "gpu": "no-such-card"}, None, "gpu"),
        (A100, lambda d: d.pop("total_input_tokens"), "total_input_tokens"),
        (A100, lambda d: d.update(completed=0), "completed"),
    ],
)
async def test_a_bad_file_or_missing_context_is_named_and_nothing_is_stored(
    client: Client, params: dict[str, str], mutate: Any, field: str
) -> None:
    doc = json.loads(VLLM.read_text())
    if mutate:
        mutate(doc)
    response = await post(client, json.dumps(doc).encode(), **params)
    assert response.status_code == 422, response.text
    assert response.json()["field"] == field
    assert await stored(client) == 0


async def test_not_json_and_not_a_file_type_are_refused(client: Client) -> None:
    response = await post(client, b"{not json", **A100, format="vllm")
    assert response.status_code == 422 and response.json()["field"] == "body"
    response = await post(client, VLLM.read_bytes(), "image/png", **A100)
    assert response.status_code == 415
    response = await client.post("/v1/benchmarks", content=VLLM.read_bytes(), params=A100)
    assert response.status_code == 401
    assert await stored(client) == 0
