"""Engine builds chosen by ``engine_version`` on estimates and plans, and named in the answer
with their validation error (body, query string and CLI)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from service.domain.perfmodel.calibration import known_versions, resolve_profile
from tests.conftest import Client

pytestmark = pytest.mark.integration

ESTIMATE: dict[str, Any] = {
    "model": "llama-3.1-8b",
    "gpu": "h100",
    "prompt_tokens": 1000,
    "output_tokens": 200,
}
PLAN: dict[str, Any] = {
    "model": "llama-3.1-8b",
    "workload": {"qps": 5, "prompt_tokens": 512, "output_tokens": 128},
    "slo": {"tpot_ms": 60},
    "constraints": {"gpus": ["h100", "l40s"]},
}


def older_vllm() -> str:
    """A registered vLLM build other than the default one."""
    default = resolve_profile("vllm").version
    return next(v for v in reversed(known_versions("vllm")) if v != default)


def profile_lines(answer: dict[str, Any]) -> list[str]:
    return [a for a in answer["assumptions"] if "Performance profile" in a]


async def test_estimate_names_the_default_build_and_its_error(client: Client) -> None:
    response = await client.post("/v1/estimate", json=ESTIMATE)
    assert response.status_code == 200, response.text
    (line,) = profile_lines(response.json())
    default = resolve_profile("vllm")
    assert f"Performance profile {default.name} " in line
    # an H100 is a hopper-hbm card: the error quoted is that family's held-out error
    cells = [c for c in default.validation if c.family == "hopper-hbm"]
    assert cells and "hopper-hbm" in line
    assert all(f"{c.median_ape * 100:.0f}% ({c.n} rows)" in line for c in cells)


async def test_an_older_build_is_selected_by_body_query_and_patch_release(client: Client) -> None:
    older = older_vllm()
    default = await client.post("/v1/estimate", json=ESTIMATE)
    by_body = await client.post("/v1/estimate", json={**ESTIMATE, "engine_version": older})
    assert by_body.status_code == 200, by_body.text
    assert f"Performance profile vllm-{older} " in profile_lines(by_body.json())[0]
    assert by_body.json() != default.json()
    patch = await client.post("/v1/estimate", json={**ESTIMATE, "engine_version": f"v{older}.4"})
    assert patch.json() == by_body.json()
    by_query = await client.get("/v1/estimate", params={**ESTIMATE, "engine_version": older})
    assert by_query.status_code == 200 and by_query.json() == by_body.json()


@pytest.mark.parametrize("version", ["0.0", "99.1", "latest", "0..1"])
async def test_an_unknown_version_is_a_422_naming_the_field(client: Client, version: str) -> None:
    for response in (
        await client.post("/v1/estimate", json={**ESTIMATE, "engine_version": version}),
        await client.get("/v1/estimate", params={**ESTIMATE, "engine_version": version}),
        await client.post("/v1/plans", json={**PLAN, "engine_version": version}),
    ):
        assert response.status_code == 422, response.text
        problem = response.json()
        assert problem["field"] == "engine_version"
        if version[0].isdigit() and ".." not in version:
            # a well-formed but unknown release: the answer lists the known ones
            assert all(v in problem["detail"] for v in known_versions("vllm"))


async def test_the_plan_records_the_build_and_its_id_depends_on_it(client: Client) -> None:
    older = older_vllm()
    default = await client.post("/v1/plans", json=PLAN)
    pinned = await client.post("/v1/plans", json={**PLAN, "engine_version": older})
    assert default.status_code == 200 and pinned.status_code == 200, pinned.text
    assert default.json()["request"]["engine_version"] == resolve_profile("vllm").version
    assert pinned.json()["request"]["engine_version"] == older
    assert pinned.json()["plan_id"] != default.json()["plan_id"]
    assert any(f"vllm-{older}" in a for a in pinned.json()["assumptions"])
    # naming the default build explicitly is the same plan as leaving it out
    explicit = {**PLAN, "engine_version": resolve_profile("vllm").version}
    same = await client.post("/v1/plans", json=explicit)
    assert same.json()["plan_id"] == default.json()["plan_id"]


def test_cli_engine_version(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUPLAN_")}
    env["GPUPLAN_DATA_DIR"] = str(tmp_path)
    older = older_vllm()
    args = [
        sys.executable, "-m", "service.cli", "estimate", "--model", "llama-3.1-8b",
        "--gpu", "h100", "--prompt-tokens", "1000", "--output-tokens", "200", "--json",
    ]  # fmt: skip
    ok = subprocess.run(
        [*args, "--engine-version", older], env=env, capture_output=True, text=True, timeout=120
    )
    assert ok.returncode == 0, ok.stderr
    assert any(f"vllm-{older}" in a for a in json.loads(ok.stdout)["assumptions"])
    bad = subprocess.run(
        [*args, "--engine-version", "0.0"], env=env, capture_output=True, text=True, timeout=120
    )
    assert bad.returncode != 0 and "--engine-version" in bad.stderr
    assert all(v in bad.stderr for v in known_versions("vllm"))
