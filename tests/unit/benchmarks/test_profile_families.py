"""A calibration profile fits each accuracy family apart: MI300X measurements (predicted with
the hopper-hbm constants x 0.85) never pool with H100 ones into one Hopper correction."""

from __future__ import annotations

from service.domain.benchmarks.values import Measurement, Metric
from service.domain.llm import resolve_model
from service.domain.perfmodel import Deployment, RequestShape, estimate
from service.domain.profiles.fit import FitRow, fit_profile
from tests.unit.perfmodel.gpu_fixtures import GPUS

MODEL = "llama-3.1-8b"


def runs(gpu: str, speed: float, first_run: int) -> list[FitRow]:
    """Closed-loop runs on ``gpu`` whose decode is ``speed`` x the reference model's."""
    arch = resolve_model(MODEL).arch
    dep = Deployment(GPUS[gpu], 1, "bf16", "bf16", "vllm")
    out = []
    for k, clients in enumerate((1, 8, 32)):
        est = estimate(arch, dep, RequestShape(1000, 200), concurrency=clients)
        measured: tuple[tuple[Metric, float], ...] = (
            ("output_tokens_per_s", est.output_tokens_per_s * speed),
            ("tpot_ms", est.tpot_ms / speed),
        )
        for metric, value in measured:
            m = Measurement(
                run=first_run + k, gpu=gpu, cards=1, tensor_parallel=1, model=MODEL,
                precision="bf16", kv_precision="bf16", engine="vllm", engine_version="0.11",
                prompt_tokens=1000, output_tokens=200, load="concurrency", load_value=clients,
                metric=metric, stat="mean", value=value,
            )  # fmt: skip
            out.append(FitRow("file-a", m))
    return out


def test_mi300x_and_h100_measurements_fit_separate_corrections() -> None:
    rows = runs("h100-sxm", 1.0, 0) + runs("mi300x", 0.6, 10)
    result = fit_profile(rows, GPUS, "vllm", "team v1")
    by_family = {c.family: c for c in result.corrections}
    assert set(by_family) == {"hopper-hbm", "cdna3-hbm"}
    hopper, amd = by_family["hopper-hbm"], by_family["cdna3-hbm"]
    # the H100 runs are the reference model's own answers: nothing to correct there
    assert abs(hopper.memory - 1.0) < 0.05 and abs(hopper.overhead - 1.0) < 0.1
    # the MI300X runs decode 40% slower than predicted: their correction slows the model
    assert amd.memory < 0.85 or amd.overhead > 1.2
    assert {c.family for c in result.cells} == {"hopper-hbm", "cdna3-hbm"}
