"""A card its engine does not run on is refused for that reason alone, by plans and estimates:
TensorRT-LLM on an AMD or pre-Ampere card, SGLang before Turing, vLLM and TGI on Pascal. The
rules are the engines' documented hardware requirements (``perfmodel.engine_hardware``), and
every published measurement the model is fitted or scored on keeps to them."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from functools import cache

import pytest
from litestar import Litestar
from litestar.testing import TestClient

from bench._calibration_data import load_gpus, load_rows
from service.app import create_app
from service.domain.catalog import CatalogSnapshot, GpuSpec
from service.domain.llm import resolve_model
from service.domain.perfmodel import estimate
from service.domain.perfmodel.engine_hardware import (
    ENGINE_GENERATIONS,
    engine_hardware_reason,
    engine_precision_reason,
)
from service.domain.perfmodel.hardware import generation
from service.domain.perfmodel.values import Deployment, Precision, RequestShape
from service.domain.planner import plan
from service.settings import Settings
from service.usecases.seed_catalog import seed_snapshot
from tests.support.plan_requests import plan_request


@cache
def snapshot() -> CatalogSnapshot:
    """The catalog a fresh install serves (the imported SkyPilot offers included)."""
    return seed_snapshot()


def gpu(gpu_id: str) -> GpuSpec:
    return next(g for g in snapshot().gpus if g.id == gpu_id)


# (engine, GPU id, runs): each engine's documented floor and its vendors
RULES = [
    ("vllm", "p4", False),
    ("vllm", "p100-pcie-16gb", False),
    ("vllm", "quadro-p6000", False),
    ("vllm", "v100-sxm2-32gb", True),
    ("vllm", "t4", True),
    ("vllm", "mi300x", True),
    ("vllm", "gaudi3", True),
    ("sglang", "v100-sxm2-32gb", False),
    ("sglang", "p100-pcie-16gb", False),
    ("sglang", "gaudi3", False),
    ("sglang", "t4", True),
    ("sglang", "mi325x", True),
    ("trtllm", "mi300x", False),
    ("trtllm", "gaudi3", False),
    ("trtllm", "t4", False),
    ("trtllm", "v100-pcie-16gb", False),
    ("trtllm", "a10", True),
    ("trtllm", "l4", True),
    ("trtllm", "h100-sxm", True),
    ("trtllm", "b200", True),
    ("tgi", "v100-sxm2-32gb", False),
    ("tgi", "p4", False),
    ("tgi", "t4", True),
    ("tgi", "mi300x", True),
    ("tgi", "gaudi3", True),
]


@pytest.mark.parametrize(("engine", "gpu_id", "runs"), RULES)
def test_each_engine_runs_where_its_documentation_says(
    engine: str, gpu_id: str, runs: bool
) -> None:
    reason = engine_hardware_reason(engine, gpu(gpu_id))
    assert (reason == "") is runs
    if not runs:
        assert gpu(gpu_id).name in reason


def test_tensorrt_llm_needs_an_nvidia_card_whatever_its_architecture_is_called() -> None:
    stranger = replace(gpu("h100-sxm"), id="x", vendor="AMD", name="X1", architecture="Foo")
    assert generation(stranger) == "other"
    assert "made by AMD" in engine_hardware_reason("trtllm", stranger)
    assert engine_hardware_reason("vllm", stranger) == ""  # unknown: left to the engine


def test_every_measurement_the_model_is_fitted_or_scored_on_keeps_to_the_rules() -> None:
    gpus = load_gpus()
    rows, _ = load_rows(gpus)
    assert rows
    broken = {
        (r.engine, r.gpu_id, r.precision)
        for r in rows
        if r.engine in ENGINE_GENERATIONS
        and (
            engine_hardware_reason(r.engine, gpus[r.gpu_id])
            or engine_precision_reason(r.engine, gpus[r.gpu_id], r.precision)
        )
    }
    assert broken == set()


@pytest.mark.parametrize("engine", ["trtllm", "sglang"])
def test_a_plan_refuses_the_cards_its_engine_does_not_run_on(engine: str) -> None:
    request = replace(
        plan_request(gpus=("mi300x", "v100-sxm2-32gb", "p100-pcie-16gb", "l4"), qps=0.5),
        engine=engine,  # type: ignore[arg-type]
    )
    result = plan(request, snapshot())
    codes = {r.gpu: r.code for r in result.rejected}
    refused = {"v100-sxm2-32gb", "p100-pcie-16gb"} | ({"mi300x"} if engine == "trtllm" else set())
    assert {g for g, c in codes.items() if c == "unsupported_engine"} == refused
    for r in result.rejected:
        if r.code == "unsupported_engine":
            assert "tensor_parallel" not in r.reason and r.best_ttft_ms is None
    assert result.fleet is not None
    assert {line.gpu for line in result.fleet.lines} <= {"l4", "mi300x"} - refused
    assert all(a.gpu not in refused for a in result.alternatives)


def test_vllm_on_pascal_is_refused_where_it_was_planned_before() -> None:
    """A loose SLO on cheap Pascal cards: vLLM does not run there, so no fleet comes back."""
    request = plan_request(gpus=("p4", "p100-pcie-16gb"), qps=0.5)
    result = plan(request, snapshot())
    assert result.fleet is None and result.alternatives == ()
    assert {r.code for r in result.rejected} == {"unsupported_engine"}


def test_an_estimate_says_the_engine_does_not_run_on_the_card() -> None:
    dep = Deployment(
        gpu=gpu("mi300x"), tensor_parallel=1, precision="bf16", kv_precision="bf16", engine="trtllm"
    )
    out = estimate(resolve_model("llama-3.1-8b").arch, dep, RequestShape(512, 128))
    assert not out.fits
    assert out.reason is not None and "TensorRT-LLM runs on NVIDIA" in out.reason


@pytest.mark.parametrize(
    ("gpu_id", "precision", "runs"),
    [
        ("a100-sxm-80gb", "fp8", False),
        ("a100-sxm-80gb", "fp4", False),
        ("l40s", "fp8", True),
        ("l40s", "fp4", False),
        ("h100-sxm", "fp8", True),
        ("h100-sxm", "fp4", True),
        ("b200", "fp4", True),
        ("a100-sxm-80gb", "int4", True),
    ],
)
def test_tensorrt_llm_runs_fp8_from_ada_and_fp4_from_hopper(
    gpu_id: str, precision: Precision, runs: bool
) -> None:
    reason = engine_precision_reason("trtllm", gpu(gpu_id), precision)
    assert (reason == "") is runs
    assert engine_precision_reason("vllm", gpu(gpu_id), precision) == ""  # Marlin on Ampere


def test_a_tensorrt_llm_plan_in_fp8_refuses_ampere_for_its_format() -> None:
    request = replace(
        plan_request(gpus=("a100-sxm-80gb", "h100-sxm"), precision="fp8", qps=0.5),
        engine="trtllm",
    )
    result = plan(request, snapshot())
    a100 = [r for r in result.rejected if r.gpu == "a100-sxm-80gb"]
    assert [r.code for r in a100] == ["unsupported_format"]
    assert "TensorRT-LLM runs fp8 weights on Ada, Hopper and Blackwell GPUs only" in a100[0].reason
    assert result.fleet is not None and {x.gpu for x in result.fleet.lines} == {"h100-sxm"}


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient[Litestar]]:
    db = tmp_path_factory.mktemp("engine") / "x.db"
    with TestClient(create_app(Settings(database_url=f"sqlite+aiosqlite:///{db}"))) as c:
        yield c


def test_the_estimate_endpoint_says_no_degree_helps(client: TestClient[Litestar]) -> None:
    answer = client.get(
        "/v1/estimate?model=llama-3.1-8b&gpu=mi300x&engine=trtllm"
        "&prompt_tokens=512&output_tokens=128"
    )
    assert answer.status_code == 200
    body = answer.json()
    assert body["fits"] is False and "TensorRT-LLM runs on NVIDIA" in body["reason"]
    assert body["tensor_parallel"] == 1
    assert any("No tensor-parallel degree helps on mi300x" in a for a in body["assumptions"])
