"""The ``gpuplan`` command as a user runs it (subprocesses, embedded SQLite)."""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from service.store.migrate import head_revision
from tests.support.bodies import LLAMA_8B_HF_CONFIG
from tests.support.seed import seeded_price_count

pytestmark = pytest.mark.integration

GPUPLAN = [sys.executable, "-m", "service.cli"]


def run(
    args: list[str], env: dict[str, str], check: bool = True
) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [*GPUPLAN, *args], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    if check and result.returncode != 0:
        raise AssertionError(f"gpuplan {args} failed: {result.stderr}")
    return result


def catalog_revision(env: dict[str, str]) -> int:
    """The catalog revision in the embedded database the command uses (read directly: the
    seed's revision moves on with every migration that fills a new GPU spec field)."""
    database = Path(env["GPUPLAN_DATA_DIR"]) / "gpuplan.db"
    with closing(sqlite3.connect(database)) as conn:
        row = conn.execute("SELECT revision FROM catalog_state WHERE id = 1").fetchone()
    return int(row[0])


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("GPUPLAN_")}
    clean["GPUPLAN_DATA_DIR"] = str(tmp_path / "data")
    clean["GPUPLAN_ADMIN_KEYS"] = "cli-test-admin-key-0123456789"
    return clean


def test_migrate_then_export_and_reimport_is_idempotent(
    env: dict[str, str], tmp_path: Path
) -> None:
    out = run(["migrate"], env).stdout
    assert f"is at migration {head_revision()}" in out
    seeded = catalog_revision(env)
    exported = run(["catalog", "export"], env).stdout
    lines = exported.strip().splitlines()
    assert lines[0].startswith("gpu_id,provider,region,kind,usd")
    assert len(lines) == seeded_price_count() + 1
    path = tmp_path / "all.csv"
    path.write_text(exported)
    again = run(["catalog", "import", str(path)], env).stdout
    assert f"inserted 0, already present {seeded_price_count()}; catalog revision {seeded}" in again
    assert catalog_revision(env) == seeded


def test_import_appends_new_observations_and_bumps_revision(
    env: dict[str, str], tmp_path: Path
) -> None:
    run(["migrate"], env)
    seeded = catalog_revision(env)
    path = tmp_path / "new.csv"
    path.write_text(
        "gpu_id,provider,region,kind,usd,instance_type,gpus_per_instance,observed_at,source\n"
        "H100,examplecloud,eu-1,on_demand,2.10,ex.8x,8,2026-09-01T00:00:00Z,cli test\n"
        "l4,examplecloud,eu-1,spot,0.30,ex.1x,1,2026-09-01,cli test\n"
    )
    out = run(["catalog", "import", str(path)], env).stdout
    assert f"inserted 2, already present 0; catalog revision {seeded + 1}" in out
    h100 = run(["catalog", "export", "--gpu", "h100"], env).stdout
    assert "examplecloud,eu-1,on_demand,2.1,ex.8x,8,2026-09-01T00:00:00Z" in h100


def test_import_with_one_bad_row_writes_nothing(env: dict[str, str], tmp_path: Path) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(
        "gpu_id,provider,region,kind,usd,instance_type,gpus_per_instance,observed_at,source\n"
        "l4,examplecloud,eu-1,spot,0.30,ex.1x,1,2026-09-01,ok\n"
        "nosuchgpu,examplecloud,eu-1,spot,0.30,ex.1x,1,2026-09-01,bad\n"
    )
    result = run(["catalog", "import", str(path)], env, check=False)
    assert result.returncode == 1
    assert "unknown GPU 'nosuchgpu'" in result.stderr
    assert "Traceback" not in result.stderr
    assert "examplecloud" not in run(["catalog", "export", "--gpu", "l4"], env).stdout


@pytest.mark.parametrize(
    ("cells", "named"),
    [
        (
            "l4,examplecloud,eu-1,spot,-1.5,ex.1x,1,2026-09-01,neg",
            "line 3: usd: Expected `float` > 0",
        ),
        (f"l4,examplecloud,{'r' * 65},spot,1,ex.1x,1,2026-09-01,x", "line 3: region"),
        ("l4,examplecloud,eu-1,spot,1,ex.1x,0,2026-09-01,x", "line 3: gpus_per_instance"),
        ("l4,examplecloud,eu-1,spot,1,ex.1x,1,1999-12-31,x", "line 3: observed_at"),
        ("l4,examplecloud,eu-1,spot,1,ex.1x,1,9999-12-31T23:59:59-23:59,x", "line 3: observed_at"),
        ("l4,ExampleCloud,eu-1,spot,1,ex.1x,1,2026-09-01,x", "line 3: provider"),
        ("l4,examplecloud,eu-1,spot,1,ex.1x,1,2026-09-01,x\x00y", "line 3: text must not"),
    ],
    ids=["negative", "long-region", "zero-gpus", "before-2000", "past-range", "slug", "nul"],
)
def test_import_refuses_what_the_http_endpoint_refuses_in_one_line(
    env: dict[str, str], tmp_path: Path, cells: str, named: str
) -> None:
    """The same limits as POST /v1/prices, reported as one line naming the row and column, on
    a non-zero exit: no SQL, no traceback, nothing written."""
    path = tmp_path / "bad.csv"
    path.write_text(
        "gpu_id,provider,region,kind,usd,instance_type,gpus_per_instance,observed_at,source\n"
        "l4,examplecloud,eu-1,spot,0.30,ex.1x,1,2026-09-01,ok\n" + cells + "\n"
    )
    result = run(["catalog", "import", str(path)], env, check=False)
    assert result.returncode == 1
    assert result.stderr.startswith("gpuplan: prices.csv ") and named in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert "SQL" not in result.stderr and "Traceback" not in result.stderr
    assert "examplecloud" not in run(["catalog", "export", "--gpu", "l4"], env).stdout


SKYPILOT = Path(__file__).parents[2] / "service" / "data" / "skypilot"


def test_skypilot_import_end_to_end_reports_what_it_left_out_and_is_idempotent(
    env: dict[str, str], tmp_path: Path
) -> None:
    run(["migrate"], env)
    seeded = catalog_revision(env)
    bundled = str(SKYPILOT / "aws" / "vms.csv")
    again = run(["catalog", "import", "--format", "skypilot", bundled], env).stdout
    assert "observed_at 2025-04-01T00:00:00Z (this file was imported before" in again
    assert "inserted 0, already present 987;" in again  # seeded by the migration
    dated = ["catalog", "import", "--format", "skypilot", "--observed-at", "2026-11-30", bundled]
    first = run(dated, env).stdout
    assert f"inserted 987, already present 0; catalog revision {seeded + 1}" in first
    assert "rows 1296; offers: on_demand 494, spot 493" in first
    table = first.split("skipped", 1)[1]
    for reason in ("no_spot_price", "no_on_demand_price", "no_price", "spot_equals_on_demand"):
        assert f"\n{reason} " in table, reason
    assert "zone_listed_twice" in table and "zones_merged" in table
    second = run(dated, env).stdout
    assert f"inserted 0, already present 987; catalog revision {seeded + 1}" in second
    p4de = run(["catalog", "export", "--gpu", "a100-sxm-80gb"], env).stdout
    assert "aws,us-east-1,spot,0.582862,p4de.24xlarge,8,2026-11-30T00:00:00Z" in p4de


def test_skypilot_import_from_a_url(env: dict[str, str], tmp_path: Path) -> None:
    served = tmp_path / "catalogs" / "v7" / "lambda"
    served.mkdir(parents=True)
    edited = (SKYPILOT / "lambda" / "vms.csv").read_text().replace(",0.75,", ",0.74,")
    (served / "vms.csv").write_text(edited)
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        url = f"http://127.0.0.1:{port}/catalogs/v7/lambda/vms.csv"
        deadline = time.monotonic() + 10
        while True:
            try:
                httpx.get(url, timeout=1)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        out = run(["catalog", "import", "--format", "skypilot", url], env).stdout
    finally:
        server.terminate()
        server.wait(timeout=10)
    assert "imported lambda prices from http://127.0.0.1" in out  # cloud taken from the path
    assert "inserted 306, already present 0" in out


def test_skypilot_import_refusals_are_one_line_and_write_nothing(
    env: dict[str, str], tmp_path: Path
) -> None:
    run(["migrate"], env)
    seeded = catalog_revision(env)
    loose = tmp_path / "prices.csv"
    loose.write_text((SKYPILOT / "lambda" / "vms.csv").read_text())
    nameless = run(["catalog", "import", "--format", "skypilot", str(loose)], env, check=False)
    assert nameless.returncode == 2 and "--cloud" in nameless.stderr
    header, first, *_ = loose.read_text().splitlines()
    loose.write_text(f"{header}\n{first}\ngpu_1x_a10,A10,1.0,30.0,200.0,n/a,us-east-1,A10,\n")
    bad = run(
        ["catalog", "import", "--format", "skypilot", "--cloud", "lambda", str(loose)],
        env,
        check=False,
    )
    assert bad.returncode == 1
    assert "line 3: Price: 'n/a' is not a number (Price)" in bad.stderr
    assert "Traceback" not in bad.stderr
    late = run(
        [
            "catalog",
            "import",
            "--format",
            "skypilot",
            "--cloud",
            "lambda",
            "--observed-at",
            "tomorrow",
            str(loose),
        ],
        env,
        check=False,
    )
    assert late.returncode == 2 and "--observed-at" in late.stderr
    assert catalog_revision(env) == seeded


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ('{"model": "llama-3.1-8b", "model": "x"}', "key 'model' is given twice"),
        ("[" * 1000 + "]" * 1000, "nesting deeper than 32"),
        ('{"model": "llama-3.1-8b", "workload": {"qps": NaN}}', "workload.qps: NaN"),
        ('{"model": "llama\\u0000", "workload": {"qps": 1}}', "NUL (U+0000) (model)"),
    ],
    ids=["duplicate-key", "deep", "nan", "nul"],
)
def test_a_request_file_gets_the_json_checks_of_the_http_api(
    env: dict[str, str], tmp_path: Path, text: str, named: str
) -> None:
    path = tmp_path / "body.json"
    path.write_text(text)
    result = run(["plan", "--request", str(path)], env, check=False)
    assert result.returncode == 2
    assert result.stderr.startswith("gpuplan: ") and named in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr


def test_a_bad_setting_stops_the_command_naming_the_variable(env: dict[str, str]) -> None:
    result = run(["migrate"], {**env, "GPUPLAN_DATABASE_URL": "postgres://x"}, check=False)
    assert result.returncode == 2
    assert "GPUPLAN_DATABASE_URL" in result.stderr and "asyncpg" in result.stderr


@pytest.mark.parametrize(
    "command",
    [[], ["serve"], ["migrate"], ["catalog"], ["catalog", "import"], ["catalog", "export"]],
)
def test_every_command_has_help_with_examples(env: dict[str, str], command: list[str]) -> None:
    out = run([*command, "--help"], env).stdout
    assert "Usage:" in out
    if command != ["catalog"]:
        assert "Examples:" in out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_serve_answers_and_shuts_down_gracefully_on_sigterm(env: dict[str, str]) -> None:
    port = _free_port()
    server = subprocess.Popen(
        [*GPUPLAN, "serve", "--port", str(port)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                response = httpx.get(f"http://127.0.0.1:{port}/v1/gpus/h100", timeout=1)
                break
            except httpx.TransportError:
                assert server.poll() is None, server.stderr.read() if server.stderr else ""
                assert time.monotonic() < deadline, "server did not start"
                time.sleep(0.2)
        assert response.status_code == 200
        assert response.json()["id"] == "h100-sxm"
        server.send_signal(signal.SIGTERM)
        # uvicorn finishes in-flight work, runs the lifespan shutdown, then re-raises the
        # signal so the exit status says why it stopped.
        assert server.wait(timeout=30) in (0, -signal.SIGTERM)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    logs = server.stderr.read() if server.stderr else ""
    assert '"msg":"gpuplan stopped"' in logs
    assert '"msg":"request"' in logs and '"route":"/v1/gpus/{gpu_id}"' in logs


def test_serve_logs_only_json_lines_while_solving_and_refusing(env: dict[str, str]) -> None:
    """HiGHS and Python warnings write nothing of their own: stdout is empty and every stderr
    line after the CLI's one-line banner is one JSON object, through optimal, infeasible,
    time-limited and refused requests."""
    port = _free_port()
    server_env = {**env, "GPUPLAN_SOLVE_TIME_LIMIT_S": "0.05", "GPUPLAN_LOG_FORMAT": "json"}
    server = subprocess.Popen(
        [*GPUPLAN, "serve", "--port", str(port)],
        env=server_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    plan: dict[str, Any] = {
        "model": "llama-3.1-8b",
        "workload": {"qps": 6, "prompt_tokens": 256, "output_tokens": 64},
        "slo": {"tpot_ms": 120},
    }
    mix = [
        {"share": 1 / 16, "prompt_tokens": 200 + 400 * i, "output_tokens": 50 + 40 * i}
        for i in range(16)
    ]
    hf = LLAMA_8B_HF_CONFIG
    bodies = [
        plan,
        {**plan, "slo": {"tpot_ms": 0.001}},  # infeasible
        {
            "model": "llama-3.1-70b",
            "precision": "fp8",
            "workload": {"qps": 400, "mix": mix},
            "slo": {"ttft_ms": 3000, "tpot_ms": 80},
        },  # hits the 0.05 s HiGHS time limit
        {**plan, "model": {"hf_config": hf}},
        {**plan, "budget": {"usd_per_hour": 0.01}},  # over budget
        {**plan, "workload": {**plan["workload"], "qps": 5e-324}},  # refused
    ]
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(f"{base}/healthz", timeout=1)
                break
            except httpx.TransportError:
                assert server.poll() is None, server.stderr.read() if server.stderr else ""
                assert time.monotonic() < deadline, "server did not start"
                time.sleep(0.2)
        statuses = [httpx.post(f"{base}/v1/plans", json=b, timeout=60).status_code for b in bodies]
        malformed = httpx.post(
            f"{base}/v1/plans",
            content=b'{"workload": {"qps": NaN}}',
            headers={"Content-Type": "application/json"},
            timeout=10,
        )
        assert statuses == [200, 200, 200, 200, 200, 422] and malformed.status_code == 400
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    out = server.stdout.read() if server.stdout else ""
    err = server.stderr.read() if server.stderr else ""
    assert out == ""
    banner, *lines = err.splitlines()
    assert banner.startswith("gpuplan ") and "docs at" in banner
    assert len(lines) >= len(bodies) + 2
    assert [line for line in lines if not _json_object(line)] == []


def _json_object(line: str) -> bool:
    try:
        return isinstance(json.loads(line), dict)
    except json.JSONDecodeError:
        return False


PLAN_ARGS = [
    "plan",
    "--model",
    "llama-3.1-8b",
    "--qps",
    "12",
    "--prompt-tokens",
    "512",
    "--output-tokens",
    "128",
    "--ttft-ms",
    "2000",
    "--tpot-ms",
    "60",
    "--gpus",
    "l4,l40s,h100",
]


def test_plan_runs_locally_as_a_table_json_and_flat(env: dict[str, str]) -> None:
    text = run(PLAN_ARGS, env).stdout
    assert "FLEET" in text and "ALTERNATIVES" in text and "WHY" in text
    as_json = json.loads(run([*PLAN_ARGS, "--json"], env).stdout)
    assert as_json["status"] == "optimal" and as_json["fleet"]
    flat = json.loads(run([*PLAN_ARGS, "--flat"], env).stdout)
    assert flat["plan_id"] == as_json["plan_id"] and all(isinstance(v, str) for v in flat.values())


def test_plan_from_a_request_file_matches_the_http_api(env: dict[str, str], tmp_path: Path) -> None:
    from litestar.testing import TestClient

    from service.app import create_app
    from service.settings import load_settings

    body = {
        "model": "llama-3.1-8b",
        "workload": {
            "qps": 9,
            "mix": [
                {"share": 0.5, "prompt_tokens": 300, "output_tokens": 100},
                {"share": 0.5, "prompt_tokens": 3000, "output_tokens": 200},
            ],
        },
        "slo": {"tpot_ms": 70},
        "constraints": {"gpus": ["l40s", "h100"]},
    }
    path = tmp_path / "body.json"
    path.write_text(json.dumps(body))
    local = json.loads(run(["plan", "--request", str(path), "--json"], env).stdout)
    with TestClient(create_app(load_settings(env))) as client:
        served = client.post("/v1/plans", json=body).json()
    assert local["plan_id"] == served["plan_id"]
    assert local["fleet"] == served["fleet"]


def test_plan_and_estimate_errors_are_one_line(env: dict[str, str]) -> None:
    bad = run(
        [
            "plan",
            "--model",
            "llama-9",
            "--qps",
            "1",
            "--prompt-tokens",
            "1",
            "--output-tokens",
            "1",
        ],
        env,
        check=False,
    )
    assert (
        bad.returncode == 2
        and "unknown model 'llama-9'" in bad.stderr
        and "Traceback" not in bad.stderr
    )
    negative = run(
        [
            "plan",
            "--model",
            "llama-3.1-8b",
            "--qps",
            "-1",
            "--prompt-tokens",
            "1",
            "--output-tokens",
            "1",
        ],
        env,
        check=False,
    )
    assert negative.returncode == 2 and "(--qps)" in negative.stderr
    mix = run(
        ["plan", "--model", "llama-3.1-8b", "--qps", "1", "--mix", "0.5:300"], env, check=False
    )
    assert mix.returncode == 2 and "SHARE:PROMPT_TOKENS:OUTPUT_TOKENS" in mix.stderr
    assert mix.stderr.rstrip().endswith("(--mix)")
    gpu = run([*PLAN_ARGS[:-1], "l4,h1000"], env, check=False)
    assert gpu.returncode == 2 and "unknown GPU 'h1000'" in gpu.stderr and "(--gpus)" in gpu.stderr


def test_plan_options_and_a_request_file_give_the_same_plan(
    env: dict[str, str], tmp_path: Path
) -> None:
    options = [
        "plan",
        "--model",
        "llama-3.1-8b",
        "--qps",
        "9",
        "--mix",
        "0.5:300:100",
        "--mix",
        "0.5:3000:200",
        "--tpot-ms",
        "70",
        "--budget-usd-per-month",
        "7300",
        "--gpus",
        "l40s,h100",
        "--max-cards",
        "h100=8",
        "--max-gpu-types",
        "3",
        "--min-mix-savings-percent",
        "4.5",
        "--allow-mixed-vendors",
        "--headroom",
        "0.1",
        "--json",
    ]
    mixing = {"max_gpu_types": 3, "min_mix_savings_percent": 4.5, "allow_mixed_vendors": True}
    body = {
        "model": "llama-3.1-8b",
        "workload": {
            "qps": 9,
            "mix": [
                {"share": 0.5, "prompt_tokens": 300, "output_tokens": 100},
                {"share": 0.5, "prompt_tokens": 3000, "output_tokens": 200},
            ],
        },
        "slo": {"tpot_ms": 70},
        "budget": {"usd_per_month": 7300},
        "constraints": {
            "gpus": ["l40s", "h100"],
            "max_cards": {"h100": 8},
            "headroom": 0.1,
            "mixing": mixing,
        },
    }
    path = tmp_path / "body.json"
    path.write_text(json.dumps(body))
    flat = json.loads(run(options, env).stdout)
    whole = json.loads(run(["plan", "--request", str(path), "--json"], env).stdout)
    assert flat == whole
    assert flat["request"]["constraints"]["mixing"] == mixing
    assert flat["request"]["constraints"]["headroom"] == 0.1
    assert flat["request"]["budget"] == {"usd_per_hour": 10.0}
    single = json.loads(run([*options[:-1], "--max-gpu-types", "1", "--json"], env).stdout)
    assert single["request"]["constraints"]["allow_mix"] is False
    assert single["mixing"]["rule"] == "single_type_required"


def test_plan_routing_and_spread_options_match_the_body(
    env: dict[str, str], tmp_path: Path
) -> None:
    options = ["plan", "--model", "llama-3.1-8b", "--qps", "4", "--mix", "0.7:300:100"]
    options += ["--mix", "0.3:3000:200", "--gpus", "l4,h100", "--routing", "shared"]
    options += ["--min-replicas", "2", "--min-providers", "2", "--min-regions", "2", "--json"]
    body = {
        "model": "llama-3.1-8b",
        "workload": {
            "qps": 4,
            "mix": [
                {"share": 0.7, "prompt_tokens": 300, "output_tokens": 100},
                {"share": 0.3, "prompt_tokens": 3000, "output_tokens": 200},
            ],
        },
        "constraints": {
            "gpus": ["l4", "h100"],
            "min_replicas": 2,
            "spread": {"min_providers": 2, "min_regions": 2},
        },
        "routing": "shared",
    }
    path = tmp_path / "body.json"
    path.write_text(json.dumps(body))
    flat = json.loads(run(options, env).stdout)
    assert flat == json.loads(run(["plan", "--request", str(path), "--json"], env).stdout)
    assert flat["request"]["routing"] == "shared" and flat["routing"]["mode"] == "shared"
    assert flat["request"]["constraints"]["spread"] == {"min_providers": 2, "min_regions": 2}
    assert flat["redundancy"]["without_worst_provider_percent"] >= 100


def test_estimate_runs_locally(env: dict[str, str]) -> None:
    args = [
        "estimate",
        "--model",
        "llama-2-70b",
        "--gpu",
        "a100",
        "--prompt-tokens",
        "1024",
        "--output-tokens",
        "256",
    ]
    text = run(args, env).stdout
    assert "a100-sxm-80gb x 2, bf16 weights" in text and "fits" in text
    # no --precision: the checkpoint's own format (gpt-oss publishes MXFP4 experts)
    gpt = run(["estimate", "--model", "openai/gpt-oss-120b", *args[3:]], env).stdout
    assert "a100-sxm-80gb x 1, fp4 weights" in gpt
    as_json = json.loads(run([*args, "--json"], env).stdout)
    assert as_json["tensor_parallel"] == 2 and as_json["fits"] is True
    one = json.loads(run([*args, "--tp", "1", "--json"], env).stdout)
    assert one["fits"] is False and "GB" in one["reason"]
    unknown = run([*args[:2], "llama-9", *args[3:]], env, check=False)
    assert unknown.returncode == 2 and unknown.stderr.rstrip().endswith("(--model)")
    too_long = run([*args[:-1], "9000"], env, check=False)
    assert too_long.returncode == 2 and "(--prompt-tokens)" in too_long.stderr


@pytest.mark.parametrize("limit", ["180", "off"])
def test_plan_warns_on_stderr_when_its_prices_are_older_than_the_limit_today(
    env: dict[str, str], limit: str
) -> None:
    env["GPUPLAN_PRICE_MAX_AGE_DAYS"] = limit
    result = run(
        ["plan", "--model", "llama-3.1-8b", "--qps", "5", "--prompt-tokens", "256",
         "--output-tokens", "64", "--tpot-ms", "120", "--gpus", "l4,l40s", "--json"],
        env,
    )  # fmt: skip
    plan = json.loads(result.stdout)  # stdout is the plan alone, warning or not
    oldest = datetime.fromisoformat(plan["oldest_price_observed_at"])
    days = (datetime.now(UTC).date() - oldest.date()).days
    warnings = [x for x in result.stderr.splitlines() if "WARNING" in x]
    if limit != "off" and days > int(limit):
        assert len(warnings) == 1
        assert f"up to {days} days ago" in warnings[0] or f"up to {days - 1} days" in warnings[0]
        assert "gpuplan catalog import" in warnings[0]
    else:
        assert warnings == []
