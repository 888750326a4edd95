"""``gpuplan benchmarks import`` / ``list`` as a user runs them (subprocesses, embedded
SQLite): a file imports once, missing context names the option, nothing half-written."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.integration.test_cli import run

pytestmark = pytest.mark.integration

FIXTURES = Path(__file__).parents[1] / "fixtures" / "benchmarks"
VLLM = sorted(str(p) for p in FIXTURES.glob("vllm-*.json"))


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("GPUPLAN_")}
    clean["GPUPLAN_DATA_DIR"] = str(tmp_path / "data")
    return clean


def test_import_files_once_and_list_them(env: dict[str, str]) -> None:
    context = ["--gpu", "a100-sxm-80gb", "--tensor-parallel", "1", "--precision", "bf16",
               "--engine-version", "0.11.0", "--label", "team:search"]  # fmt: skip
    out = run(["benchmarks", "import", *VLLM, *context], env).stdout
    assert out.count(": imported as #") == 3 and "9 measurements" in out
    again = run(["benchmarks", "import", VLLM[0], *context], env).stdout
    assert "already imported as #1" in again
    listed = run(["benchmarks", "list"], env).stdout.splitlines()
    assert len(listed) == 3 and all("team:search" in line and "key cli" in line for line in listed)


def test_missing_context_names_the_option_and_stores_nothing(env: dict[str, str]) -> None:
    result = run(["benchmarks", "import", VLLM[0], "--gpu", "a100-sxm-80gb"], env, check=False)
    assert result.returncode == 1 and "(tensor_parallel)" in result.stderr
    assert run(["benchmarks", "list"], env).stdout.strip() == "no benchmark files imported"


def test_calibrate_fits_stores_versions_and_prints_the_report(env: dict[str, str]) -> None:
    context = ["--gpu", "a100-sxm-80gb", "--tensor-parallel", "1", "--precision", "bf16",
               "--engine-version", "0.11.0", "--label", "team:search"]  # fmt: skip
    run(["benchmarks", "import", *VLLM, *context], env)
    dry = run(["calibrate", "team-search", "--engine", "vllm", "--dry-run"], env).stdout
    assert dry.startswith("dry run: nothing stored") and "ampere-hbm" in dry
    out = run(["calibrate", "team-search", "--engine", "vllm", "--label", "team:search"], env)
    assert "calibration profile team-search v1 (vllm)" in out.stdout
    assert "from 3 file(s)" in out.stdout and "held out" in out.stdout
    again = run(["calibrate", "team-search", "--engine", "vllm"], env).stdout
    assert "team-search v2" in again
    none = run(["calibrate", "other", "--engine", "sglang"], env, check=False)
    assert none.returncode == 1 and "(selection)" in none.stderr


def test_estimate_and_plan_take_a_calibration_profile(env: dict[str, str]) -> None:
    context = ["--gpu", "a100-sxm-80gb", "--tensor-parallel", "1", "--precision", "bf16",
               "--engine-version", "0.11.0"]  # fmt: skip
    run(["benchmarks", "import", *VLLM, *context], env)
    run(["calibrate", "team-search", "--engine", "vllm"], env)
    shape = ["--model", "qwen3-14b", "--gpu", "a100-sxm-80gb", "--tensor-parallel", "1",
             "--prompt-tokens", "3990", "--output-tokens", "199", "--concurrency", "500",
             "--engine-version", "0.11"]  # fmt: skip
    plain = run(["estimate", *shape], env).stdout
    named = run(["estimate", *shape, "--calibration", "team-search"], env).stdout
    assert "Calibration profile team-search v1" in named and "Calibration profile" not in plain
    assert named.splitlines()[3] != plain.splitlines()[3]  # ttft / tpot / e2e moved
    plan = run(["plan", "--model", "qwen3-14b", "--qps", "2", "--prompt-tokens", "4000",
                "--output-tokens", "200", "--tpot-ms", "400", "--gpus", "a100-sxm-80gb",
                "--calibration", "team-search@v1", "--json"], env).stdout  # fmt: skip
    assert '"calibration":"team-search@v1"' in plan
    missing = run(["estimate", *shape, "--calibration", "nobody"], env, check=False)
    assert missing.returncode == 2 and "--calibration" in missing.stderr
